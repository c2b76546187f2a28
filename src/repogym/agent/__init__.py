"""Agents: the Policy seam and its backends, prompts, tool-call parsing, the agent loop and trajectories."""
