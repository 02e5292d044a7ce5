"""Typed reads of one YAML mapping, for the config loader and for every plugin's own args:
each error names the field's full path, and a key nobody read is refused (a typo never falls
back to a default silently)."""

from __future__ import annotations

import math
import re
from typing import Any

from scheduler.framework.errors import ConfigError
from shared.quantities import QuantityError, cpu_millis

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_MISSING = object()


def parse_duration(value: Any, where: str) -> float:
    """A Go duration ("15s", "1m30s", "500ms") or a number of seconds, in seconds."""
    if isinstance(value, bool):
        raise ConfigError(f"{where}: expected a duration like 15s, got {value!r}")
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip()
    if not text or _DURATION.sub("", text):
        raise ConfigError(f"{where}: expected a duration like 15s, got {value!r}")
    return sum(float(n) * _UNITS[u] for n, u in _DURATION.findall(text))


class Fields:
    """Typed reads from one YAML mapping; every error names the field's full path."""

    def __init__(self, doc: Any, where: str) -> None:
        if doc is None:
            doc = {}
        if not isinstance(doc, dict):
            raise ConfigError(f"{where or 'config'}: expected a mapping, got {type(doc).__name__}")
        self.doc = doc
        self.where = where
        self._seen: set[str] = set()

    def path(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def error(self, key: str, message: str) -> ConfigError:
        return ConfigError(f"{self.path(key)}: {message}")

    def has(self, key: str) -> bool:
        return key in self.doc

    def raw(self, key: str, default: Any = None) -> Any:
        self._seen.add(key)
        value = self.doc.get(key, _MISSING)
        return default if value is _MISSING or value is None else value

    def string(self, key: str, default: str = "", choices: tuple[str, ...] = ()) -> str:
        value = self.raw(key, default)
        if not isinstance(value, str):
            raise self.error(key, f"expected a string, got {value!r}")
        if choices and value not in choices:
            raise self.error(key, f"must be one of {', '.join(choices)}, got {value!r}")
        return value

    def number(
        self, key: str, default: float, lo: float | None = None, hi: float | None = None
    ) -> float:
        value = self.raw(key, default)
        if isinstance(value, str):  # upstream writes some numbers as strings ("1.5")
            try:
                value = float(value)
            except ValueError:
                raise self.error(key, f"expected a number, got {value!r}") from None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            raise self.error(key, f"expected a number, got {value!r}")
        self._check_range(key, value, lo, hi)
        return float(value)

    def integer(self, key: str, default: int, lo: int | None = None, hi: int | None = None) -> int:
        value = self.raw(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(key, f"expected an integer, got {value!r}")
        self._check_range(key, value, lo, hi)
        return value

    def _check_range(self, key: str, value: float, lo: float | None, hi: float | None) -> None:
        if lo is not None and hi is not None and not lo <= value <= hi:
            raise self.error(key, f"must be {lo:g}..{hi:g}, got {value!r}")
        if lo is not None and value < lo:
            raise self.error(key, f"must be >= {lo:g}, got {value!r}")
        if hi is not None and value > hi:
            raise self.error(key, f"must be <= {hi:g}, got {value!r}")

    def boolean(self, key: str, default: bool) -> bool:
        value = self.raw(key, default)
        if not isinstance(value, bool):
            raise self.error(key, f"expected true or false, got {value!r}")
        return value

    def duration(self, key: str, default: float) -> float:
        seconds = parse_duration(self.raw(key, default), self.path(key))
        # A NaN passes `<= 0`, and a wait of NaN or infinite seconds raises in the thread
        # that waits, not here.
        if not math.isfinite(seconds) or seconds <= 0:
            raise self.error(key, f"must be a positive number of seconds, got {seconds:g}")
        return seconds

    def cpu(self, key: str, default: int) -> int:
        """A CPU quantity ("500m", 2) in millicores."""
        value = self.raw(key, _MISSING)
        if value is _MISSING:
            return default
        try:
            millis = cpu_millis(value)
        except QuantityError as exc:
            raise self.error(key, str(exc)) from None
        if millis < 0:
            raise self.error(key, "must not be negative")
        return millis

    def section(self, key: str) -> Fields:
        return Fields(self.raw(key, {}), self.path(key))

    def items(self, key: str) -> list[Fields]:
        """A list of mappings, each as Fields named `key[i]`."""
        value = self.raw(key, [])
        if not isinstance(value, list):
            raise self.error(key, f"expected a list, got {type(value).__name__}")
        return [Fields(item, f"{self.path(key)}[{i}]") for i, item in enumerate(value)]

    def finish(self) -> None:
        """Refuse keys nobody read: a typo must not fall back to a default silently."""
        for key in self.doc:
            if key not in self._seen:
                raise ConfigError(f"{self.path(str(key))}: unknown field")
