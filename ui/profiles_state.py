"""Cached engine calls for the Profiles page (ui.compute.engine_call: keyed by its inputs and the data version)."""

from __future__ import annotations

from engine.studies.profiles import compare_partitions
from ui.compute import engine_call
from ui.session import get_book


@engine_call(entries=64)
def partition_view(model: str, sku: str, partitions: list[str], precision=None, input_len=None, percentile=95,
                   threshold=0.8, cross_gpu=False):
    """Cached engine.studies.profiles.compare_partitions over the current data."""
    return compare_partitions(get_book(), model, sku, list(partitions) or None, precision, input_len, percentile,
                              threshold, cross_gpu)
