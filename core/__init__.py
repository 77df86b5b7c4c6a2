"""AgentOS: agents whose whole state lives in files."""
