"""The rebalancer: after binding, moves pods off nodes the watcher shows hot, judged by the
scheduler's own profile (docs/rebalancer.md). It sits beside the cycle and imports the
scheduler's framework, config, backend and kube packages; nothing imports it."""
