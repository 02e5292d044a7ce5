"""`python -m sandbox.victoriametrics`: build the pinned VictoriaMetrics into the binary cache."""

from sandbox.victoriametrics import ensure_built

ensure_built()
