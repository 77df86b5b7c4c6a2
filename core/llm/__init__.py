"""LLM backends: the engine talks to a model only through :class:`core.llm.backend.Backend`."""
