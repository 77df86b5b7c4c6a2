"""Skills: functions a model may call, each a module with ``SKILL_METADATA`` and ``execute()``."""
