"""Why a Ballast pool's rebalancer moved what it moved, or nothing: its decision records, kept.

Each Ballast rebalancer keeps its latest decisions in a ring of LOG_SIZE and serves them at
`/decisions` (scheduler/rebalancer/status.py; docs/rebalancer.md "What it shows"). A round logs
a skip for every pod of every confirmed hot node it judges, so an observation of 180 s at the
synthetic scenarios' 2 s rounds can log more than the ring holds: `Reader` reads every pool's
every POLL seconds while the run lasts and keeps each record once; `summarise` keeps of them,
per pool, the count of each action's reasons before and after the change and the first FIRST
distinct decisions after it. A round that finds no confirmed hot node out of its rest logs
nothing, so each read also takes `/status`'s last round (its hot nodes with their streaks,
the confirmed, saturated and resting ones): `sightings` says, per node hot after the change,
when a read first saw it hot, confirmed, saturated or resting, and its longest streak (reads
every POLL seconds see one round in 2.5: times are up to a read late, streaks a lower bound). A
read that fails is counted with its error, never a failed run. The benchmark's rebalancers run
without `--api-token-file`, so the reads carry no token.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import requests

from scheduler.rebalancer.status import EVICT, LOG_SIZE, REST_ENDED, SKIP, WOULD_EVICT

POLL = 5.0  # s between reads: the ring holds LOG_SIZE / (POLL / 2 s rounds) = 200 a round
TIMEOUT = 3.0  # s for one read
FIRST = 50  # distinct decisions after the change kept in full, per pool
NOTE_CHARS = 160  # a decision's detail (the judge's numbers) cut to this
ERROR_CHARS = 200
PART = ERROR_CHARS // 2  # each endpoint's share when both fail
# How the console's line names each action, in its order.
LABELS = {EVICT: "evicted", WOULD_EVICT: "would evict", SKIP: "skipped", REST_ENDED: "rest ended"}


def setup() -> dict[str, Any]:
    """For a result's setup: how the records were read and cut."""
    return {"ring": LOG_SIZE, "poll_seconds": POLL, "first": FIRST, "note_chars": NOTE_CHARS}


def identity(record: dict[str, Any]) -> tuple[Any, ...]:
    """A record as the rebalancer logged it: two reads of one ring return it equal."""
    return tuple(record.get(k) for k in ("time", "action", "node", "pod", "reason", "detail",
                                         "target"))  # fmt: skip


@dataclass
class Log:
    """One pool's records, each once, oldest first, and how its reads went."""

    records: list[dict[str, Any]] = field(default_factory=list)
    seen: set[tuple[Any, ...]] = field(default_factory=set)
    reads: int = 0
    failed: int = 0
    error: str = ""  # the latest failed read's
    # Reads of a full ring whose oldest record was new: the ring turned over since the read
    # before, and what it dropped between the two is lost (counts are then lower bounds).
    gaps: int = 0
    rounds: dict[float, dict[str, Any]] = field(default_factory=dict)  # /status, by round time

    def add(self, fetched: list[dict[str, Any]], size: int = LOG_SIZE) -> None:
        """One read's records (the ring, newest last) into the log."""
        if len(fetched) >= size and fetched and identity(fetched[0]) not in self.seen:
            self.gaps += 1
        for record in fetched:
            key = identity(record)
            if key not in self.seen:
                self.seen.add(key)
                self.records.append(record)

    def saw(self, last_round: dict[str, Any]) -> None:
        """One read of `/status`'s lastRound (the same round read twice is kept once)."""
        t = last_round.get("time")
        if t is None:
            return  # no round yet
        resting = last_round.get("resting") or {}
        self.rounds[float(t)] = {
            "hot": dict(last_round.get("hot") or {}),
            "confirmed": set(last_round.get("confirmed") or ()),
            "saturated": set(last_round.get("saturated") or ()),
            # The rest's recorded end; ended ones may stay in the map.
            "resting": {n for n, until in resting.items() if until > t},
            "leading": bool(last_round.get("leading")),
        }

    def failure(self, error: str) -> None:
        self.failed += 1
        self.error = error[:ERROR_CHARS]


def counts(records: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """action -> reason -> how many, most first."""
    out: dict[str, dict[str, int]] = {}
    for r in records:
        slot = out.setdefault(str(r.get("action")), {})
        reason = str(r.get("reason") or "")
        slot[reason] = slot.get(reason, 0) + 1
    return {a: dict(sorted(s.items(), key=lambda kv: (-kv[1], kv[0]))) for a, s in out.items()}


def distinct(
    records: list[dict[str, Any]], change: float, index: Callable[[str], int], first: int = FIRST
) -> list[dict[str, Any]]:
    """The first `first` distinct decisions (action, reason, node, pod) from the records after
    the change, in the order they first came: seconds after the change (`t`, and `last` of the
    repeats), `n` times, the node and target by the pool's index (-1: none), the pod's name, and
    the first one's detail (`note`). A round repeats a hot node's skips; one line each keeps the
    record short."""
    out: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for r in sorted(records, key=lambda r: r.get("time", 0.0)):
        t = round(float(r.get("time", 0.0)) - change, 1)
        key = (str(r.get("action")), str(r.get("reason")), str(r.get("node")), str(r.get("pod")))
        if key in out:
            out[key]["n"] += 1
            out[key]["last"] = t
        elif len(out) < first:
            pod = str(r.get("pod") or "")
            out[key] = {
                "t": t,
                "last": t,
                "n": 1,
                "action": key[0],
                "reason": key[1],
                "node": index(str(r.get("node") or "")),
                "pod": pod.rsplit("/", 1)[-1],  # the namespace is the pool's
                "target": index(str(r.get("target") or "")),
                "note": str(r.get("detail") or "")[:NOTE_CHARS],
            }
    return list(out.values())


def sightings(
    rounds: dict[float, dict[str, Any]], change: float, index: Callable[[str], int]
) -> dict[str, dict[str, Any]]:
    """Node index (a string: a JSON key) -> what the rounds read after the change saw of it,
    for each node they saw hot, confirmed, saturated or resting: seconds after the change it
    was first seen hot (`hot`, None: never), `confirmed`, `saturated` and `resting` (absent:
    never), and its longest streak seen."""
    out: dict[int, dict[str, Any]] = {}
    for t in sorted(rounds):
        if t < change:
            continue
        seen, at = rounds[t], round(t - change, 1)
        for node, streak in seen["hot"].items():
            slot = out.setdefault(index(node), {"hot": at, "streak": 0})
            slot["hot"] = at if slot["hot"] is None else slot["hot"]
            slot["streak"] = max(slot["streak"], int(streak))
        for key in ("confirmed", "saturated", "resting"):
            for node in seen[key]:
                slot = out.setdefault(index(node), {"hot": None, "streak": 0})
                slot.setdefault(key, at)
    return {str(i): out[i] for i in sorted(out)}


def summarise(
    log: Log, change: float, index: Callable[[str], int], first: int = FIRST
) -> dict[str, Any]:
    """One pool's decisions for its result (see the module's doc)."""
    after = [r for r in log.records if r.get("time", 0.0) >= change]
    before = [r for r in log.records if r.get("time", 0.0) < change]
    out: dict[str, Any] = {
        "reads": log.reads,
        "before_change": counts(before),
        "after_change": counts(after),
        "first_after_change": distinct(after, change, index, first),
        "sightings": sightings(log.rounds, change, index),
    }
    standby = sum(not r["leading"] for t, r in log.rounds.items() if t >= change)
    if standby:
        out["standby_rounds"] = standby  # read as not leading: it decided nothing then
    if log.failed:
        out["failed_reads"] = log.failed
        out["error"] = log.error
    if log.gaps:
        out["gaps"] = log.gaps
    return out


def why(summary: dict[str, Any] | None) -> str:
    """The console's line of a pool's decisions after the change, e.g. "skipped: no-target 14,
    scheduler-would-return-it 3"."""
    if not summary:
        return ""
    after = summary.get("after_change") or {}
    parts = []
    for action in [*LABELS, *sorted(set(after) - set(LABELS))]:
        if after.get(action):
            reasons = ", ".join(f"{r or '-'} {n}" for r, n in after[action].items())
            parts.append(f"{LABELS.get(action, action)}: {reasons}")
    text = "; ".join(parts) or "no decision after the change"
    seen = [_sighting(i, s) for i, s in (summary.get("sightings") or {}).items()]
    text += ("; seen: " + ", ".join(seen)) if seen else "; no node seen hot"
    if summary.get("standby_rounds"):
        text += f"; {summary['standby_rounds']} rounds read as standby"
    if summary.get("gaps"):
        text += f"; ring turned over {summary['gaps']} times (counts are lower bounds)"
    if summary.get("failed_reads"):
        text += f"; {summary['failed_reads']} of {summary['reads']} reads failed: "
        text += summary.get("error", "")
    return text


def _sighting(node: str, seen: dict[str, Any]) -> str:
    """A node as the console's line says it: "node 3 hot 12 s (streak 2), confirmed 20 s,
    resting 24 s", or "..., confirmed never"."""
    hot = "not read hot" if seen.get("hot") is None else f"hot {seen['hot']:g} s"
    text = f"node {node} {hot} (streak {seen['streak']})"
    if "saturated" in seen:
        text += f", saturated {seen['saturated']:g} s"
    text += f", confirmed {seen['confirmed']:g} s" if "confirmed" in seen else ", confirmed never"
    if "resting" in seen:
        text += f", resting {seen['resting']:g} s"
    return text


class Reader:
    """Reads each pool's /decisions and /status every POLL seconds on a thread, and once more
    on stop."""

    def __init__(self, ports: dict[str, int], poll: float = POLL) -> None:
        """`ports`: contender -> its rebalancer's --listen port on 127.0.0.1."""
        self.ports, self.poll = ports, poll
        self.logs = {c: Log() for c in ports}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="decisions", daemon=True)
        self._session = requests.Session()
        self._lock = threading.Lock()  # the last read may meet a late one of the thread's

    def start(self) -> None:
        if self.ports:
            self._thread.start()

    def stop(self) -> None:
        """The last read (what the final rounds logged), then the thread ended."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self.poll + len(self.ports) * TIMEOUT)
        self.read_all()
        self._session.close()

    def _run(self) -> None:
        while not self._stop.wait(self.poll):
            self.read_all()

    def read_all(self) -> None:
        with self._lock:
            for c, port in self.ports.items():
                self.read(c, port)

    def read(self, contender: str, port: int) -> None:
        """One read of both; what fails is counted once a read, what answered is kept."""
        log = self.logs[contender]
        log.reads += 1
        errors = []
        try:
            fetched = self._get(port, "/decisions", "decisions", list, {"limit": LOG_SIZE})
        except (requests.RequestException, ValueError, KeyError, TypeError) as exc:
            errors.append(f"/decisions: {type(exc).__name__}: {exc}"[:PART])
        else:
            log.add(fetched)
        try:
            log.saw(self._get(port, "/status", "lastRound", dict))
        except (requests.RequestException, ValueError, KeyError, TypeError) as exc:
            errors.append(f"/status: {type(exc).__name__}: {exc}"[:PART])
        if errors:
            log.failure("; ".join(errors))

    def _get(self, port: int, path: str, key: str, kind: type, params: Any = None) -> Any:
        answer = self._session.get(f"http://127.0.0.1:{port}{path}", params=params, timeout=TIMEOUT)
        answer.raise_for_status()
        value = answer.json()[key]
        if not isinstance(value, kind):
            raise TypeError(f"{key}: {kind.__name__} expected, got {type(value).__name__}")
        return value
