"""Code both the watcher and the scheduler need: wire models, config, logging, quantities."""
