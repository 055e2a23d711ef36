"""Cached engine calls for the Profiles page (ui.compute.engine_call: keyed by its inputs and the data version)."""

from __future__ import annotations

from engine.studies.estimator import calibration_report, estimate_everywhere, loo_report
from engine.studies.profiles import compare_partitions, series_knees
from ui.compute import engine_call
from ui.session import get_book, get_store

SERIES = ["model", "sku", "partition", "precision", "framework", "input_len"]


@engine_call(entries=32)
def browse_points(models: list[str], skus: list[str], partitions: list[str], kinds: list[str]):
    """The latency points matching the Browse tab's filters (an empty filter: any), the knees of each of their
    series (engine.studies.profiles.series_knees) and the number of series."""
    points = get_store().latency_points(model=list(models) or None, sku=list(skus) or None,
                                        partition=list(partitions) or None, kind=list(kinds) or None)
    if points.empty:
        return points, None, 0
    return points, series_knees(points), points.groupby(SERIES, dropna=False).ngroups


@engine_call(entries=64)
def partition_view(model: str, sku: str, partitions: list[str], precision=None, input_len=None, percentile=95,
                   threshold=0.8, cross_gpu=False):
    """Cached engine.studies.profiles.compare_partitions over the current data."""
    return compare_partitions(get_book(), model, sku, list(partitions) or None, precision, input_len, percentile,
                              threshold, cross_gpu)


@engine_call(entries=4)
def loo_view():
    """Cached engine.studies.estimator.loo_report (the committed leave-one-out table)."""
    return loo_report()


@engine_call(entries=4, spinner="Fitting the estimator on the store's curves...")
def calibration_view():
    """Cached engine.studies.estimator.calibration_report over the current data (the fit takes seconds)."""
    return calibration_report(get_book())


@engine_call(entries=8, unkeyed=("data",))
def onnx_view(data: bytes, digest: str, name: str, precision: str, max_bytes: int):
    """An uploaded ONNX model's cost table and its estimates on every GPU and slice (cached per file `digest`)."""
    from engine.estimator.onnx_costs import costs_from_onnx

    rows = costs_from_onnx(data, name, max_bytes)
    return len(rows), estimate_everywhere(get_book(), name, rows, precision)
