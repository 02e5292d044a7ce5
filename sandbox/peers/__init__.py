"""The upstream peers Ballast is measured against or works beside, one subpackage each with its
Go main and build pin: Trimaran, Koordinator, the descheduler, metrics-server, Thanos,
VictoriaMetrics, load-watcher, kube-scheduler and helm."""
