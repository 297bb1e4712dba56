"""Many files: scheduling, worker processes, the project's cross-module re-analysis, the cache, progress."""
