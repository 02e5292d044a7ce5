"""The annotations a pod's and a node's simulated use is written in.

The closed-loop simulator writes them once per pod and node; kwok's kubelets turn them into
resource metrics (`sandbox.peers.metrics_server.kwok_config`), so metrics-server reads the same
seeded load the exporter serves to Prometheus.
"""

USAGE_CPU = "ballast.dev/usage-cpu"
USAGE_MEMORY = "ballast.dev/usage-memory"
USAGE_SINCE = "ballast.dev/usage-since"
USAGE_RAMP = "ballast.dev/usage-ramp"
BACKGROUND_CPU = "ballast.dev/background-cpu"
BACKGROUND_MEMORY = "ballast.dev/background-memory"
BACKGROUND_WOBBLE = "ballast.dev/background-wobble"
BACKGROUND_PERIOD = "ballast.dev/background-period"
BACKGROUND_PHASE = "ballast.dev/background-phase"
