"""How every Ballast process logs: `--log-level` and `--log-format text|json`.

JSON is one object a line (time, level, logger, message, and the exception when there is one),
for log pipelines that index fields instead of parsing text.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from typing import Any

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
FORMATS = ("text", "json")
TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        return json.dumps(doc, ensure_ascii=False)


def add_arguments(parser: argparse.ArgumentParser, level: str = "INFO") -> None:
    parser.add_argument("--log-level", default=level, choices=LEVELS, help="default %(default)s")
    parser.add_argument(
        "--log-format", default="text", choices=FORMATS, help="text, or json: one object a line"
    )


def configure(level: str = "INFO", fmt: str = "text") -> None:
    """The root logger's level and format (replaces any handler set before)."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT))
    logging.basicConfig(level=level, handlers=[handler], force=True)


def gunicorn_config(level: str, fmt: str) -> dict[str, Any]:
    """gunicorn's `logconfig_dict`: {} (its own text lines) unless `fmt` is json. Merged into
    gunicorn's defaults, whose `generic` formatter this replaces; its access log, which any
    logconfig_dict switches on, is held at WARNING (it logs at INFO), so it stays off."""
    if fmt != "json":
        return {}
    quiet = {"level": "WARNING", "handlers": [], "propagate": True}
    return {
        "root": {"level": level, "handlers": ["error_console"]},
        "loggers": {"gunicorn.error": quiet, "gunicorn.access": dict(quiet)},
        "formatters": {"generic": {"()": "shared.logs.JsonFormatter"}},
    }
