"""`python -m sandbox.peers.loadwatcher`: build the pinned paypal/load-watcher into the cache."""

from sandbox.peers.loadwatcher import ensure_built

ensure_built()
