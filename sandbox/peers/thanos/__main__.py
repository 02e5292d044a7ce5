"""`python -m sandbox.peers.thanos`: build the pinned Thanos into the binary cache."""

from sandbox.peers.thanos import ensure_built

ensure_built()
