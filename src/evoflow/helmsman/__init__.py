"""Helmsman: agents that plan, write, simulate, diagnose and repair Flower code (seed 002)."""
