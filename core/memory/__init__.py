"""The memory tiers of an agent: hot NOW.md, warm LOG.md, cold LanceDB and facts."""
