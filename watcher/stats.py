"""Window statistics per node, vectorised over all nodes at once."""

from __future__ import annotations

import warnings

import numpy as np

FIELDS = ("avg", "std", "min", "max", "p95", "latest", "count", "first", "last", "volatility")


def nan_quantile(values: np.ndarray, q: float) -> np.ndarray:
    """Per-column quantile ignoring NaN, numpy's "linear" method, for all columns at once.

    numpy's nanpercentile loops over columns in Python; sorting once is ~100x faster here.
    """
    ordered = np.sort(values, axis=0)  # NaN sorts last
    count = (~np.isnan(values)).sum(axis=0)
    pos = np.maximum(count - 1, 0) * q
    lo = np.floor(pos).astype(np.intp)
    hi = np.ceil(pos).astype(np.intp)
    cols = np.arange(values.shape[1])
    low, high = ordered[lo, cols], ordered[hi, cols]
    out = low + (high - low) * (pos - lo)
    out[count == 0] = np.nan
    return out


def summarize(times: np.ndarray, values: np.ndarray) -> dict[str, np.ndarray]:
    """Statistics of each column of `values` (F samples x N nodes, NaN = no sample).

    `volatility` is the median absolute rate of change between consecutive samples, in units
    per second: robust against one spike or one step, 0 when there are fewer than two samples.
    Columns without any sample get count 0 and NaN elsewhere.
    """
    frames, n = values.shape
    valid = ~np.isnan(values)
    count = valid.sum(axis=0)
    out: dict[str, np.ndarray] = {"count": count}
    if frames == 0:
        nan = np.full(n, np.nan)
        return {f: (count if f == "count" else nan) for f in FIELDS}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns are expected
        out["avg"] = np.nanmean(values, axis=0)
        out["std"] = np.nanstd(values, axis=0)
        out["min"] = np.nanmin(values, axis=0)
        out["max"] = np.nanmax(values, axis=0)
        out["p95"] = nan_quantile(values, 0.95)
        if frames > 1:
            dt = np.diff(times)[:, None]
            dt[dt <= 0] = np.nan
            rates = np.abs(np.diff(values, axis=0)) / dt
            volatility = nan_quantile(rates, 0.5)
        else:
            volatility = np.full(n, np.nan)
    out["volatility"] = np.nan_to_num(volatility, nan=0.0)
    cols = np.arange(n)
    first_idx = valid.argmax(axis=0)
    last_idx = frames - 1 - valid[::-1].argmax(axis=0)
    has = count > 0
    out["latest"] = np.where(has, values[last_idx, cols], np.nan)
    out["first"] = np.where(has, times[first_idx], np.nan)
    out["last"] = np.where(has, times[last_idx], np.nan)
    return out
