"""Synthetic load: the closed-loop simulator, its exporters (node, GPU), trace reading and
playing, and the NodeMetric writer Koordinator reads."""
