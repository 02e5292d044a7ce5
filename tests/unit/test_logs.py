"""--log-level and --log-format: JSON lines a log pipeline can index; bad values refused."""

from __future__ import annotations

import io
import json
import logging
import logging.config

import pytest

from shared import logs
from watcher.config import load
from watcher.errors import ConfigError


def test_json_lines_carry_level_logger_message_and_exception():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logs.JsonFormatter())
    log = logging.getLogger("ballast.test.json")
    log.addHandler(handler)
    log.propagate = False
    try:
        log.warning("node %s is hot", "n1")
        try:
            raise ValueError("boom")
        except ValueError:
            log.exception("failed")
    finally:
        log.removeHandler(handler)
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first["level"] == "WARNING" and first["logger"] == "ballast.test.json"
    assert first["message"] == "node n1 is hot" and first["time"].endswith("Z")
    assert second["message"] == "failed" and "ValueError: boom" in second["exception"]


def test_configure_sets_the_root_level_and_format():
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        logs.configure("WARNING", "json")
        assert root.level == logging.WARNING
        assert isinstance(root.handlers[0].formatter, logs.JsonFormatter)
        logs.configure("DEBUG", "text")
        assert root.level == logging.DEBUG
        assert not isinstance(root.handlers[0].formatter, logs.JsonFormatter)
    finally:
        root.handlers[:], root.level = saved


def test_gunicorn_config_is_valid_for_dictconfig_and_off_for_text():
    assert logs.gunicorn_config("INFO", "text") == {}
    from gunicorn.glogging import CONFIG_DEFAULTS

    merged = {**CONFIG_DEFAULTS, **logs.gunicorn_config("INFO", "json")}
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        logging.config.dictConfig(merged)
        assert isinstance(root.handlers[0].formatter, logs.JsonFormatter)
        # the access log (INFO lines) stays off
        assert not logging.getLogger("gunicorn.access").isEnabledFor(logging.INFO)
    finally:
        root.handlers[:], root.level = saved


def test_the_watcher_takes_them_from_flags_and_environment_and_refuses_others():
    env = {"BALLAST_PROMETHEUS_URL": "http://p:9090", "BALLAST_LOG_FORMAT": "json"}
    config = load(None, env=env, overrides={"log_level": "DEBUG"})
    assert (config.log_level, config.log_format) == ("DEBUG", "json")
    with pytest.raises(ConfigError, match="log_format must be one of text, json"):
        load(None, env={**env, "BALLAST_LOG_FORMAT": "xml"})
