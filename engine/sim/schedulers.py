"""Scheduling across GPU partitions. One signature per policy, looked up by SchedulerPolicy.

- fifs (first-idle-first-serve): one shared queue; free instances take turns at the batcher in the
  order they became free (PARIS's FIFS baseline; Triton's dynamic batcher over instances).
- round-robin: request i goes to partition i mod n (decided in advance: static queues).
- jsq (join-shortest-queue): on arrival, the partition with the fewest outstanding requests
  (queued + running), lowest index on ties.
- elsa (PARIS section IV-C, Algorithm 2): per-partition queues. For each partition,
  T_wait = sum of the profiled estimates of the queued work + the remaining estimated time of the
  running batch (equation 1), from the mean service table (the profiled lookup, no jitter). With
  batching, queued work of Q items is priced as full Batch_max batches plus one partial batch, and
  T_estimated,new is the increase of that estimate when the query joins. Step A: partitions in
  ascending order of size (saturated items/s), the first with slack = SLA - elapsed -
  alpha (T_wait + beta T_estimated,new) > 0 gets the query (equation 2; the SLA budget is what is
  left of the end-to-end SLA after the host stages). Step B, if none: the partition with the
  smallest T_wait + T_estimated,new.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Optional, Protocol

import numpy as np

from engine.sim.errors import SimError
from engine.vocab import SchedulerPolicy


class ServiceModel(Protocol):
    """What a scheduler knows of the partitions' speed (engine.sim.service.GpuService)."""

    capacity: list[float]  # saturated items/s per partition

    def mean(self, partition: int, items: int, length: Optional[float] = None) -> float: ...


@dataclass(frozen=True, slots=True)
class SchedulerView:
    """All a scheduler may read of the run: built once by the GPU side (engine.sim.gpu), never the engine itself.

    The request columns are the run's own lists, indexed by request number; a closed loop fills `arrivals`
    in as it issues each query, before the query reaches the scheduler."""

    n_partitions: int
    service: ServiceModel
    batch_max: list[int]  # per partition (its first length bucket)
    request_cap: int  # most requests per batch (1: each query runs alone)
    sla_s: float  # the end-to-end SLA (ELSA subtracts the time a request has already spent)
    alpha: float  # ELSA's weight on the estimated wait
    beta: float  # ELSA's weight on the new query's own estimate
    sizes: list[int]  # items per query
    lengths: Optional[list[float]]  # input lengths (variable-length models), else None
    arrivals: Optional[list[float]]  # arrival times (ELSA: the time already spent counts against the SLA)


class Scheduler(ABC):
    """Base: decides the partition of each request (per-partition queues) or shares one queue."""

    shared = False  # one queue for every partition (fifs)
    static = False  # the assignment can be computed before the run (round-robin)
    tracks = False  # needs on_take/on_start/on_done callbacks

    def __init__(self, view: SchedulerView):
        self.n_partitions = view.n_partitions

    def static_assign(self, n_requests: int) -> np.ndarray:
        """The partition of every request, known before the run (only schedulers with `static = True`)."""
        raise TypeError(f"{type(self).__name__} assigns requests as they arrive, not before the run")

    @abstractmethod
    def assign(self, request: int, now: float) -> int:
        """The partition request number `request` goes to, at time `now`."""

    def on_take(self, partition: int, items: int, estimate_s: float) -> None:
        """A batch of `items`, estimated to take estimate_s, left the partition's queue."""

    def on_start(self, partition: int, now: float, estimate_s: float) -> None:
        """That batch started on the partition."""

    def on_done(self, partition: int, n_requests: int) -> None:
        """A batch of n_requests finished on the partition."""


class Fifs(Scheduler):
    shared = True

    def assign(self, request: int, now: float) -> int:
        return 0


class RoundRobin(Scheduler):
    static = True

    def __init__(self, view: SchedulerView):
        super().__init__(view)
        self.next = 0

    def static_assign(self, n_requests: int) -> np.ndarray:
        return np.arange(n_requests) % self.n_partitions

    def assign(self, request: int, now: float) -> int:
        partition, self.next = self.next, (self.next + 1) % self.n_partitions
        return partition


class JoinShortestQueue(Scheduler):
    tracks = True

    def __init__(self, view: SchedulerView):
        super().__init__(view)
        self.outstanding = [0] * self.n_partitions  # queued + running requests per partition

    def assign(self, request: int, now: float) -> int:
        outstanding = self.outstanding
        partition = outstanding.index(min(outstanding))
        outstanding[partition] += 1
        return partition

    def on_done(self, partition: int, n_requests: int) -> None:
        self.outstanding[partition] -= n_requests


class Elsa(Scheduler):
    tracks = True

    def __init__(self, view: SchedulerView):
        super().__init__(view)
        n, service = self.n_partitions, view.service
        self.service = service
        self.sla_s, self.alpha, self.beta = view.sla_s, view.alpha, view.beta
        self.sizes, self.lengths, self.arrivals = view.sizes, view.lengths, view.arrivals
        self.order = sorted(range(n), key=lambda p: (service.capacity[p], p))  # ascending size
        self.queued_items = [0] * n
        self.queued_estimate = [0.0] * n  # s of queued work (one query per batch only)
        self.running_until = [0.0] * n  # estimated end of the running batch
        self.alone = view.request_cap == 1  # one query per batch: queued work is the sum of its estimates
        self.batch_max = list(view.batch_max)
        self.full = [service.mean(p, self.batch_max[p]) for p in range(n)]
        # partial[p][i]: a batch of i < Batch_max items (0 for none)
        self.partial = [[0.0] + [service.mean(p, i) for i in range(1, self.batch_max[p])] for p in range(n)]

    def _length(self, request: int) -> Optional[float]:
        return self.lengths[request] if self.lengths is not None else None

    def estimates(self, request: int, now: float) -> list[tuple[float, float]]:
        """(T_wait, T_estimated,new) of a request on every partition at time `now` (equation 1)."""
        size, length = self.sizes[request], self._length(request)
        return [self._estimate(p, size, length, now) for p in range(self.n_partitions)]

    def _estimate(self, partition: int, size: int, length, now: float) -> tuple[float, float]:
        """(T_wait, T_estimated,new) on a partition. With batching, Q queued items are priced as full
        Batch_max batches plus one partial batch, and the new query as the increase of that price."""
        remaining = self.running_until[partition] - now
        if remaining < 0:
            remaining = 0.0
        if self.alone:
            return self.queued_estimate[partition] + remaining, self.service.mean(partition, size, length)
        batch_max, queued = self.batch_max[partition], self.queued_items[partition]
        partial, full = self.partial[partition], self.full[partition]
        full_before, rest_before = divmod(queued, batch_max)
        full_after, rest_after = divmod(queued + size, batch_max)
        return (full_before * full + partial[rest_before] + remaining,
                (full_after - full_before) * full + partial[rest_after] - partial[rest_before])

    def assign(self, request: int, now: float) -> int:
        size, length = self.sizes[request], self._length(request)
        budget = self.sla_s - (now - self.arrivals[request])
        alpha, beta = self.alpha, self.beta
        seen = []
        for partition in self.order:  # step A: the smallest partition with slack
            wait, t_new = self._estimate(partition, size, length, now)
            if budget > alpha * (wait + beta * t_new):
                choice = partition
                break
            seen.append((wait + t_new, partition, t_new))
        else:  # step B: the fastest completion
            _, choice, t_new = min(seen)
        self.queued_items[choice] += size
        if self.alone:
            self.queued_estimate[choice] += t_new
        return choice

    def on_take(self, partition: int, items: int, estimate_s: float) -> None:
        self.queued_items[partition] -= items
        if self.alone:
            self.queued_estimate[partition] = max(0.0, self.queued_estimate[partition] - estimate_s)

    def on_start(self, partition: int, now: float, estimate_s: float) -> None:
        self.running_until[partition] = now + estimate_s


SCHEDULERS: dict[SchedulerPolicy, type[Scheduler]] = {
    SchedulerPolicy.FIFS: Fifs,
    SchedulerPolicy.ROUND_ROBIN: RoundRobin,
    SchedulerPolicy.JSQ: JoinShortestQueue,
    SchedulerPolicy.ELSA: Elsa,
}


def scheduler_for(name: str) -> type[Scheduler]:
    """The scheduler class for a policy name; an unknown name lists the valid ones."""
    try:
        return SCHEDULERS[SchedulerPolicy(name)]
    except ValueError:
        raise SimError(f"scheduler {name!r} is unknown; valid: {', '.join(p.value for p in SchedulerPolicy)}") from None
