"""Prometheus HTTP API provider (also Thanos, Mimir, VictoriaMetrics): one query per metric.

Distributed stores may answer with part of the data when one of their storage nodes is down:
VictoriaMetrics cluster flags it (`"isPartial": true`), Thanos and Prometheus itself (a failed
remote read) add `warnings`. `partial_note` says so, and the poller keeps the nodes such an
answer leaves out at their last window instead of reading them as idle.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import Any

import requests
import urllib3

from watcher.config import Config, MetricSpec
from watcher.errors import ProviderError
from watcher.providers.auth import Credentials
from watcher.providers.base import Fetch

# What the PromQL engine says about the query itself (a counter that may not be one, a mix of
# histogram kinds): no sign of missing data. Prometheus 3 moved its infos to `infos`; older
# releases, Thanos and Mimir pass them among the warnings.
QUERY_NOTES = ("PromQL info:", "PromQL warning:")
NOTE_CHARS = 300  # a note is shown in /api/v1/status and logs: keep it short


@dataclass
class Answer:
    data: dict[str, Any]
    partial: str | None  # why the store's answer lacks data, None when it is complete


def partial_note(doc: dict[str, Any]) -> str | None:
    """Why an answer (the API's JSON object) lacks data, or None when nothing says it does."""
    notes = []
    if doc.get("isPartial") in (True, "true"):
        notes.append("isPartial: some storage nodes did not answer")
    warnings = doc.get("warnings")
    if isinstance(warnings, str):
        warnings = [warnings]
    if isinstance(warnings, list):
        notes.extend(str(w) for w in warnings if not str(w).startswith(QUERY_NOTES))
    return "; ".join(notes)[:NOTE_CHARS] or None


def parse_answer(url: str, status: int, body: str, doc: Any) -> Answer:
    """The answer's `data` and partial note; ProviderError when it is no usable answer.
    `doc` is the parsed JSON body, or None when the body is not JSON."""
    if doc is None:
        reason = "bad_json" if 200 <= status < 300 else f"http_{status}"
        hint = " (check the credentials)" if status in (401, 403) else ""
        raise ProviderError(reason, f"{url}: HTTP {status}{hint}, not JSON: {body[:200]!r}")
    if not isinstance(doc, dict):
        raise ProviderError("bad_json", f"{url}: expected a JSON object")
    if doc.get("status") != "success":
        reason = "query_error" if status in (200, 400, 422) else "http_error"
        raise ProviderError(reason, f"{url}: HTTP {status}: {doc.get('error') or doc!r}"[:300])
    data = doc.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("result"), list):
        raise ProviderError("bad_json", f"{url}: no data.result list in the answer")
    return Answer(data, partial_note(doc))


class PrometheusProvider:
    source = "Prometheus"

    def __init__(self, config: Config, specs: list[MetricSpec]) -> None:
        # The URL may carry a path: a route prefix, VictoriaMetrics cluster's /select/0/prometheus.
        self.base = config.prometheus_url.rstrip("/")
        self.specs = specs
        self.label = config.node_label
        self.timeout = config.provider_timeout
        self.session = requests.Session()
        self.session.headers.update(config.prometheus_headers)
        credentials = Credentials(config)
        if credentials.active:
            self.session.auth = credentials
        # Passed with every request: a session-level setting loses to REQUESTS_CA_BUNDLE.
        self.verify: bool | str = True
        if config.insecure_skip_verify:
            self.verify = False
            urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
        elif config.prometheus_ca_file:
            self.verify = config.prometheus_ca_file
        self.cert: tuple[str, str] | None = None
        if config.prometheus_cert_file:
            self.cert = (config.prometheus_cert_file, config.prometheus_key_file)

    def close(self) -> None:
        self.session.close()

    def _get(self, path: str, params: dict[str, Any]) -> Answer:
        url = f"{self.base}{path}"
        try:
            resp = self.session.get(
                url, params=params, timeout=self.timeout, verify=self.verify, cert=self.cert
            )
        except requests.Timeout as exc:
            raise ProviderError("timeout", f"{url}: no answer within {self.timeout}s") from exc
        except (requests.RequestException, OSError) as exc:  # OSError: an unreadable cert file
            raise ProviderError("unreachable", f"{url}: {exc}") from exc
        try:
            doc = resp.json()
        except ValueError:
            doc = None
        return parse_answer(url, resp.status_code, resp.text if doc is None else "", doc)

    def answer(self, query: str, at: float, what: str = "query") -> tuple[list[Any], str | None]:
        """An instant query's result items as Prometheus gives them (labels left to the caller),
        and the store's note when the answer is partial."""
        got = self._get("/api/v1/query", {"query": query, "time": f"{at:.3f}"})
        if got.data.get("resultType") != "vector":
            raise ProviderError("bad_result", f"{what}: expected a vector result")
        return got.data["result"], got.partial

    def vector(self, query: str, at: float, what: str = "query") -> list[Any]:
        """`answer` without its partial note."""
        return self.answer(query, at, what)[0]

    def _instant(
        self, spec: MetricSpec, at: float
    ) -> tuple[list[tuple[str | None, Any]], str | None]:
        items, partial = self.answer(spec.query, at, spec.key)
        out = []
        for item in items:
            try:
                out.append((item["metric"].get(self.label), item["value"][1]))
            except (KeyError, IndexError, TypeError, AttributeError):
                out.append((None, math.nan))  # counted as a malformed sample downstream
        return out, partial

    def fetch(self) -> Fetch:
        at = time.time()
        result = Fetch(time=at)
        answers: dict[str, Any] = {}

        def query(spec: MetricSpec) -> None:
            try:
                answers[spec.key] = self._instant(spec, at)
            except Exception as exc:  # noqa: BLE001 - handed to the polling thread below
                answers[spec.key] = exc

        # The queries of one poll run side by side: the poll takes as long as the slowest one.
        # Daemon threads, not a pool: a pool's threads are joined at interpreter exit, and a
        # stopping watcher must not wait out a Prometheus that does not answer.
        threads = [threading.Thread(target=query, args=(s,), daemon=True) for s in self.specs]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for spec in self.specs:
            answer = answers[spec.key]
            if isinstance(answer, ProviderError):
                result.errors[spec.key] = answer
            elif isinstance(answer, Exception):
                raise answer
            else:
                result.series[spec.key], partial = answer
                if partial:
                    result.partial[spec.key] = partial
        return result

    def history(self, start: float, end: float, step: float) -> list[Fetch]:
        by_time: dict[float, Fetch] = {}
        for spec in self.specs:
            params = {"query": spec.query, "start": start, "end": end, "step": max(step, 1.0)}
            got = self._get("/api/v1/query_range", params)
            for item in got.data["result"]:
                labels = item.get("metric") or {}
                for t, value in item.get("values") or []:
                    fetch = by_time.setdefault(float(t), Fetch(time=float(t)))
                    fetch.series.setdefault(spec.key, []).append((labels.get(self.label), value))
            if got.partial:
                for fetch in by_time.values():
                    fetch.partial[spec.key] = got.partial
        return [by_time[t] for t in sorted(by_time)]
