"""Rollouts: many attempts of a policy on tasks, on a local pool or Ray, stored so none is lost."""
