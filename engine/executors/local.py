"""The default executor: this machine's cores, in worker processes forked from the caller (no Ray import).

Forked workers inherit the shared data (profile context, grid) instead of receiving it pickled: only the chunk
goes out and its result comes back. Where fork is not available, or one worker is asked for (a Streamlit server
must not fork: threads, sockets), or this process has joined Ray (its threads hold locks a forked child would
inherit and wait on forever), or there is only one chunk, the chunks run here in order.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Optional, Sequence

from engine.executors.base import ChunkFn, Progress

# (fn, shared), set in the parent just before forking and read-only in the workers, which inherit it
_JOB: Optional[tuple[ChunkFn, Any]] = None


def _run(chunk: Any) -> Any:
    fn, shared = _JOB
    return fn(shared, chunk)


def _joined_ray() -> bool:
    """Whether this process is connected to Ray (looked up without importing it: the local path never does)."""
    ray = sys.modules.get("ray")
    return bool(ray is not None and getattr(ray, "is_initialized", lambda: False)())


class LocalExecutor:
    """A fork pool of `workers` processes (default: all cores)."""

    name = "local"

    def __init__(self, workers: Optional[int] = None):
        self._workers = max(1, workers or os.cpu_count() or 1)

    @property
    def workers(self) -> int:
        return self._workers

    def parallel_for(self, n_chunks: int) -> int:
        """Processes a map over n_chunks would use (1: it runs in this process)."""
        if self._workers <= 1 or n_chunks < 2 or "fork" not in mp.get_all_start_methods() or _joined_ray():
            return 1
        return min(self._workers, n_chunks)

    def map(self, fn: ChunkFn, shared: Any, chunks: Sequence[Any], progress: Progress = None) -> list:
        global _JOB
        total = len(chunks)
        processes = self.parallel_for(total)
        out: list = []
        if processes <= 1:
            for chunk in chunks:
                out.append(fn(shared, chunk))
                if progress:
                    progress(len(out), total)
            return out
        _JOB = (fn, shared)
        try:
            with ProcessPoolExecutor(max_workers=processes, mp_context=mp.get_context("fork")) as pool:
                for part in pool.map(_run, chunks):
                    out.append(part)
                    if progress:
                        progress(len(out), total)
            return out
        finally:
            _JOB = None
