"""Torture campaigns: randomized SIGKILLs, full disks, read-only and damaged files, faulty summarizers,
fork."""
