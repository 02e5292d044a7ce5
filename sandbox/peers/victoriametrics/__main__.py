"""`python -m sandbox.peers.victoriametrics`: build the pinned VictoriaMetrics into the cache."""

from sandbox.peers.victoriametrics import ensure_built

ensure_built()
