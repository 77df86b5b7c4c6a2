"""The tools the engine offers a model: the memory skills, the provider's memory tool, and the workspace
files."""
