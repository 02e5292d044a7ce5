"""The README's headline, written from the results (issue 44 item 7): `make bench-headline`.

One table per benchmark (placement, rebalancing), one column per scenario with the figure that
heads it (`MEASURES`), one row per contender. Every cell is the mean over the scenario's windows
(seeds; on the trace, one window a day) and, in brackets, the worst window; a peer's cell ends
with the word bench/harness/verdict.py gives Ballast's default against it (ahead, tie or behind:
lower by more than the A/A spread on the mean and in 5 of 6 windows, docs/benchmarks.md), and
the A/A spread has a row of its own, beside every comparison. Pods a contender left pending are
added where there were any ("; 4 pending", their mean). The words are worked out again from the
runs with the rule as it is now, so the README cannot say "ahead" where the rule says "tie".

A result without an A/A pair (written before issue 44's run) has no headline: the command says
so and writes nothing. `tests/unit/test_readme_numbers.py` parses the README's block back and
checks every number and word against the results.

    python -m bench.harness.headline                  # print the blocks
    python -m bench.harness.headline --write README.md  # replace them between their markers
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.harness import verdict

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "bench/results"
# Per benchmark: the result files it reads and, per scenario, the figure heading its column
# ("*": every other scenario). Lower is better for each.
FILES = {
    "placement": ("placement.json", "placement-trace.json"),
    "rebalance": ("rebalance.json", "rebalance-trace.json"),
}
MEASURES = {
    "placement": {"trace": "node_seconds_over_100", "*": "max_cpu"},
    "rebalance": {"stable": "evictions", "*": "node_seconds_over_100"},
}
UNITS = {
    "max_cpu": "hottest node, % CPU",
    "node_seconds_over_100": "node-s over 100 %",
    "evictions": "evictions",
}
PENDING = "pending"
BEGIN, END = "<!-- headline:{} begin", "<!-- headline:{} end -->"
CELL = re.compile(
    r"^(?P<mean>-?\d+(?:\.\d+)?)(?: \((?P<worst>-?\d+(?:\.\d+)?)\))?"
    r"(?:, (?P<word>ahead|tie|behind))?(?:; (?P<pending>\d+(?:\.\d+)?) pending)?$"
)


class NoHeadline(ValueError):
    """The results cannot say who is ahead (no A/A pair, or no runs)."""


@dataclass(frozen=True)
class Cell:
    mean: float  # the spread, in the spread's row
    worst: float | None  # None in the spread's row
    word: str | None  # None in the rows of Ballast's default and the spread
    pending: float = 0.0

    def text(self) -> str:
        out = f"{self.mean:g}" if self.worst is None else f"{self.mean:g} ({self.worst:g})"
        if self.word:
            out += f", {self.word}"
        if self.pending:
            out += f"; {self.pending:g} pending"
        return out


def load(family: str, results: Path = RESULTS) -> dict[str, Any]:
    """The runs of a benchmark's result files that hold verdicts (an A/A pair), joined, and
    that pair. A file without them (written before issue 44's run, or absent) adds nothing: a
    full rebalancing run now writes its trace into rebalance.json, beside an older
    rebalance-trace.json. NoHeadline when no file holds verdicts; ValueError when two give
    the same scenario or different pairs."""
    runs: list[dict[str, Any]] = []
    pairs: set[tuple[str, str]] = set()
    skipped = []
    for name in FILES[family]:
        path = results / name
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            skipped.append(f"{path}: {exc}")
            continue
        verdicts = doc.get("verdicts")
        if not verdicts:
            skipped.append(f"{path} holds no verdicts (no A/A pair: before issue 44's run)")
            continue
        first = next(iter(next(iter(verdicts.values())).values()))
        pairs.add((first["ours"], first["twin"]))
        have = {r["scenario"] for r in runs}
        if twice := have & {r["scenario"] for r in doc["runs"]}:
            raise ValueError(f"{path}: scenarios {sorted(twice)} are in another result too")
        runs += doc["runs"]
    if not pairs:
        raise NoHeadline("; ".join(skipped))
    if len(pairs) > 1:
        raise ValueError(f"{family}: the results compare different pairs {sorted(pairs)}")
    ours, twin = pairs.pop()
    return {"runs": runs, "ours": ours, "twin": twin}


def spread_label(ours: str, twin: str) -> str:
    return f"A/A spread ({ours}, {twin})"


def table(
    family: str, runs: list[dict[str, Any]], ours: str, twin: str, lead: str | None = None
) -> dict[str, Any]:
    """{"columns": [(scenario, measure)], "rows": {row label: {scenario: Cell}}}: the lead
    (Ballast's default `ours` unless another contender is named, as when a rule picks a new
    default after the run), the A/A spread of `ours` and its `twin` (the measure of chance),
    then every other contender in the order the runs name them, with the lead's word against
    it."""
    lead = lead or ours
    scenarios = list(dict.fromkeys(r["scenario"] for r in runs))
    measures = MEASURES[family]
    columns = [(s, measures.get(s, measures["*"])) for s in scenarios]
    contenders = list(dict.fromkeys(c for r in runs for c in r["contenders"]))
    if lead not in contenders or lead == twin:
        raise ValueError(f"{family}: no contender {lead!r} to lead the table")
    peers = [c for c in contenders if c not in (lead, twin)]
    rows: dict[str, dict[str, Cell]] = {lead: {}, spread_label(ours, twin): {}}
    rows.update({p: {} for p in peers})
    for scenario, measure in columns:
        default = verdict.windows(runs, scenario, measure, ours)
        spread = verdict.aa_spread(default, verdict.windows(runs, scenario, measure, twin))
        mine = verdict.windows(runs, scenario, measure, lead)
        rows[lead][scenario] = _cell(runs, scenario, measure, lead, None)
        rows[spread_label(ours, twin)][scenario] = Cell(round(spread, 1), None, None)
        # a peer missing from a window of the scenario has no paired comparison there
        ran = set.intersection(*(set(r["contenders"]) for r in runs if r["scenario"] == scenario))
        for peer in peers:
            if peer in ran:
                word = verdict.verdict(mine, verdict.windows(runs, scenario, measure, peer), spread)
                rows[peer][scenario] = _cell(runs, scenario, measure, peer, word)
    return {"columns": columns, "rows": rows}


def _cell(runs: list[dict[str, Any]], scenario: str, measure: str, who: str, word: str | None):
    values = verdict.windows(runs, scenario, measure, who)
    picked = [r for r in runs if r["scenario"] == scenario]
    pending = [r["contenders"][who].get(PENDING) or 0 for r in picked]
    shown = verdict.summary(values)  # shown to a tenth; the word is the unrounded figures'
    mean, worst = round(shown["mean"], 1), round(shown["worst"], 1)
    return Cell(mean, worst, word, round(statistics.fmean(pending), 1))


def markdown(family: str, built: dict[str, Any]) -> str:
    """The block between its markers, as the README holds it."""
    columns = built["columns"]
    heads = [f"{s}: {UNITS.get(m, m)}" for s, m in columns]
    lines = [
        BEGIN.format(family) + ": `make bench-headline` writes it from bench/results -->",
        "| contender | " + " | ".join(heads) + " |",
        "|---" * (len(heads) + 1) + "|",
    ]
    for label, cells in built["rows"].items():
        texts = [cells[s].text() if s in cells else "-" for s, _ in columns]
        lines.append(f"| {label} | " + " | ".join(texts) + " |")
    lines.append(END.format(family))
    return "\n".join(lines)


def block(family: str, results: Path = RESULTS, lead: str | None = None) -> str:
    loaded = load(family, results)
    built = table(family, loaded["runs"], loaded["ours"], loaded["twin"], lead)
    return markdown(family, built)


def lead_of(shown: dict[str, Any] | None) -> str | None:
    """The contender a block read back (`parse`) leads with: its first row."""
    return next(iter(shown["rows"]), None) if shown else None


def parse(text: str, family: str) -> dict[str, Any] | None:
    """The README's block for `family` read back: {"heads": [...], "rows": {label: [Cell or
    None]}}; None when the README holds none, or only its markers (where the table will go).
    ValueError on a cell that does not read."""
    begin = text.find(BEGIN.format(family))
    if begin < 0:
        return None
    end = text.find(END.format(family), begin)
    if end < 0:
        raise ValueError(f"headline:{family}: no end marker")
    lines = [ln for ln in text[begin:end].splitlines()[1:] if ln.startswith("|")]
    cells = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in lines]
    if not cells:
        return None
    rows: dict[str, list[Cell | None]] = {}
    for row in cells[2:]:
        parsed: list[Cell | None] = []
        for cell in row[1:]:
            if cell == "-":
                parsed.append(None)
                continue
            found = CELL.match(cell)
            if found is None:
                raise ValueError(f"headline:{family}, {row[0]}: cannot read {cell!r}")
            parsed.append(
                Cell(
                    float(found["mean"]),
                    None if found["worst"] is None else float(found["worst"]),
                    found["word"],
                    float(found["pending"] or 0),
                )
            )
        rows[row[0]] = parsed
    return {"heads": cells[0][1:], "rows": rows}


def mismatches(shown: dict[str, Any] | None, built: dict[str, Any], family: str) -> list[str]:
    """Where a block read back (`parse`) differs from the results (`table`): every column
    head, row, number and word; empty when the README says what the results say."""
    if shown is None:
        return [f"README.md has no headline:{family} block (make bench-headline)"]
    columns = built["columns"]
    heads = [f"{s}: {UNITS.get(m, m)}" for s, m in columns]
    out = []
    if shown["heads"] != heads:
        out.append(f"columns {shown['heads']}, the results' {heads}")
    if list(shown["rows"]) != list(built["rows"]):
        out.append(f"rows {list(shown['rows'])}, the results' {list(built['rows'])}")
    for label, cells in built["rows"].items():
        said = shown["rows"].get(label, [])
        for i, (scenario, measure) in enumerate(columns):
            want, got = cells.get(scenario), said[i] if i < len(said) else None
            if want != got:
                where = f"{label}, {scenario} ({measure})"
                if want is not None and got is not None and want.word != got.word:
                    out.append(f"{where}: README says {got.word!r}, the rule says {want.word!r}")
                else:
                    out.append(
                        f"{where}: README {got.text() if got else '-'}, "
                        f"results {want.text() if want else '-'}"
                    )
    return out


def replace_block(text: str, family: str, new: str) -> str:
    """`text` with its block for `family` replaced by `new`; ValueError when it has none (put
    the two marker lines where the table goes, then write)."""
    begin = text.find(BEGIN.format(family))
    end = text.find(END.format(family), max(begin, 0))
    if begin < 0 or end < 0:
        raise ValueError(
            f"no headline:{family} markers: put `{BEGIN.format(family)} -->` and "
            f"`{END.format(family)}` on lines of their own where the table goes"
        )
    return text[:begin] + new + text[end + len(END.format(family)) :]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench.harness.headline", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--results", type=Path, default=RESULTS, help="the results folder")
    parser.add_argument("--write", type=Path, help="replace the blocks in this file (README.md)")
    parser.add_argument(
        "--lead",
        action="append",
        default=[],
        metavar="FAMILY=CONTENDER",
        help="lead a table with another contender than the default the results compare (e.g. "
        "placement=ballast-peak-recent once its rule picks it); the A/A spread stays the default's",
    )
    args = parser.parse_args(argv)
    if bad := [i for i in args.lead if i.partition("=")[0] not in FILES or "=" not in i]:
        parser.error(f"--lead {bad[0]}: want FAMILY=CONTENDER, FAMILY one of {', '.join(FILES)}")
    leads = dict(item.split("=", 1) for item in args.lead)
    text = args.write.read_text() if args.write else ""
    written = 0
    for family in FILES:
        try:
            new = block(family, args.results, leads.get(family))
        except NoHeadline as exc:
            print(f"{family}: no headline: {exc}", file=sys.stderr)
            continue
        except ValueError as exc:
            parser.exit(2, f"{parser.prog}: {exc}\n")
        written += 1
        if args.write:
            try:
                text = replace_block(text, family, new)
            except ValueError as exc:
                parser.exit(2, f"{args.write}: {exc}\n")
        else:
            print(new + "\n")
    if args.write and written:
        args.write.write_text(text)
        print(f"{args.write}: {written} headline block(s) written")
    return 0 if written else 2


if __name__ == "__main__":
    sys.exit(main())
