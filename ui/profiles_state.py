"""Cached engine calls for the Profiles page (ui.compute.engine_call: keyed by its inputs and the data version)."""

from __future__ import annotations

from engine.studies.estimator import calibration_report, estimate_everywhere, loo_report
from engine.studies.profiles import compare_partitions
from ui.compute import engine_call
from ui.session import get_book


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
