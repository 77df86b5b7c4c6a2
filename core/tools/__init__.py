"""Engine tools that are not memory skills: the workspace file tools."""
