"""Kubernetes LabelSelector (matchLabels + matchExpressions), parsed once and matched many times.

Semantics are apimachinery's LabelSelectorAsSelector: a missing (null) selector matches nothing,
an empty one ({}) matches everything, and every requirement must hold. Operators: In (key present
with one of the values), NotIn (key absent, or its value not listed), Exists, DoesNotExist;
matchLabels entries are In with one value. A selector the apiserver would reject (unknown
operator, In/NotIn without values, Exists/DoesNotExist with values) raises ValueError, which a
plugin reports instead of guessing.

Pod affinity and topology spread share this module; both narrow their search with the cluster
index through `candidates`, so the positive requirements are kept apart.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

IN, NOT_IN, EXISTS, DOES_NOT_EXIST = "In", "NotIn", "Exists", "DoesNotExist"
_OPERATORS = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST)

Requirement = tuple[str, str, frozenset[str]]  # (key, operator, values)


@dataclass(frozen=True)
class LabelSelector:
    """Parsed selector; `nothing` is the null selector, no requirements the empty one."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    @classmethod
    def parse(cls, raw: Mapping[str, Any] | None) -> LabelSelector:
        if raw is None:
            return NOTHING
        reqs: list[Requirement] = []
        for key, value in sorted((raw.get("matchLabels") or {}).items()):
            reqs.append((key, IN, frozenset((str(value),))))
        for expr in raw.get("matchExpressions") or []:
            key, op = expr.get("key", ""), expr.get("operator", "")
            values = frozenset(str(v) for v in expr.get("values") or ())
            if op not in _OPERATORS:
                raise ValueError(f"{op!r} is not a valid label selector operator")
            if op in (IN, NOT_IN) and not values:
                raise ValueError(f"values for {op} on {key!r} must be non-empty")
            if op in (EXISTS, DOES_NOT_EXIST) and values:
                raise ValueError(f"values for {op} on {key!r} must be empty")
            reqs.append((key, op, values))
        return cls(tuple(reqs)) if reqs else EVERYTHING

    @property
    def everything(self) -> bool:
        return not self.nothing and not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        for key, op, values in self.requirements:
            value = labels.get(key)
            if op == IN:
                if value is None or value not in values:
                    return False
            elif op == NOT_IN:
                if value is not None and value in values:
                    return False
            elif op == EXISTS:
                if value is None:
                    return False
            elif value is not None:  # DoesNotExist
                return False
        return True

    def with_requirement(self, key: str, op: str, values: tuple[str, ...] = ()) -> LabelSelector:
        """This selector ANDed with one more requirement (matchLabelKeys and the like)."""
        if self.nothing:
            return self
        return LabelSelector((*self.requirements, (key, op, frozenset(values))))

    def candidates(
        self,
        by_value: Callable[[str, str], set[str]],
        by_key: Callable[[str], set[str]],
    ) -> set[str] | None:
        """The smallest superset of matching ids an index offers: for each In requirement the
        union of by_value(key, v) over its values, for each Exists by_key(key); the smallest of
        those. None when no requirement narrows (the caller scans everything); callers still
        check `matches` on each candidate. The sets returned may be the index's own: read only.
        """
        if self.nothing:
            return set()
        best: set[str] | None = None
        for key, op, values in self.requirements:
            if op == IN:
                if len(values) == 1:
                    found = by_value(key, next(iter(values)))
                else:
                    found = set().union(*(by_value(key, v) for v in values))
            elif op == EXISTS:
                found = by_key(key)
            else:
                continue
            if best is None or len(found) < len(best):
                best = found
                if not best:
                    break
        return best


NOTHING = LabelSelector(nothing=True)
EVERYTHING = LabelSelector()
