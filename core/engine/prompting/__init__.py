"""What the engine puts in a prompt: the budgets sized from the window, the system prompt, and the
messages."""
