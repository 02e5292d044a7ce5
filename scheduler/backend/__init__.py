"""Cluster state kept in memory: the watch-fed cache, the queue, recently bound pods,
nominations and the watcher's load snapshot."""
