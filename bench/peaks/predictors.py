"""The peak predictors and the study's two measures, as small pure functions on numpy arrays.

A predictor forecasts a node's peak use over a coming horizon from what was known before it.
Two kinds, and the difference matters to a scheduler:
- node-series predictors read the node's own summed use (`window_mean`, `percentile`,
  `n_sigma`): they cannot see a pod that is not on the node yet;
- pod-sum predictors add up per-pod (or per-workload) statistics (`rc_like`,
  `workload_spread`): a new pod's statistics, or its workload's profile, add to them, which is
  the question a scheduler asks ("the node's peak with this pod").

Rows are nodes (or pods), the last axis is time. Formulas from Bashir et al., "Take it to the
Limit" (EuroSys 2021), summarised in ../shared/reference/peak-prediction.md; `workload_spread`
is ours: replicas of one workload move together, workloads apart from each other do not.
"""

from __future__ import annotations

import numpy as np


def window_mean(history: np.ndarray) -> np.ndarray:
    """The mean of each row's samples (Ballast's node window today)."""
    return history.mean(axis=-1)


def percentile(history: np.ndarray, q: float) -> np.ndarray:
    """The q-th percentile of each row's samples (Koordinator's aggregated usage with q=95;
    with pods as rows, the per-pod figure RC-like adds up)."""
    return np.percentile(history, q, axis=-1)


def n_sigma(history: np.ndarray, n: float) -> np.ndarray:
    """Mean plus n standard deviations of each row's samples (the paper's N-sigma on a node's
    series; population deviation)."""
    return history.mean(axis=-1) + n * history.std(axis=-1)


def per_node(values: np.ndarray, node_of: np.ndarray, nodes: int) -> np.ndarray:
    """Each node's sum of its pods' values (`node_of[i]`: pod i's node)."""
    return np.bincount(node_of, weights=values, minlength=nodes)[:nodes]


def rc_like(pod_percentiles: np.ndarray, node_of: np.ndarray, nodes: int) -> np.ndarray:
    """RC-like: each node's sum of its pods' own usage percentiles. Pessimistic where pods'
    peaks do not coincide (percentiles add), exact where they do."""
    return per_node(pod_percentiles, node_of, nodes)


def workload_spread(
    pod_mean: np.ndarray,
    pod_spread: np.ndarray,
    node_of: np.ndarray,
    workload_of: np.ndarray,
    nodes: int,
    k: float,
) -> np.ndarray:
    """Per node: the sum of its pods' means plus k times their spreads combined, taking the
    replicas of one workload as moving together (their spreads add) and different workloads
    as independent (their squares add):

        sum_i mean_i + k * sqrt(sum_w (sum_{i in w, on the node} spread_i) ** 2)

    With spread = the standard deviation and k = N it is N-sigma built from pods
    (`workload-sigma`); with spread = a pod's percentile minus its mean and k = 1 it is RC-like
    with the pods' excesses combined rather than added (`workload-excess`). A new pod of
    workload w adds its mean to the first sum and its spread to w's group."""
    workloads = int(workload_of.max()) + 1 if len(workload_of) else 1
    group = np.bincount(
        node_of * workloads + workload_of, weights=pod_spread, minlength=nodes * workloads
    )[: nodes * workloads]
    combined = np.sqrt((group.reshape(nodes, workloads) ** 2).sum(axis=1))
    return per_node(pod_mean, node_of, nodes) + k * combined


def future_peak(series: np.ndarray, horizon: int) -> np.ndarray:
    """out[..., t] = the max of series[..., t : t + horizon] (the truth a forecast made at t,
    knowing samples before t, is held to); the last horizon - 1 columns are NaN."""
    steps = series.shape[-1]
    out = np.full(series.shape, np.nan)
    if horizon > steps:
        return out
    windows = np.lib.stride_tricks.sliding_window_view(series, horizon, axis=-1)
    out[..., : steps - horizon + 1] = windows.max(axis=-1)
    return out


def violation_rate(truth: np.ndarray, forecast: np.ndarray) -> float:
    """The share of points where the realised peak is above the forecast."""
    return float(np.mean(truth > forecast))


def savings(forecast: np.ndarray, requests: np.ndarray) -> float:
    """The mean over points of 1 - forecast / sum of requests: the share of requested capacity
    the forecast frees (negative where it forecasts more than was requested)."""
    return float(np.mean(1.0 - forecast / requests))


def severity(truth: np.ndarray, forecast: np.ndarray, requests: np.ndarray) -> float:
    """The mean excess of the realised peak over the forecast, as a share of the requests,
    over the violations only (0 without any)."""
    over = truth > forecast
    if not over.any():
        return 0.0
    return float(np.mean((truth - forecast)[over] / np.broadcast_to(requests, truth.shape)[over]))
