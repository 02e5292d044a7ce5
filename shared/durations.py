"""Seconds given on a command line or in settings that cannot work, refused at start.

A NaN passes every `<= 0` and `< 0` check, then polls in a busy loop (a wait of NaN returns at
once) or never ends anything (every comparison with it is false); an infinite wait raises in the
thread that waits, long after start. Each component's command checks its seconds here, so that
the scheduler, the rebalancer and the watcher refuse the same values with the same words.
"""

from __future__ import annotations

import math


def refusal(name: str, value: float, zero: bool = False, unit: str = "seconds") -> str:
    """Why `value` cannot be `name`'s ("" when it can): it must be finite and over 0, or 0 too
    when `zero` (a default or an off)."""
    if math.isfinite(value) and (value > 0 or (zero and value == 0)):
        return ""
    return f"{name}: {unit} {'>=' if zero else '>'} 0, not {value:g}"


def refusals(*checks: tuple[str, float, bool]) -> str:
    """Why each of `checks` (name, seconds, whether 0 works) that cannot work cannot, joined by
    "; " ("" when every one can)."""
    return "; ".join(r for r in (refusal(*check) for check in checks) if r)
