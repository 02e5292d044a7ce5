"""Adaptive staleness: how long a node's sample stays useful depends on how fast it moves.

horizon h = clamp(tolerance / volatility, h_min, h_max); a sample of age a is
fresh when a <= h, stale when h < a <= expiry, expired beyond.
"""

from __future__ import annotations

import numpy as np

FRESH, STALE, EXPIRED = "fresh", "stale", "expired"
ORDER = {FRESH: 0, STALE: 1, EXPIRED: 2}


def horizon(volatility: np.ndarray, tolerance: float, low: float, high: float) -> np.ndarray:
    """Seconds a sample stays fresh, per node: a still node keeps it up to `high`."""
    with np.errstate(divide="ignore"):
        h = np.where(volatility > 0, tolerance / np.maximum(volatility, 1e-12), high)
    return np.clip(h, low, high)


def state(age: float, horizon_s: float, expiry: float) -> str:
    if age <= horizon_s:
        return FRESH
    if age <= expiry:
        return STALE
    return EXPIRED


def worst(states: list[str]) -> str:
    return max(states, key=ORDER.__getitem__) if states else EXPIRED
