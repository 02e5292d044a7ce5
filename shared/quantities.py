"""Kubernetes resource quantities ("250m", "1.5", "16Gi", "1e3") as plain numbers."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from functools import lru_cache

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(text: str | int | float) -> Decimal:
    """Return the quantity's value in base units (cores, bytes, counts)."""
    if isinstance(text, bool):
        raise QuantityError(f"not a quantity: {text!r}")
    if isinstance(text, (int, float)):
        return _number(str(text), text)  # a float may be inf or nan
    s = str(text).strip()
    if not s:
        raise QuantityError("empty quantity")
    for suffix, mult in _BINARY.items():
        if s.endswith(suffix):
            return _number(s[: -len(suffix)], text) * mult
    if len(s) > 1 and s[-1] in _DECIMAL and s[-1] != "" and not s[-1].isdigit():
        # "1e3" ends in a digit; "5E" (exa) and "2e" are ambiguous, Kubernetes reads "E" as exa.
        return _number(s[:-1], text) * _DECIMAL[s[-1]]
    return _number(s, text)


def _number(s: str, original: object) -> Decimal:
    try:
        value = Decimal(s)
    except InvalidOperation:
        raise QuantityError(f"not a quantity: {original!r}") from None
    if not value.is_finite():
        raise QuantityError(f"not a quantity: {original!r}")
    return value


def cpu_millis(text: str | int | float) -> int:
    """CPU quantity in millicores, rounded up as Kubernetes does (MilliValue)."""
    if type(text) is str:
        return _cpu_millis_of(text)
    return _cpu_millis(text)


def bytes_value(text: str | int | float) -> int:
    """Memory or storage quantity in bytes, rounded up (Value)."""
    if type(text) is str:
        return _bytes_value_of(text)
    return _bytes_value(text)


def _cpu_millis(text: str | int | float) -> int:
    value = parse_quantity(text) * 1000
    return int(value.to_integral_value(rounding="ROUND_CEILING"))


def _bytes_value(text: str | int | float) -> int:
    return int(parse_quantity(text).to_integral_value(rounding="ROUND_CEILING"))


# Every pod and node carries its quantities as strings, and a cluster has few distinct ones
# ("100m", "500Mi", a node type's capacity): parsed once each. Decimal parsing was about half of
# what turning a listed pod into a PodInfo costs. Errors are not cached: they raise each time.
_cpu_millis_of = lru_cache(maxsize=4096)(_cpu_millis)
_bytes_value_of = lru_cache(maxsize=4096)(_bytes_value)
