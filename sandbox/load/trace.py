"""Reading a production trace of virtual machines: the Grid Workloads Archive's GWA-T-12
(Bitbrains) format, as the archive ships it and as the project's subset holds it.

Two layouts are read, both to the same `Trace`:
- the subset (`vm_usage_*.csv.gz`, comma-separated, one row per VM and step, columns
  `vm_id, timestamp_s, step, cpu_cores, cpu_capacity_mhz, cpu_usage_mhz, mem_capacity_kb,
  mem_usage_kb`), read from the file or from the folder holding it;
- the archive's own files, one per VM (`<vm>.csv` or `<vm>.csv.gz`, fields separated by `;`
  and a tab, a header whose first column says `Timestamp [ms]` although the values are Unix
  seconds), read from a folder of them or one file.

A VM's samples land on a common grid of STEP_SECONDS-long steps counted from the earliest
sample of the whole trace; a step a VM lacks repeats its previous sample (or its first, at the
start). Per step a VM has what it was given (cores, memory) and what it used (cores, memory):
use in cores is `usage_mhz / (capacity_mhz / cores)`, memory use is clipped to the capacity.
The data of the trace stays out of the repository; tests write small files of both formats.
"""

from __future__ import annotations

import csv
import gzip
import io
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

STEP_SECONDS = 300.0  # the archive samples every 5 minutes
SUBSET_COLUMNS = (
    "vm_id",
    "timestamp_s",
    "cpu_cores",
    "cpu_capacity_mhz",
    "cpu_usage_mhz",
    "mem_capacity_kb",
    "mem_usage_kb",
)
# The archive's columns, by their position (its header names them; the order is fixed).
ARCHIVE_FIELDS = 7  # timestamp, cores, capacity MHz, usage MHz, usage %, memory capacity, use
ARCHIVE_HEADER = "Timestamp [ms]"
# Where the benchmarks look by default: beside the checkout, never inside it.
DEFAULT_PATH = Path(__file__).resolve().parents[3] / "shared" / "traces" / "bitbrains-rnd"


class TraceError(ValueError):
    """A trace that cannot be read: the path, the line and what is wrong with it."""


@dataclass(frozen=True)
class VmSeries:
    """One VM on the trace's step grid (arrays of equal length, one value per step)."""

    vm_id: str
    cores: np.ndarray  # provisioned cores
    cpu_used: np.ndarray  # cores used
    memory_kb: np.ndarray  # provisioned memory, KB
    memory_used_kb: np.ndarray  # used memory, KB (at most the provisioned)

    @property
    def request_cores(self) -> float:
        """The cores it was given most often: what a pod made of it requests."""
        return _mode(self.cores)

    @property
    def request_memory_kb(self) -> float:
        return _mode(self.memory_kb)


@dataclass(frozen=True)
class Trace:
    start: float  # Unix seconds of step 0
    steps: int
    vms: dict[str, VmSeries]
    source: str  # what was read, for results

    @property
    def days(self) -> float:
        return self.steps * STEP_SECONDS / 86400.0


def _mode(values: np.ndarray) -> float:
    uniques, counts = np.unique(values, return_counts=True)
    return float(uniques[int(np.argmax(counts))])


def load(path: Path | str) -> Trace:
    """The trace at `path`: the subset's CSV (or its folder) or the archive's per-VM files (a
    folder of them, or one). A bad path or row raises TraceError naming it."""
    path = Path(path)
    if not path.exists():
        raise TraceError(f"{path}: no such file or folder")
    if path.is_dir():
        subsets = sorted(path.glob("vm_usage_*.csv.gz")) + sorted(path.glob("vm_usage_*.csv"))
        if subsets:
            return load_subset(subsets[0])
        files = sorted(p for p in path.iterdir() if p.name.endswith((".csv", ".csv.gz")))
        if not files:
            for sub in sorted(p for p in path.iterdir() if p.is_dir()):
                files += sorted(p for p in sub.iterdir() if p.name.endswith((".csv", ".csv.gz")))
        if not files:
            raise TraceError(f"{path}: neither vm_usage_*.csv.gz nor <vm>.csv[.gz] files in it")
        return load_archive(files, source=str(path))
    with _open(path) as f:
        first = f.readline()
    if first.startswith("vm_id,"):
        return load_subset(path)
    return load_archive([path], source=str(path))


def for_scenarios(path: Path, named: bool, say: Callable[[str], None] = print) -> Trace | None:
    """The trace for a benchmark's `trace` scenario. Missing: an error when the scenario was
    named (`named`), else None and a line saying the scenario is left out."""
    if named or path.exists():
        trace = load(path)
        say(f"trace: {len(trace.vms)} VMs x {trace.days:.1f} days from {trace.source}")
        return trace
    say(f"trace scenario left out: no trace at {path} (--trace PATH)")
    return None


def _open(path: Path) -> io.TextIOWrapper:
    if path.name.endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


Sample = tuple[float, float, float, float, float]  # timestamp, cores, used cores, mem, mem used


def _sample(path: Path, line: int, ts: str, cores: str, cap: str, use: str, mem: str,
            mem_use: str) -> Sample:  # fmt: skip
    try:
        t, c, capacity, usage = float(ts), float(cores), float(cap), float(use)
        memory, memory_used = float(mem), float(mem_use)
    except ValueError as exc:
        raise TraceError(f"{path}:{line}: not a number: {exc}") from None
    values = (t, c, capacity, usage, memory, memory_used)
    if not all(np.isfinite(values)):
        raise TraceError(f"{path}:{line}: a value is not finite")
    if c <= 0 or capacity <= 0:
        raise TraceError(f"{path}:{line}: no provisioned CPU (cores {c:g}, MHz {capacity:g})")
    if usage < 0 or memory < 0 or memory_used < 0:
        raise TraceError(f"{path}:{line}: a negative use or capacity")
    # The archive gives the capacity of all cores in MHz: use in cores is usage / (MHz a core).
    return t, c, usage / (capacity / c), memory, min(memory_used, memory)


def load_subset(path: Path) -> Trace:
    """The subset's CSV (gzip or plain)."""
    per_vm: dict[str, list[Sample]] = {}
    with _open(path) as f:
        reader = csv.DictReader(f)
        missing = [c for c in SUBSET_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise TraceError(f"{path}: columns {missing} missing (has {reader.fieldnames})")
        for line, row in enumerate(reader, start=2):
            values = [row[c] for c in SUBSET_COLUMNS]
            if any(v is None or v == "" for v in values):
                raise TraceError(f"{path}:{line}: an empty field")
            per_vm.setdefault(values[0], []).append(_sample(path, line, *values[1:]))
    return _grid(per_vm, str(path))


def archive_rows(path: Path) -> Iterator[tuple[int, list[str]]]:
    """(line number, the first ARCHIVE_FIELDS fields) of one per-VM file, header skipped."""
    with _open(path) as f:
        header = f.readline()
        if not header.startswith(ARCHIVE_HEADER):
            raise TraceError(f"{path}:1: expected a header starting {ARCHIVE_HEADER!r}")
        for line, text in enumerate(f, start=2):
            if not text.strip():
                continue
            fields = [x.strip() for x in text.split(";")]
            if len(fields) < ARCHIVE_FIELDS:
                raise TraceError(f"{path}:{line}: {len(fields)} fields, expected at least 7")
            yield line, fields[:ARCHIVE_FIELDS]


def load_archive(files: Iterable[Path], source: str = "") -> Trace:
    """The archive's per-VM files; a VM is named after its file (`17.csv.gz` -> "17")."""
    per_vm: dict[str, list[Sample]] = {}
    for path in files:
        vm = path.name.split(".")[0]
        samples = per_vm.setdefault(vm, [])
        for line, (ts, cores, cap, use, _pct, mem, mem_use) in archive_rows(path):
            samples.append(_sample(path, line, ts, cores, cap, use, mem, mem_use))
        if not samples:
            raise TraceError(f"{path}: no samples")
    return _grid(per_vm, source or ",".join(map(str, files)))


def _grid(per_vm: dict[str, list[Sample]], source: str) -> Trace:
    if not per_vm:
        raise TraceError(f"{source}: no samples")
    start = min(s[0] for samples in per_vm.values() for s in samples)
    end = max(s[0] for samples in per_vm.values() for s in samples)
    steps = int(round((end - start) / STEP_SECONDS)) + 1
    vms = {}
    for vm, samples in per_vm.items():
        columns = np.full((4, steps), np.nan)
        for t, cores, used, mem, mem_used in samples:
            # A later duplicate of a step wins, as the archive's own rows are in time order.
            columns[:, int(round((t - start) / STEP_SECONDS))] = (cores, used, mem, mem_used)
        vms[vm] = VmSeries(vm, *_fill(columns))
    return Trace(start, steps, vms, source)


def _fill(columns: np.ndarray) -> np.ndarray:
    """Each missing step takes the previous step's values (the first known ones at the start)."""
    known = ~np.isnan(columns[0])
    index = np.where(known, np.arange(columns.shape[1]), -1)
    np.maximum.accumulate(index, out=index)
    index[index < 0] = int(np.argmax(known))
    return columns[:, index]
