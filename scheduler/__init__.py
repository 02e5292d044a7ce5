"""Ballast scheduler: cluster cache, queue, framework, plugins, binder."""
