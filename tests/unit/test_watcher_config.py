"""Configuration: file < environment < flags, load-watcher's variables, clear errors."""

from __future__ import annotations

import pytest

from watcher.config import Config, load
from watcher.errors import ConfigError

URL = {"BALLAST_PROMETHEUS_URL": "http://prom:9090"}


def test_defaults():
    cfg = load(env=URL)
    assert cfg.poll_interval == 15.0 and cfg.window == 300.0 and cfg.listen == ":2020"
    assert cfg.expiry_seconds == 300.0
    assert cfg.horizon_bounds == (30.0, 300.0)  # two polls .. the expiry
    assert cfg.redis_url == "" and cfg.source == "Prometheus"
    cpu, memory = cfg.metric_specs()
    assert (cpu.key, cpu.type, memory.key, memory.type) == ("cpu", "CPU", "memory", "Memory")
    assert 'irate(node_cpu_seconds_total{mode="idle"}[1m])' in cpu.query
    assert "by (instance)" in cpu.query and "MemAvailable" in memory.query


def test_precedence_file_env_flags(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text("poll_interval: 5\nwindow: 120\nnode_label: node\nworkers: 3\n")
    env = {**URL, "BALLAST_POLL_INTERVAL": "7", "BALLAST_CORS_ORIGINS": "http://a, http://b"}
    cfg = load(str(path), env=env, overrides={"workers": 4, "listen": None})
    assert cfg.poll_interval == 7.0  # env beats file
    assert cfg.window == 120.0  # file beats default
    assert cfg.workers == 4  # flag beats file; None means "not given"
    assert cfg.cors_origins == ["http://a", "http://b"]
    assert "by (node)" in cfg.metric_specs()[0].query


def test_config_file_named_by_environment(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text("prometheus_url: http://from-file\n")
    assert load(env={"BALLAST_CONFIG": str(path)}).prometheus_url == "http://from-file"


def test_load_watcher_environment_variables():
    env = {
        "METRICS_PROVIDER_NAME": "Prometheus",
        "METRICS_PROVIDER_ADDRESS": "https://prom:9091",
        "METRICS_PROVIDER_TOKEN": "tok",
        "INSECURE_SKIP_VERIFY": "true",
    }
    cfg = load(env=env)
    assert cfg.provider == "prometheus" and cfg.prometheus_url == "https://prom:9091"
    assert cfg.token() == "tok" and cfg.insecure_skip_verify is True
    ms = load(env={"METRICS_PROVIDER_NAME": "KubernetesMetricsServer"})
    assert ms.provider == "metrics-server" and ms.source == "KubernetesMetricsServer"


def test_load_watcher_preset_and_extra_metrics():
    cfg = load(
        env=URL,
        overrides={
            "query_preset": "load-watcher",
            "extra_metrics": [
                {"key": "net_rx", "type": "Bandwidth", "unit": "bytes/s", "query": "q"}
            ],
        },
    )
    cpu, memory, net = cfg.metric_specs()
    assert cpu.name == "instance:node_cpu:ratio" and cpu.query == "100 * instance:node_cpu:ratio"
    assert memory.name == "instance:node_memory_utilisation:ratio"
    assert (net.key, net.type, net.is_percent) == ("net_rx", "Bandwidth", False)


def test_token_file(tmp_path):
    token = tmp_path / "token"
    token.write_text("secret\n")
    assert load(env=URL, overrides={"prometheus_token_file": str(token)}).token() == "secret"
    with pytest.raises(ConfigError, match="prometheus_token_file"):
        load(env=URL, overrides={"prometheus_token_file": str(tmp_path / "none")}).token()


@pytest.mark.parametrize(
    "env,message",
    [
        ({}, "prometheus_url is required"),
        ({**URL, "BALLAST_POLL_INTERVAL": "soon"}, "poll_interval: cannot use 'soon'"),
        ({**URL, "BALLAST_POLL_INTERVAL": "0"}, "poll_interval: seconds > 0, not 0"),
        ({**URL, "BALLAST_PEAK_BUCKET_SECONDS": "-60"}, "peak_bucket_seconds: seconds > 0"),
        ({**URL, "BALLAST_PROVIDER": "datadog"}, "provider must be one of"),
        ({**URL, "BALLAST_QUERY_PRESET": "x"}, "query_preset must be one of"),
        ({**URL, "BALLAST_LISTEN": "nowhere"}, "listen must be HOST:PORT"),
        ({**URL, "BALLAST_INSECURE_SKIP_VERIFY": "maybe"}, "insecure_skip_verify"),
        ({"METRICS_PROVIDER_NAME": "SignalFx"}, "METRICS_PROVIDER_NAME"),
        ({**URL, "BALLAST_EXTRA_METRICS": "[{key: cpu, query: q}]"}, "used twice"),
        ({**URL, "BALLAST_EXTRA_METRICS": "[{key: x, query: q, type: Disk}]"}, "type must be"),
        ({**URL, "BALLAST_EXTRA_METRICS": "[{key: x}]"}, "needs at least"),
    ],
)
def test_errors_say_what_is_wrong(env, message):
    with pytest.raises(ConfigError, match=message):
        load(env=env)


def test_bad_config_files(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text("poll_intervall: 5\n")
    with pytest.raises(ConfigError, match="unknown settings poll_intervall"):
        load(str(path), env=URL)
    path.write_text("- a list\n")
    with pytest.raises(ConfigError, match="expected a mapping"):
        load(str(path), env=URL)
    path.write_text("a: [\n")
    with pytest.raises(ConfigError, match="config file"):
        load(str(path), env=URL)
    with pytest.raises(ConfigError, match="config file"):
        load(str(tmp_path / "missing.yaml"), env=URL)


def test_every_setting_has_an_environment_variable():
    fields = Config.__dataclass_fields__
    cfg = load(env={**URL, **{f"BALLAST_{n.upper()}": "3" for n in ("window", "lock_ttl")}})
    assert cfg.window == 3.0 and cfg.lock_ttl == 3.0 and "redis_url" in fields


def test_cli_reports_configuration_errors(monkeypatch, capsys):
    from ballast.cli import main

    monkeypatch.delenv("BALLAST_PROMETHEUS_URL", raising=False)
    monkeypatch.delenv("METRICS_PROVIDER_ADDRESS", raising=False)
    assert main(["watcher", "--listen", "127.0.0.1:1"]) == 2
    assert "prometheus_url is required" in capsys.readouterr().err
    assert main(["watcher", "--prometheus-url", "http://p", "--poll-interval", "-1"]) == 2
    assert "poll_interval: seconds > 0, not -1" in capsys.readouterr().err
    assert main(["watcher", "--prometheus-url", "http://p", "--poll-interval", "nan"]) == 2
    assert "poll_interval: seconds > 0, not nan" in capsys.readouterr().err


def test_cli_checks_store_url_and_kube_access_before_serving(monkeypatch, capsys):
    from ballast.cli import main

    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert main(["watcher", "--prometheus-url", "http://p", "--redis-url", "foo://bar"]) == 2
    assert "bad redis URL 'foo://bar'" in capsys.readouterr().err
    assert main(["watcher", "--provider", "metrics-server"]) == 2
    assert "needs --kubeconfig" in capsys.readouterr().err


# NaN passes `<= 0` and `< 0`: a NaN poll interval polls in a busy loop, a NaN window keeps no
# sample; an infinite one raises in the thread that waits (or never expires a node).
POSITIVE = ("poll_interval", "window", "lock_ttl", "provider_timeout", "profile_window",
            "pod_history_half_life", "peak_bucket_seconds")  # fmt: skip
# 0 is their default or works: no jitter, the derived horizon and expiry, a check per request.
ZERO_WORKS = ("poll_jitter", "horizon_min", "horizon_max", "expiry", "kube_refresh",
              "snapshot_check")  # fmt: skip


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
@pytest.mark.parametrize("name", POSITIVE)
def test_seconds_that_cannot_work_are_refused(name, value):
    with pytest.raises(ConfigError, match=f"{name}: seconds > 0, not {float(value):g}"):
        load(env={**URL, f"BALLAST_{name.upper()}": value})


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
@pytest.mark.parametrize("name", ZERO_WORKS)
def test_seconds_that_cannot_work_where_zero_works_are_refused(name, value):
    with pytest.raises(ConfigError, match=f"{name}: seconds >= 0, not {float(value):g}"):
        load(env={**URL, f"BALLAST_{name.upper()}": value})
    assert getattr(load(env={**URL, f"BALLAST_{name.upper()}": "0"}), name) == 0.0


@pytest.mark.parametrize("value", ["nan", "inf", "0"])
def test_a_tolerance_that_cannot_work_is_refused(value):
    # Points, not seconds: a NaN makes a volatile node's freshness horizon NaN.
    why = f"tolerance: percentage points > 0, not {float(value):g}"
    with pytest.raises(ConfigError, match=why):
        load(env={**URL, "BALLAST_TOLERANCE": value})
