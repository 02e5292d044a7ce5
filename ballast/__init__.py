"""The `ballast` command: one entry point for every component."""
