"""Every default of the watcher, in one place (docs/watcher.md lists them)."""

LISTEN = ":2020"  # every address, IPv4 and IPv6 (shared/listen.py)
WORKERS = 2
THREADS = 4  # per gunicorn worker (gthread), so keep-alive clients are served concurrently

POLL_INTERVAL = 15.0  # seconds between polls
POLL_JITTER = 0.5  # seconds of random delay added to each poll
BACKOFF_MAX = 60.0  # seconds; the longest pause after repeated store failures

WINDOW = 300.0  # seconds of samples kept per node and metric
WINDOW_NAME = "5m"  # the window's duration as the load-watcher envelope spells it

STALENESS_TOLERANCE = 5.0  # percentage points a value may drift before it is no longer fresh
HORIZON_MIN_POLLS = 2.0  # the freshness horizon is never shorter than this many poll intervals
# expiry defaults to the window length; horizon's upper bound defaults to the expiry

LOCK_TTL = 15.0  # seconds a poller's leadership lasts unless renewed

KEY_PREFIX = "ballast:watcher:"
REDIS_TIMEOUT = 2.0  # seconds, socket connect and read
SNAPSHOT_CHECK = 0.25  # seconds between an API worker's checks for a newer snapshot

PROVIDER = "prometheus"
PROVIDER_TIMEOUT = 10.0  # seconds per provider request
NODE_LABEL = "instance"
RATE_RANGE = "1m"  # the range of rate() in the default CPU query
QUERY_PRESET = "node-exporter"
KUBE_REFRESH = 60.0  # seconds between refreshes of the Node list used for name mapping
WARM_START = True

# Pod usage (cAdvisor's series, as kubelets expose them) and workload profiles.
POD_USAGE = True
POD_CPU_QUERY = (
    'sum by (namespace, pod) (irate(container_cpu_usage_seconds_total{container!="",'
    'container!="POD",pod!=""}[$range]))'
)
POD_MEMORY_QUERY = (
    'sum by (namespace, pod) (container_memory_working_set_bytes{container!="",'
    'container!="POD",pod!=""})'
)
PROFILE_WINDOW = 3600.0  # seconds of per-replica samples a workload profile spans
MAX_PROFILES = 100_000  # workload revisions kept (the least recently seen go first)
# Per-pod statistics for the peak model (watcher/podstats.py): the history's samples weigh half
# as much every this many seconds (12 h: a sample a day old still weighs a quarter; the offline
# peak study found a day's history of each pod's own use safest, docs/peak-model.md).
POD_HISTORY_HALF_LIFE = 43_200.0
# The peak model's maxima (watcher/podstats.py, watcher/nodepeaks.py) are kept one per bucket of
# this many seconds, 24 buckets per pod and 72 per node: an hour each, a day and three days.
PEAK_BUCKET_SECONDS = 3600.0

# GPUs from NVIDIA's dcgm-exporter (watcher/gpus.py, docs/gpu.md): its metric names, one series
# per device whatever pods share it. `$label` is gpu_node_label, the label naming the node. A
# MIG instance is a device of its own (GPU_I_ID, GPU_I_PROFILE): the device plugin hands out
# instances, and each has its own framebuffer. DCGM has no DCGM_FI_DEV_GPU_UTIL for an instance;
# its graphics engine's activity (a 0-1 ratio, a profiling counter) stands for it.
GPU_METRICS = True
GPU_NODE_LABEL = "Hostname"
_GPU_BY = "max by ($label, gpu, UUID, modelName, GPU_I_ID, GPU_I_PROFILE)"
GPU_UTIL_QUERY = (
    f'{_GPU_BY} (100 * DCGM_FI_PROF_GR_ENGINE_ACTIVE{{GPU_I_ID!=""}} or DCGM_FI_DEV_GPU_UTIL)'
)
GPU_FB_USED_QUERY = f"{_GPU_BY} (DCGM_FI_DEV_FB_USED)"
GPU_FB_FREE_QUERY = f"{_GPU_BY} (DCGM_FI_DEV_FB_FREE)"
# The pod mapping's labels: which pods use which device ("" turns per-pod GPU use off). On
# framebuffer use, which every device has, a MIG instance too.
GPU_POD_QUERY = 'count by ($label, gpu, GPU_I_ID, namespace, pod) (DCGM_FI_DEV_FB_USED{pod!=""})'
