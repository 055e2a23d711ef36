"""Chunk functions that break their Ray worker on purpose (imported by the workers, hence a module of its own)."""

import os

from engine.search import run


def dies_once(shared, bounds):
    """The search's chunk, but the worker running chunk 1 first kills its own process (once, via a marker file)."""
    grid, ctx, marker = shared
    if bounds[0] > 0 and not os.path.exists(marker):
        with open(marker, "x"):
            pass
        os._exit(1)
    return run._chunk((grid, ctx), bounds)


def always_dies(shared, chunk):
    """Chunk 2 kills its worker every time: that chunk can never finish."""
    if chunk == 2:
        os._exit(1)
    return chunk
