"""One module a skill; each defines ``SKILL_METADATA`` and ``execute(agent_name=..., ...)``."""
