"""The Ray executor: chunks as Ray tasks on a cluster (or a Ray started on this machine).

Imported only when a user picks `--executor ray` (engine.executors.make_executor): the app and the local executor
never import Ray. The shared data (profile context, design grid) goes into the object store once per map
(`ray.put`) and every task gets its reference; a worker process fetches it on its first chunk and keeps it, so a
worker pays for it once, not per task. Chunks come back as they finish (progress), and are put in order.

Failures: a task whose worker process dies is re-run by Ray (TASK_MAX_RETRIES); a chunk whose worker, node or
result was lost beyond that is resubmitted up to CHUNK_RETRIES times; a chunk still missing after that, a cluster
that stops answering, or one left without CPUs ends the run with an ExecutorError naming the missing chunks,
never a partial answer.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import time
from typing import Any, Optional, Sequence

import ray
import ray.exceptions as rex

from engine.executors.base import ChunkFn, ExecutorError, Progress, missing_chunks_message
from engine.executors.ray_node import OBJECT_STORE_BYTES

#: Ray's own re-runs of a task whose worker process died
TASK_MAX_RETRIES = 3
#: our resubmissions of a chunk after a lost worker, node or object (each resubmission gets Ray's retries again)
CHUNK_RETRIES = 2
#: seconds to open a TCP connection to the cluster's address before ray.init (an unreachable address fails fast)
CONNECT_TIMEOUT_S = 10.0
#: how often a waiting map checks that the cluster is still there, in seconds
POLL_S = 1.0
#: how long a map waits on a cluster with no CPUs (a node restarting) before giving up, in seconds
NO_CPU_GRACE_S = 30.0
#: shared objects a worker process keeps (the last maps' contexts and grids)
WORKER_CACHE_ENTRIES = 2

#: the errors that mean a chunk's worker, node or result was lost, not that the chunk's own code failed
LOST = (rex.WorkerCrashedError, rex.NodeDiedError, rex.ObjectLostError, rex.LocalRayletDiedError,
        rex.ActorDiedError, rex.TaskUnschedulableError)

_WORKER_CACHE: dict[str, Any] = {}  # in a worker process: shared data by object id


def _shared(box: list) -> Any:
    """The shared data of a map, fetched from the object store on this process's first chunk of it."""
    ref = box[0]
    key = ref.hex()
    if key not in _WORKER_CACHE:
        while len(_WORKER_CACHE) >= WORKER_CACHE_ENTRIES:
            del _WORKER_CACHE[next(iter(_WORKER_CACHE))]
        _WORKER_CACHE[key] = ray.get(ref)
    return _WORKER_CACHE[key]


@ray.remote(max_retries=TASK_MAX_RETRIES)
def _run_chunk(fn: ChunkFn, box: list, chunk: Any) -> Any:
    # the reference travels inside a list so that Ray does not resolve it per task: _shared caches it per process
    return fn(_shared(box), chunk)


def _host_port(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ExecutorError(f"--ray-address: expected HOST:PORT (or 'auto'), got {address!r}")
    return host.strip("[]"), int(port)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _keep_loopback() -> None:
    """Ray replaces 127.0.0.1 with this machine's routable address (so other machines can reach it). A cluster on
    loopback (one machine, the tests) must stay there: Ray's switch for that is ENABLE_RAY_CLUSTER, read when an
    address is resolved. engine.executors.ray_node starts nodes the same way."""
    import ray._private.ray_constants as ray_constants

    ray_constants.ENABLE_RAY_CLUSTER = False


def _reachable(address: str, timeout: float) -> Optional[str]:
    """None when a TCP connection to HOST:PORT opens, else why not (one line)."""
    host, port = _host_port(address)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as e:
        return e.strerror or type(e).__name__


def _draining(node_id: str) -> bool:
    """Whether the GCS lists the node as draining (ray._private: not a public API, so any failure means no)."""
    try:
        from ray._private.state import state

        return node_id in state.get_draining_nodes()
    except Exception:  # noqa: BLE001 - a private API that may change: never fail a run because of it
        return False


class RayExecutor:
    """Chunks as Ray tasks. address: HOST:PORT of a cluster's head (its GCS), 'auto' (the cluster running on this
    machine, or RAY_ADDRESS), or None (start a Ray on this machine, all its cores)."""

    name = "ray"

    def __init__(self, address: Optional[str] = None):
        self.address = address or None
        self.task_retries, self.chunk_retries = TASK_MAX_RETRIES, CHUNK_RETRIES
        self._gcs: Optional[str] = None
        self._put: Optional[tuple[Any, Any]] = None  # (shared object, its reference): one ray.put per object

    @property
    def where(self) -> str:
        return f"the Ray cluster at {self._gcs or self.address}" if (self._gcs or self.address) else "the local Ray"

    def connect(self) -> None:
        """Join the cluster (or start a local Ray) unless this process already has."""
        if ray.is_initialized():
            self._gcs = self._gcs or ray.get_runtime_context().gcs_address
            return
        kw = dict(logging_level="ERROR", log_to_driver=False, include_dashboard=False)
        if self.address is None:  # a Ray of this machine's cores, on loopback, for this process only
            _keep_loopback()
            # a new local Ray turns on token auth and writes ~/.ray/auth_token, after which every `ray start` on this
            # machine wants a token that drivers joining by address do not send; nothing but loopback reaches it
            os.environ.setdefault("RAY_AUTH_MODE", "disabled")
            target = "local"
            kw.update(object_store_memory=OBJECT_STORE_BYTES)
        elif self.address == "auto":
            target = "auto"
        else:
            host, _ = _host_port(self.address)
            why = _reachable(self.address, CONNECT_TIMEOUT_S)
            if why:
                raise ExecutorError(f"cannot reach the Ray cluster at {self.address}: {why}")
            if _is_loopback(host):
                _keep_loopback()
            target = self.address
        try:
            ray.init(address=target, **kw)
        except (ConnectionError, RuntimeError, ValueError) as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise ExecutorError(f"cannot join the Ray cluster at {self.address}: {first}") from None
        self._gcs = ray.get_runtime_context().gcs_address

    def shutdown(self) -> None:
        """Leave the cluster (a local Ray this process started stops with it)."""
        self._put = None
        if ray.is_initialized():
            ray.shutdown()

    @property
    def workers(self) -> int:
        self.connect()
        return max(1, int(ray.cluster_resources().get("CPU", 1)))

    def parallel_for(self, n_chunks: int) -> int:
        return max(1, min(self.workers, n_chunks))

    def _shared_ref(self, shared: Any) -> list:
        if self._put is None or self._put[0] is not shared:
            self._put = (shared, ray.put(shared))
        return [self._put[1]]

    def _alive(self, since_cpu: list) -> Optional[str]:
        """None while the cluster answers and has CPUs, else why the run cannot finish."""
        if self._gcs and _reachable(self._gcs, POLL_S):
            return "the cluster went away"
        if _draining(ray.get_runtime_context().get_node_id()):
            # this process's node is shutting down: when its raylet stops, Ray ends this process outright (no
            # Python error to catch), so say what is missing now
            return "the cluster is shutting down (this driver's node is draining)"
        if ray.cluster_resources().get("CPU", 0) > 0:
            since_cpu[0] = time.monotonic()
        elif time.monotonic() - since_cpu[0] > NO_CPU_GRACE_S:
            return f"no CPUs left in the cluster for {NO_CPU_GRACE_S:g} s"
        return None

    def map(self, fn: ChunkFn, shared: Any, chunks: Sequence[Any], progress: Progress = None) -> list:
        self.connect()
        total = len(chunks)
        box = self._shared_ref(shared)
        results: list = [None] * total
        attempts = [0] * total
        failed: dict[int, str] = {}
        task = _run_chunk.options(max_retries=self.task_retries)
        pending = {task.remote(fn, box, chunks[k]): k for k in range(total)}
        done, since_cpu = 0, [time.monotonic()]
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=POLL_S)
            if not ready:
                why = self._alive(since_cpu)
                if why:
                    self._cancel(pending)
                    raise ExecutorError(missing_chunks_message(self.where, sorted(pending.values()), total, why))
                continue
            for ref in ready:
                k = pending.pop(ref)
                try:
                    results[k] = ray.get(ref)
                except LOST as e:
                    attempts[k] += 1
                    if attempts[k] <= self.chunk_retries:
                        pending[task.remote(fn, box, chunks[k])] = k
                    else:
                        failed[k] = type(e).__name__
                    continue
                except rex.RayTaskError as e:  # the chunk's own code raised: raise what it raises locally
                    self._cancel(pending)
                    raise (e.cause if isinstance(e.cause, Exception) else e) from None
                done += 1
                if progress:
                    progress(done, total)
        if failed:
            reasons = ", ".join(sorted(set(failed.values())))
            raise ExecutorError(missing_chunks_message(self.where, sorted(failed), total,
                                                       f"lost {self.chunk_retries + 1} times ({reasons})"))
        return results

    @staticmethod
    def _cancel(pending: dict) -> None:
        for ref in pending:
            try:
                ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001 - best effort: the cluster may already be gone
                pass
