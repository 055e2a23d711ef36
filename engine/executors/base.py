"""The executor seam: how the project's parallel work (design search, rate sweeps, the simulator's confirmation of
top designs) is spread over processes or machines.

Every parallel job has the same shape: data every task reads (the profile context, the design grid: large, shipped
once) and a list of chunks (index ranges, rates: small, one per task). `Executor.map(fn, shared, chunks)` returns
`[fn(shared, chunk) for chunk in chunks]` in chunk order, however it is computed, so a caller's answer does not
depend on where it ran. `fn` must be a module-level function (it is sent by reference to other processes).
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Protocol, Sequence, runtime_checkable

from engine.errors import KneepointError

#: the executors a user can name (CLI --executor, the Search page)
EXECUTOR_NAMES = ("local", "ray")

ChunkFn = Callable[[Any, Any], Any]
Progress = Optional[Callable[[int, int], None]]  # (chunks done, chunks in all), called as chunks finish


class ExecutorError(KneepointError):
    """Parallel work could not be done where it was asked to run (no Ray, an unreachable cluster, chunks lost);
    the message names the executor, the address and any chunks that are missing."""


@runtime_checkable
class Executor(Protocol):
    """Runs fn(shared, chunk) for every chunk; results come back in chunk order."""

    #: "local" or "ray"
    name: str

    @property
    def workers(self) -> int:
        """How many tasks can run at once (processes here, CPUs of a cluster): reported with a result."""

    def parallel_for(self, n_chunks: int) -> int:
        """How many of n_chunks can run at once here (1: they run in the calling process)."""

    def map(self, fn: ChunkFn, shared: Any, chunks: Sequence[Any], progress: Progress = None) -> list:
        """[fn(shared, c) for c in chunks], in order. ExecutorError names the chunks that could not be computed."""


def missing_chunks_message(where: str, missing: Sequence[int], total: int, reason: str) -> str:
    """One line naming the chunks a run could not finish (at most 20 listed)."""
    shown = ", ".join(str(k) for k in missing[:20]) + (" ..." if len(missing) > 20 else "")
    return f"{where}: {len(missing)} of {total} chunk(s) did not finish (chunks {shown}): {reason}"
