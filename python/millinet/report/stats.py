"""Statistics over a results table: means with Student-t intervals per parameter point,
and ratios of paired arms with percentile-bootstrap intervals over seeds."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

LEVEL = 0.95
BOOTSTRAP_SAMPLES = 4000
BOOTSTRAP_SEED = 20240601  # fixed: a report of the same store shows the same intervals


def aggregate(df: pd.DataFrame, metrics: Iterable[str], by: Sequence[str]) -> pd.DataFrame:
    """One row per group of equal `by` values and metric, over the runs with status "ok":
    columns `by`..., `metric`, `n` (runs with a value), `mean`, `ci_low`, `ci_high` (95%
    interval of the mean, Student t with n-1 degrees of freedom; NaN when n < 2)."""
    by = list(by)
    rows = []
    for keys, group in _groups(_ok(df), by):
        for metric in metrics:
            values = group[metric].dropna().to_numpy(dtype=float)
            rows.append({**dict(zip(by, keys)), "metric": metric, "n": len(values), **_t_interval(values)})
    return pd.DataFrame(rows, columns=[*by, "metric", "n", "mean", "ci_low", "ci_high"])


def paired_ratios(
    df: pd.DataFrame, pairing: str | Mapping | object, metric: str, parameters: Sequence[str] | None = None
) -> pd.DataFrame:
    """Treatment over baseline for `metric` at every point, over the seeds both arms ran.

    `pairing` is a pairing name of the sweep (from `df.attrs["sweep"]`, set by
    millinet.store.load), a millinet.sweep.Pairing or a dict with `baseline` and
    `treatment` arms. Rows pair up when they are equal in every parameter column except
    the keys either arm sets, and in seed. `ratio` = mean(treatment) / mean(baseline) over
    the paired seeds, `n` the number of pairs, [`ci_low`, `ci_high`] a 95% percentile
    bootstrap interval resampling the pairs (seeds), NaN when n < 2. `parameters` (the
    parameter columns) defaults to the sweep's, from `df.attrs`."""
    meta = df.attrs.get("sweep", {})
    baseline, treatment = _arms(pairing, meta)
    if parameters is None:
        if "parameters" not in meta:
            raise ValueError("the table has no sweep metadata (millinet.store.load sets it): pass parameters=[...]")
        parameters = meta["parameters"]
    arm_keys = {key for arm in (baseline, treatment) for key in meta.get("arm_keys", {}).get(arm, [])}
    point = [p for p in parameters if p not in arm_keys]
    ok = _ok(df)
    sides = [ok.loc[ok["arm"] == arm, [*point, "seed", metric]] for arm in (baseline, treatment)]
    pairs = sides[0].merge(sides[1], on=[*point, "seed"], suffixes=("_base", "_treat")).dropna(
        subset=[f"{metric}_base", f"{metric}_treat"]
    )
    rows = []
    for keys, group in _groups(pairs, point):
        ratio = _ratio_interval(group[f"{metric}_base"].to_numpy(float), group[f"{metric}_treat"].to_numpy(float))
        rows.append({**dict(zip(point, keys)), **ratio, "n": len(group)})
    return pd.DataFrame(rows, columns=[*point, "ratio", "ci_low", "ci_high", "n"])


def _arms(pairing: str | Mapping | object, meta: dict) -> tuple[str, str]:
    if isinstance(pairing, str):
        named = {p["name"]: p for p in meta.get("pairings", [])}
        if pairing not in named:
            raise ValueError(f"unknown pairing {pairing!r}; the sweep's pairings: {', '.join(named) or 'none'}")
        pairing = named[pairing]
    if isinstance(pairing, Mapping):
        return pairing["baseline"], pairing["treatment"]
    return pairing.baseline, pairing.treatment


def _ok(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["status"] == "ok"] if "status" in df.columns else df


def _groups(df: pd.DataFrame, by: list[str]):
    """(key tuple, rows) per group in order of appearance; missing values form groups too."""
    if not by:
        return [((), df)] if len(df) else []
    return df.groupby(by, sort=False, dropna=False)


def _t_interval(values: np.ndarray) -> dict[str, float]:
    n = len(values)
    mean = values.mean() if n else np.nan
    if n < 2:
        return {"mean": mean, "ci_low": np.nan, "ci_high": np.nan}
    half = stats.t.ppf(0.5 + LEVEL / 2, n - 1) * values.std(ddof=1) / np.sqrt(n)
    return {"mean": mean, "ci_low": mean - half, "ci_high": mean + half}


def _ratio_interval(base: np.ndarray, treat: np.ndarray) -> dict[str, float]:
    ratio = _mean_ratio(base, treat)
    if len(base) < 2:
        return {"ratio": ratio, "ci_low": np.nan, "ci_high": np.nan}
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    picks = rng.integers(0, len(base), size=(BOOTSTRAP_SAMPLES, len(base)))
    resampled = _mean_ratio(base[picks], treat[picks], axis=1)
    low, high = np.nanpercentile(resampled, [50 * (1 - LEVEL), 50 * (1 + LEVEL)])
    return {"ratio": ratio, "ci_low": low, "ci_high": high}


def _mean_ratio(base: np.ndarray, treat: np.ndarray, axis: int | None = None):
    """mean(treat) / mean(base); NaN where the baseline mean is 0."""
    denominator = base.mean(axis=axis)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator != 0, treat.mean(axis=axis) / denominator, np.nan)[()]
