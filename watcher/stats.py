"""Window statistics per node, vectorised over all nodes at once."""

from __future__ import annotations

import warnings

import numpy as np

FIELDS = ("avg", "std", "min", "max", "p95", "latest", "count", "first", "last", "volatility")


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
        out["p95"] = np.nanpercentile(values, 95, axis=0)
        if frames > 1:
            dt = np.diff(times)[:, None]
            dt[dt <= 0] = np.nan
            rates = np.abs(np.diff(values, axis=0)) / dt
            volatility = np.nanmedian(rates, axis=0)
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
