"""The OpenAPI description served at /openapi.json (kept in step with docs/api.md)."""

from __future__ import annotations

from typing import Any


def _get(summary: str, responses: dict[str, str], params: list[dict] | None = None) -> dict:
    op: dict[str, Any] = {
        "summary": summary,
        "responses": {code: {"description": text} for code, text in responses.items()},
    }
    if params:
        op["parameters"] = params
    return {"get": op}


def _param(name: str, where: str, text: str, required: bool = False) -> dict[str, Any]:
    return {
        "name": name,
        "in": where,
        "required": required or where == "path",
        "description": text,
        "schema": {"type": "string"},
    }


NODE = _param("node", "path", "Kubernetes node name")
ERR = 'JSON error: {"error": "..."}'


def document() -> dict[str, Any]:
    return {
        "openapi": "3.0.3",
        "info": {
            "title": "Ballast load-watcher",
            "version": "1",
            "description": "Node load windows with adaptive staleness; load-watcher compatible.",
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "paths": {
            "/watcher": _get(
                "All nodes (or one with ?host=) in load-watcher's envelope",
                {"200": "envelope", "404": "unknown host (plain text)", "500": "no data yet"},
                [_param("host", "query", "only this node")],
            ),
            "/watcher/health": _get("Provider health", {"200": "healthy", "503": "unhealthy"}),
            "/api/v1/nodes": _get(
                "Every node with window statistics, staleness state, age and horizon",
                {"200": "nodes", "304": "not modified (If-None-Match)", "500": ERR},
            ),
            "/api/v1/nodes/{node}": _get("One node", {"200": "node", "404": ERR}, [NODE]),
            "/api/v1/nodes/{node}/samples": _get(
                "Raw samples of one metric in the window, [[time, value], ...]",
                {"200": "samples", "400": ERR, "404": ERR},
                [NODE, _param("metric", "query", "metric key, default cpu")],
            ),
            "/api/v1/status": _get(
                "Provider, store and poller leadership status", {"200": "status"}
            ),
            "/healthz": _get("Liveness", {"200": "alive"}),
            "/readyz": _get("Readiness with reasons", {"200": "ready", "503": "not ready"}),
            "/metrics": _get("The watcher's own Prometheus metrics", {"200": "text format"}),
        },
    }
