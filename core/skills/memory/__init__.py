"""The memory skills every agent has: the five of seed 003 (update_status, log_activity, save_fact, get_fact, recall_memory) plus store_memory and forget_memory."""
