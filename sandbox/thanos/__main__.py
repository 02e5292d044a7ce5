"""`python -m sandbox.thanos`: build the pinned Thanos into the binary cache."""

from sandbox.thanos import ensure_built

ensure_built()
