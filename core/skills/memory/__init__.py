"""The memory skills every agent has: the five of seed 003 (update_status, log_activity, save_fact, get_fact,
recall_memory) plus store_memory, forget_memory and publish_memory (to a shared memory space)."""
