"""Synthetic tasks: SWE-smith-style bug injection, combined bugs, task splits and commit data."""
