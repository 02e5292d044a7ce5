"""Who is ahead, from paired windows and the A/A spread (issue 44): pure functions.

Every contender of a scenario sees the same trace windows (or seeds), so a comparison is paired:
per window, Ballast's figure minus the peer's. Two runs of Ballast's default on two pools (the
A/A pair) measure what differs by chance alone; their per-window difference, made absolute and
averaged, is the spread. For a figure where lower is better, Ballast is

- "ahead" when its mean is lower by more than the spread and it is lower in at least
  AHEAD_SHARE of the windows (5 of 6);
- "behind" when the same holds the other way;
- "tie" otherwise: a difference smaller than the spread is not a difference, a mean won by one
  window is not a lead, and fewer than MIN_WINDOWS windows decide nothing.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

AHEAD, TIE, BEHIND = "ahead", "tie", "behind"
AHEAD_SHARE = 5 / 6
# Fewer windows than this decide nothing (a --quick run's one seed): the A/A spread of one or
# two windows is no measure of chance.
MIN_WINDOWS = 5


def summary(values: Sequence[float]) -> dict[str, float]:
    """Mean, median and worst (the highest: every figure here is lower-is-better)."""
    if not values:
        raise ValueError("no windows to summarise")
    return {
        "mean": round(statistics.fmean(values), 2),
        "median": round(statistics.median(values), 2),
        "worst": round(max(values), 2),
    }


def paired(ours: Sequence[float], theirs: Sequence[float]) -> list[float]:
    """Per window, ours minus theirs (negative: ours lower)."""
    if len(ours) != len(theirs):
        raise ValueError(f"unpaired: {len(ours)} windows against {len(theirs)}")
    return [round(a - b, 3) for a, b in zip(ours, theirs, strict=True)]


def aa_spread(first: Sequence[float], second: Sequence[float]) -> float:
    """The mean absolute per-window difference between two runs of the same contender."""
    diffs = paired(first, second)
    if not diffs:
        raise ValueError("no windows for the A/A spread")
    return round(statistics.fmean(abs(d) for d in diffs), 3)


def verdict(ours: Sequence[float], theirs: Sequence[float], spread: float) -> str:
    """AHEAD, TIE or BEHIND for Ballast (`ours`) against a peer, lower being better."""
    diffs = paired(ours, theirs)
    if not diffs:
        raise ValueError("no windows to compare")
    if len(diffs) < MIN_WINDOWS:
        return TIE
    need = math.ceil(AHEAD_SHARE * len(diffs) - 1e-9)
    mean = statistics.fmean(diffs)
    if mean < -spread and sum(d < 0 for d in diffs) >= need:
        return AHEAD
    if mean > spread and sum(d > 0 for d in diffs) >= need:
        return BEHIND
    return TIE


def comparison(ours: Sequence[float], theirs: Sequence[float], spread: float) -> dict[str, object]:
    """What a table prints for one peer: both summaries, the paired differences, the spread
    and the verdict."""
    return {
        "ours": summary(ours),
        "theirs": summary(theirs),
        "paired": paired(ours, theirs),
        "aa_spread": spread,
        "verdict": verdict(ours, theirs, spread),
    }


def windows(runs: list[dict], scenario: str, measure: str, contender: str) -> list[float]:
    """One figure per window (seed) of `scenario`, in seed order; a missing one raises."""
    picked = sorted((r for r in runs if r["scenario"] == scenario), key=lambda r: r["seed"])
    try:
        return [float(r["contenders"][contender][measure]) for r in picked]
    except KeyError as exc:
        raise ValueError(f"{scenario}: no {measure} of {contender} in every window") from exc


def scenario_verdicts(
    runs: list[dict], scenario: str, measure: str, ours: str, twin: str
) -> dict[str, object]:
    """`ours` against every other contender of the scenario (its A/A `twin` aside), with the
    spread between `ours` and `twin` beside each comparison."""
    contenders = list(dict.fromkeys(c for r in runs if r["scenario"] == scenario
                                    for c in r["contenders"]))  # fmt: skip
    mine = windows(runs, scenario, measure, ours)
    spread = aa_spread(mine, windows(runs, scenario, measure, twin))
    return {
        "measure": measure,
        "ours": ours,
        "twin": twin,
        "aa_spread": spread,
        "peers": {
            c: comparison(mine, windows(runs, scenario, measure, c), spread)
            for c in contenders
            if c not in (ours, twin)
        },
    }


def verdict_table(verdicts: dict[str, object]) -> str:
    """Markdown: per peer the mean, median and worst of both, the per-window differences, the
    A/A spread and the verdict."""
    ours = verdicts["ours"]
    spread = verdicts["aa_spread"]
    rows = [
        f"| {verdicts['measure']}: {ours} against | theirs mean / median / worst | "
        f"ours mean / median / worst | ours - theirs per window | A/A spread | verdict |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for peer, c in verdicts["peers"].items():  # type: ignore[union-attr]
        t, o = c["theirs"], c["ours"]
        diffs = ", ".join(f"{d:+g}" for d in c["paired"])
        rows.append(
            f"| {peer} | {t['mean']:g} / {t['median']:g} / {t['worst']:g} | "
            f"{o['mean']:g} / {o['median']:g} / {o['worst']:g} | {diffs} | {spread:g} | "
            f"{c['verdict']} |"
        )
    return "\n".join(rows) + "\n"


def all_verdicts(
    runs: list[dict], measures: dict[str, tuple[str, ...]], ours: str, twin: str
) -> dict[str, dict[str, object]]:
    """scenario -> measure -> scenario_verdicts, for each scenario where `ours` and its A/A
    `twin` both ran (`measures`: scenario -> what to compare; "*" for any other scenario)."""
    out: dict[str, dict[str, object]] = {}
    for scenario in dict.fromkeys(r["scenario"] for r in runs):
        ran = {c for r in runs if r["scenario"] == scenario for c in r["contenders"]}
        if {ours, twin} <= ran:
            out[scenario] = {
                m: scenario_verdicts(runs, scenario, m, ours, twin)
                for m in measures.get(scenario, measures["*"])
            }
    return out


def print_verdicts(verdicts: dict[str, dict[str, object]], say=print) -> None:  # noqa: ANN001
    for scenario, per_measure in verdicts.items():
        for v in per_measure.values():
            say(f"\n{scenario}\n{verdict_table(v)}")  # type: ignore[arg-type]
