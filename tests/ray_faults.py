"""Chunk functions that break their Ray worker on purpose (imported by the workers, hence a module of its own)."""

import os
import time

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


def square_where(marker_dir, chunk):
    """chunk squared, after leaving a file named after the chunk and the node running it (the test waits on those
    files to know a node is busy before it kills that node)."""
    import ray

    open(os.path.join(marker_dir, f"{chunk}-{ray.get_runtime_context().get_node_id()}"), "w").close()
    time.sleep(0.2)  # long enough that a node is killed while it holds chunks
    return chunk * chunk
