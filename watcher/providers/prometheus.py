"""Prometheus HTTP API provider (also Thanos, Mimir, VictoriaMetrics): one query per metric."""

from __future__ import annotations

import math
import threading
import time
from typing import Any

import requests
import urllib3

from watcher.config import Config, MetricSpec
from watcher.errors import ProviderError
from watcher.providers.base import Fetch


class PrometheusProvider:
    source = "Prometheus"

    def __init__(self, config: Config, specs: list[MetricSpec]) -> None:
        self.base = config.prometheus_url.rstrip("/")
        self.specs = specs
        self.label = config.node_label
        self.timeout = config.provider_timeout
        self.session = requests.Session()
        token = config.token()
        if token:
            self.session.headers["Authorization"] = f"Bearer {token}"
        # Passed with every request: a session-level setting loses to REQUESTS_CA_BUNDLE.
        self.verify: bool | str = True
        if config.insecure_skip_verify:
            self.verify = False
            urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
        elif config.prometheus_ca_file:
            self.verify = config.prometheus_ca_file

    def close(self) -> None:
        self.session.close()

    def _get(self, path: str, params: dict[str, Any]) -> Any:
        url = f"{self.base}{path}"
        try:
            resp = self.session.get(url, params=params, timeout=self.timeout, verify=self.verify)
        except requests.Timeout as exc:
            raise ProviderError("timeout", f"{url}: no answer within {self.timeout}s") from exc
        except requests.RequestException as exc:
            raise ProviderError("unreachable", f"{url}: {exc}") from exc
        try:
            doc = resp.json()
        except ValueError as exc:
            raise ProviderError(
                "bad_json" if resp.ok else f"http_{resp.status_code}",
                f"{url}: HTTP {resp.status_code}, not JSON: {resp.text[:200]!r}",
            ) from exc
        if not isinstance(doc, dict):
            raise ProviderError("bad_json", f"{url}: expected a JSON object")
        if doc.get("status") != "success":
            reason = "query_error" if resp.status_code in (200, 400, 422) else "http_error"
            raise ProviderError(
                reason, f"{url}: HTTP {resp.status_code}: {doc.get('error') or doc!r}"[:300]
            )
        data = doc.get("data")
        if not isinstance(data, dict) or not isinstance(data.get("result"), list):
            raise ProviderError("bad_json", f"{url}: no data.result list in the answer")
        return data

    def vector(self, query: str, at: float, what: str = "query") -> list[Any]:
        """An instant query's result items as Prometheus gives them (labels left to the caller)."""
        data = self._get("/api/v1/query", {"query": query, "time": f"{at:.3f}"})
        if data.get("resultType") != "vector":
            raise ProviderError("bad_result", f"{what}: expected a vector result")
        return data["result"]

    def _instant(self, spec: MetricSpec, at: float) -> list[tuple[str | None, Any]]:
        out = []
        for item in self.vector(spec.query, at, spec.key):
            try:
                out.append((item["metric"].get(self.label), item["value"][1]))
            except (KeyError, IndexError, TypeError, AttributeError):
                out.append((None, math.nan))  # counted as a malformed sample downstream
        return out

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
                result.series[spec.key] = answer
        return result

    def history(self, start: float, end: float, step: float) -> list[Fetch]:
        by_time: dict[float, Fetch] = {}
        for spec in self.specs:
            params = {"query": spec.query, "start": start, "end": end, "step": max(step, 1.0)}
            data = self._get("/api/v1/query_range", params)
            for item in data["result"]:
                labels = item.get("metric") or {}
                for t, value in item.get("values") or []:
                    fetch = by_time.setdefault(float(t), Fetch(time=float(t)))
                    fetch.series.setdefault(spec.key, []).append((labels.get(self.label), value))
        return [by_time[t] for t in sorted(by_time)]
