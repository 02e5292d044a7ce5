"""`python -m sandbox.loadwatcher`: build the pinned paypal/load-watcher into the binary cache."""

from sandbox.loadwatcher import ensure_built

ensure_built()
