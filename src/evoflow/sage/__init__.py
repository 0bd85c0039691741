"""SAGE: Challenger, Planner, Solver and Critic on one model (seed 001)."""
