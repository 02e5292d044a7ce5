"""HTTP: the metrics/health server and kube-scheduler's extender API."""
