"""Ballast load-watcher: providers, window store, adaptive staleness, REST API."""
