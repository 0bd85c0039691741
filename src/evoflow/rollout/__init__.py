"""Playing environments: the ReAct format, expert demonstrations and rollouts."""
