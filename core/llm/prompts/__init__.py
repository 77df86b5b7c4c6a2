"""Prompts of the model backends, as Markdown files read with importlib.resources."""
