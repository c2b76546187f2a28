"""Bridges to other RL trainers (verl, OpenRLHF, SkyRL): their data format, their reward signature, their classes.

repogym grows no scheduler or trainer of its own: a bridge turns tasks into the trainer's dataset and
grades the trainer's completions in repogym's sandbox. Each bridge imports its trainer only inside the
functions (or on first use of the classes) that need it, so the reward functions import without it.
"""
