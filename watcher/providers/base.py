"""What every metrics provider returns, and the protocol it implements."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from watcher.errors import ProviderError

# metric key -> [(raw node name as the source spells it, or None; raw value)]
RawSeries = dict[str, list[tuple[str | None, Any]]]


@dataclass
class Fetch:
    """One poll's answer: values at `time` per metric, the metrics whose query failed, and
    those whose answer the store said was partial (key -> the store's note): the nodes such an
    answer lacks are missing data, not idle nodes."""

    time: float
    series: RawSeries = field(default_factory=dict)
    errors: dict[str, ProviderError] = field(default_factory=dict)
    partial: dict[str, str] = field(default_factory=dict)


class Provider(Protocol):
    source: str  # the envelope's `source`

    def fetch(self) -> Fetch:
        """Query the current value of every metric for every node; never raises ProviderError
        for one metric (it goes in `errors`), so a partial answer still counts."""
        ...

    def history(self, start: float, end: float, step: float) -> list[Fetch]:
        """Past values for a warm start; an empty list when the source keeps no history."""
        ...

    def close(self) -> None: ...
