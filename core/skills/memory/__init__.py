"""The memory skills every agent has (seed 003): update_status, log_activity, save_fact, get_fact, recall_memory."""
