# Ballast: `make demo` and `make test` are the whole set-up; every step below is idempotent.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
BALLAST := $(VENV)/bin/ballast

.PHONY: all deps venv lock sandbox-build kube-scheduler-build trimaran-build helm-build victoriametrics-build thanos-build koordinator-build manifests metrics-server-build lint test fuzz demo demo-up bench-watcher bench-scheduler bench-scheduler-5000 bench-scheduler-perf bench-placement bench-placement-gpu bench-profiles bench-peaks bench-rebalance bench-drift-check bench-rebalance-defaults bench-rebalance-rounds bench-scheduler-cache bench-scheduler-startup bench-scheduler-loop bench-scheduler-inprocess bench-plots bench-headline chaos clean container-deps image test-containers compose-test kubelet-build loadwatcher-build

all: test

deps:
	@hack/install-deps.sh

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test]'
	touch $@

venv: $(VENV)/.installed

# Builds (once, cached in .cache/) the pinned upstream components the sandbox runs.
sandbox-build: deps venv
	$(BALLAST) sandbox build

# actionlint checks the release workflow, which cannot run here (docs/deploy.md); a small Go
# build from the module proxy, cached beside the sandbox's binaries.
ACTIONLINT_VERSION := v1.7.7
ACTIONLINT := $(or $(BALLAST_CACHE_DIR),.cache)/bin/actionlint-$(ACTIONLINT_VERSION)

$(ACTIONLINT):
	mkdir -p $(dir $@)
	d=$$(mktemp -d) && GOBIN=$$d go install github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION) && mv $$d/actionlint $@ && rmdir $$d

lint: venv $(ACTIONLINT)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(ACTIONLINT) .github/workflows/*.yaml

# The differential test (tests/integration/test_differential.py) runs upstream kube-scheduler.
kube-scheduler-build: sandbox-build
	$(BALLAST) sandbox build --with-kube-scheduler

# Upstream Trimaran for the interop test and the placement benchmark; after the build above,
# never beside it: one heavy Go build at a time.
trimaran-build: kube-scheduler-build
	$(BALLAST) sandbox build --with-trimaran

# metrics-server for the watcher's metrics-server tests, `ballast sandbox up --with-metrics-server`
# and `--source metrics-server`; after the builds above, never beside them.
metrics-server-build: trimaran-build
	$(BALLAST) sandbox build --with-metrics-server

# helm (pinned in sandbox/cluster/versions.py) for the chart's tests and `make manifests`. `make test`
# lists it after the other builds, so it never runs beside them.
helm-build: sandbox-build
	$(BALLAST) sandbox build --with-helm

# Koordinator's koord-scheduler and koord-descheduler (pinned in sandbox/cluster/versions.py) for the
# peer's tests and benchmarks; after every other build, never beside them.
koordinator-build: metrics-server-build helm-build
	$(BALLAST) sandbox build --with-koordinator

# VictoriaMetrics single node (pinned in sandbox/cluster/versions.py), the watcher's other PromQL store
# in its tests; after the other builds, never beside them.
victoriametrics-build: metrics-server-build helm-build
	$(PY) -m sandbox.peers.victoriametrics

# Thanos (querier and sidecar, pinned in sandbox/cluster/versions.py) for the watcher's partial-answer
# tests; after the other builds, never beside them.
thanos-build: victoriametrics-build
	$(PY) -m sandbox.peers.thanos

# requirements.lock: the image's dependencies (pyproject.toml's), pinned with the sha256 of every
# file PyPI has for them, so the Dockerfile's `pip install --require-hashes` takes nothing else.
lock: $(VENV)/.installed
	$(VENV)/bin/pip install -q pip-tools
	$(VENV)/bin/pip-compile --quiet --generate-hashes --strip-extras --no-emit-index-url \
		--no-emit-find-links --output-file=requirements.lock pyproject.toml

# paypal/load-watcher (pinned in sandbox/cluster/versions.py) for its interop test and the
# benchmarks' Trimaran-as-deployed rows; after every other build, never beside them.
loadwatcher-build: koordinator-build thanos-build
	$(PY) -m sandbox.peers.loadwatcher

# k8s/ballast.yaml is charts/ballast rendered with k8s/values.yaml; a test checks it is current.
manifests: helm-build
	$(PY) -m sandbox.peers.helm.chart

test: sandbox-build kube-scheduler-build trimaran-build metrics-server-build helm-build victoriametrics-build thanos-build koordinator-build loadwatcher-build lint
	$(VENV)/bin/pytest -q -p no:cacheprovider

# The fuzzers of `make test`, longer: the watcher's API (schemathesis), the scheduler's inputs.
fuzz: sandbox-build
	BALLAST_FUZZ_EXAMPLES=300 BALLAST_FUZZ_SECONDS=300 $(VENV)/bin/pytest -q -p no:cacheprovider \
		tests/integration/test_watcher_fuzz.py tests/unit/test_scheduler_fuzz.py

# SOURCE=metrics-server: the watcher reads metrics-server instead of Prometheus.
demo: sandbox-build $(if $(filter metrics-server,$(SOURCE)),metrics-server-build)
	$(BALLAST) demo $(if $(SOURCE),--source $(SOURCE))

demo-up: sandbox-build
	$(BALLAST) demo --keep-running

bench-watcher: sandbox-build $(VENV)/.bench-installed
	$(PY) -m bench.watcher $(BENCH_ARGS)

# 1,000 nodes: plain pods (3 rounds), then Deployment-like pods with anti-affinity and a zone
# spread (1 round); results in bench/results/scheduler*.json. With BENCH_ARGS (--quick: 200
# nodes, one round, bench/results/scheduler-quick.json) one run of bench.scheduler instead.
# Every benchmark refuses a tree with uncommitted changes (bench/harness/runguard.py): BENCH_ARGS
# may say --allow-dirty, and ALLOW_DIRTY=1 says it to each run of this sequence.
bench-scheduler: kube-scheduler-build $(VENV)/.bench-installed
ifdef BENCH_ARGS
	$(PY) -m bench.scheduler $(BENCH_ARGS)
else
	$(PY) -m bench.scheduler $(DIRTY)
	$(PY) -m bench.scheduler --workload spread --rounds 1 $(DIRTY)
	# What recording decisions (`ballast explain`) costs: Ballast with it and without it, then
	# in-process CPU per cycle and the store's memory at 10,000 pods on 5,000 nodes.
	$(PY) -m bench.scheduler --only ballast ballast-no-record --out bench/results/scheduler-recording-1000.json $(DIRTY)
	$(PY) -m bench.scheduler.explain_cost $(DIRTY)
endif
DIRTY = $(if $(ALLOW_DIRTY),--allow-dirty)

# The constrained workload at 5,000 nodes, Ballast (without and with the peak model) beside
# kube-scheduler (issue 45: ballast-peak CPU per pod at most kube-scheduler's); BENCH_ARGS come
# last, so they can change any of these (--allow-dirty, --out, a smaller --nodes to try it).
bench-scheduler-5000: kube-scheduler-build $(VENV)/.bench-installed
	$(PY) -m bench.scheduler --nodes 5000 --workload spread --rounds 1 --only ballast ballast-peak kube-scheduler $(BENCH_ARGS)

# kube-scheduler's own test/integration/scheduler_perf workloads, read from the Go module cache
# (k8s.io/kubernetes@v1.34.x), Ballast beside kube-scheduler and the raw bind loop, a fresh
# sandbox per workload: BENCH_ARGS=--quick runs the 500-node entries (about 15 minutes);
# results and a plot in bench/results/scheduler-perf-*.{json,png}, docs/scheduler.md.
bench-scheduler-perf: kube-scheduler-build $(VENV)/.bench-installed
	$(PY) -m bench.scheduler.perf $(BENCH_ARGS)

# The scheduler's cache at 5,000 nodes and 50,000 bound pods: time to ready and to the first
# bind after a restart, CPU and RSS, Ballast beside kube-scheduler (about 3 minutes);
# bench/results/scheduler-cache-5000-50000.json.
bench-scheduler-cache: kube-scheduler-build $(VENV)/.bench-installed
	$(PY) -m bench.scheduler.cache $(BENCH_ARGS)

# The scheduler's start-up CPU and how much of it is imports; bench/results/scheduler-startup.json.
# BENCH_ARGS="--source before=DIR --source after=. --nodes 500 --kube-scheduler" compares trees.
bench-scheduler-startup: kube-scheduler-build $(VENV)/.bench-installed
	$(PY) -m bench.scheduler.startup $(BENCH_ARGS)

# The scheduling loop in process, no API server: CPU per pod and a digest of the placements
# (printed; seconds). BENCH_ARGS="--preempt 60" runs PreemptionAsync's preemptors instead.
bench-scheduler-loop: $(VENV)/.bench-installed
	$(PY) -m bench.scheduler.loop $(BENCH_ARGS)

# One of scheduler_perf's shapes on the filter and score passes alone (printed; seconds);
# BENCH_ARGS names the shape and its options, topology by default.
bench-scheduler-inprocess: $(VENV)/.bench-installed
	$(PY) -m bench.scheduler.inprocess $(or $(BENCH_ARGS),topology)

$(VENV)/.bench-installed: $(VENV)/.installed pyproject.toml
	$(VENV)/bin/pip install -q -e '.[test,bench]'
	touch $@

# Koordinator's koord-scheduler is built into .cache/ on first use (a contender since issue 34).
# BENCH_ARGS=--quick: one seed of every scenario in a shorter shape, seven contenders (about 13
# minutes from a fresh clone, an estimate printed by its --help and docs/benchmarks.md);
# BENCH_ARGS="--source metrics-server": the watcher reads metrics-server.
bench-placement: trimaran-build metrics-server-build koordinator-build loadwatcher-build $(VENV)/.bench-installed
	$(PY) -m bench.placement $(BENCH_ARGS)

# The gpu-shared scenario (docs/gpu.md): training and inference pods on time-sliced GPUs,
# Ballast with GpuLoad against kube-scheduler and Trimaran. BENCH_ARGS=--quick: one seed.
bench-placement-gpu: trimaran-build loadwatcher-build $(VENV)/.bench-installed
	$(PY) -m bench.placement.gpu $(BENCH_ARGS)

# What workload profiles cost at 50,000 pods (5,000 Deployments x 10 replicas, every ring full):
# bytes per pod in Redis (on a throwaway redis-server) and in the watcher, a pod poll, the
# scheduler's parsed copy and one estimate; results in bench/results/profiles.json.
bench-profiles: deps $(VENV)/.bench-installed
	$(PY) -m bench.profiles $(BENCH_ARGS)

# The offline peak study (docs/peaks.md): every peak predictor against what each node then
# used, on the Bitbrains trace, no sandbox (a few minutes, numpy); bench/results/peaks.{json,png}.
# BENCH_ARGS="--trace PATH" where the trace is not beside the checkout.
bench-peaks: $(VENV)/.bench-installed
	$(PY) -m bench.peaks $(BENCH_ARGS)

# Rebalancers side by side (none, Ballast's, upstream descheduler, koord-descheduler) on drift,
# hot-start, stable and the trace; builds the descheduler and Koordinator into .cache/ on first use.
# BENCH_ARGS="--seeds 1" for one seed; BENCH_ARGS=--quick: one seed of every scenario shortened,
# five contenders (about 12 minutes, an estimate printed by its --help). In full: 5 seeds, the
# trace's 6 windows, eight contenders, about 133 minutes by the same estimate (issue 44: 150).
bench-rebalance: sandbox-build $(VENV)/.bench-installed
	$(PY) -m bench.rebalance $(BENCH_ARGS)

# Issue 33's closed-loop drift check of the rebalancer with its default settings (about 10
# minutes a seed, 3 seeds by default as issue 46 asks, so not in `make test`): one node's
# background rises to 90 %; exits 1 when a criterion fails in any seed;
# bench/results/drift-check.json. BENCH_ARGS="--seed N": one seed.
bench-drift-check: sandbox-build $(VENV)/.bench-installed
	$(PY) -m bench.rebalance.drift_check $(BENCH_ARGS)

# The rule that picks the rebalancer's defaults, applied to the committed results (a table).
bench-rebalance-defaults: $(VENV)/.bench-installed
	$(PY) -m bench.rebalance.defaults bench/results/rebalance.json

# The README's headline tables (placement, rebalancing) written again from bench/results/ between
# their markers: per scenario mean (worst window), the A/A spread, ahead/tie/behind by the rule
# (bench/harness/headline.py; tests/unit/test_readme_numbers.py checks them). Nothing is run.
bench-headline: $(VENV)/.bench-installed
	$(PY) -m bench.harness.headline --write README.md $(BENCH_ARGS)

# A rebalancer round's planning in process at 1,000, 2,000 and 5,000 nodes (CPU per round and
# per hot node, sampling on and off) and where the scheduler's cycle puts each planned
# replacement against the judge's prediction; no sandbox (minutes). BENCH_ARGS=--quick: 200 and
# 500 nodes (seconds). bench/results/rebalance-rounds.{json,png} (317 s), docs/rebalancer.md.
bench-rebalance-rounds: $(VENV)/.bench-installed
	$(PY) -m bench.rebalance.rounds $(BENCH_ARGS)

# Every picture in bench/results/ drawn again from the results beside it, each family's own
# plot; nothing is run (seconds).
bench-plots: $(VENV)/.bench-installed
	$(PY) -m bench.placement --plot bench/results/placement.json
	$(PY) -m bench.placement.gpu --plot bench/results/placement-gpu.json
	$(PY) -m bench.rebalance --plot bench/results/rebalance.json
	$(PY) -m bench.rebalance.rounds --plot bench/results/rebalance-rounds.json
	$(PY) -m bench.scheduler --plot bench/results/scheduler-backlog-budget.json
	$(PY) -m bench.scheduler.perf --table bench/results/scheduler-perf-quick-idlegc.json
	$(PY) -m bench.chaos --plot bench/results/chaos.json
	$(PY) -m bench.watcher.plot --nodes 20000

# Faults under load: 20 pods/s, ten faults three times each (about 10 minutes); figures in
# bench/results/chaos.json, explained in docs/chaos.md. A reduced run is part of `make test`.
chaos: sandbox-build $(VENV)/.bench-installed
	$(PY) -m bench.chaos $(CHAOS_ARGS)

# Debian's packages for the targets below (podman, runc, CNI plugins, mmdebstrap,
# podman-compose), installed only when missing.
container-deps:
	@hack/install-container-deps.sh

# ballast:<chart appVersion> (IMAGE=name:tag) from the Dockerfile, and ballast-redis,
# ballast-prometheus and ballast-node-exporter (:bookworm) from images/, on bases made from
# Debian's bookworm packages (BASE=public: the files' public bases instead). Podman, else docker
# or nerdctl; fails, saying so, where none works. The base tarballs are cached in .cache/images/.
image: container-deps
	@hack/image.sh

# The sandbox's real node (sandbox/cluster/realnode.py): the kubelet and kube-proxy from
# sandbox/cluster/kubelet, then CoreDNS from sandbox/cluster/coredns; after the sandbox's build,
# never beside another.
kubelet-build: sandbox-build
	$(PY) -m sandbox.cluster.realnode

# The images run for real (tests/containers/): read-only and non-root, compose.yaml against the
# sandbox, a pod and the chart on a real kubelet. Not in `make test`'s 30 minutes: `.ci/run`
# runs it after.
test-containers: image venv sandbox-build helm-build kubelet-build
	$(VENV)/bin/pytest -q -p no:cacheprovider tests/containers

# compose.yaml brought up with the local images against a sandbox apiserver, then torn down.
compose-test: image venv sandbox-build
	$(VENV)/bin/pytest -q -p no:cacheprovider tests/containers/test_compose.py

clean:
	-$(BALLAST) sandbox down
	rm -rf .state
