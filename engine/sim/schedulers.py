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

import numpy as np

from engine.scenario import SchedulerPolicy
from engine.sim.errors import SimError


class Scheduler(ABC):
    """Base: decides the partition of each request (per-partition queues) or shares one queue."""

    shared = False  # one queue for every partition (fifs)
    static = False  # the assignment can be computed before the run (round-robin)
    tracks = False  # needs on_take/on_start/on_done callbacks

    def __init__(self, eng):
        self.eng = eng
        self.n = eng.n_parts

    def static_assign(self, n_requests: int) -> np.ndarray:
        """The partition of every request, known before the run (only schedulers with `static = True`)."""
        raise TypeError(f"{type(self).__name__} assigns requests as they arrive, not before the run")

    @abstractmethod
    def assign(self, rid: int, now: float) -> int:
        """The partition request `rid` goes to, at time `now`."""

    def on_take(self, p: int, items: int, est: float) -> None:
        pass

    def on_start(self, p: int, now: float, est: float) -> None:
        pass

    def on_done(self, p: int, nreq: int) -> None:
        pass


class Fifs(Scheduler):
    shared = True

    def assign(self, rid: int, now: float) -> int:
        return 0


class RoundRobin(Scheduler):
    static = True

    def __init__(self, eng):
        super().__init__(eng)
        self.next = 0

    def static_assign(self, n_requests: int) -> np.ndarray:
        return np.arange(n_requests) % self.n

    def assign(self, rid: int, now: float) -> int:
        p, self.next = self.next, (self.next + 1) % self.n
        return p


class JoinShortestQueue(Scheduler):
    tracks = True

    def __init__(self, eng):
        super().__init__(eng)
        self.out = [0] * self.n

    def assign(self, rid: int, now: float) -> int:
        out = self.out
        p = out.index(min(out))
        out[p] += 1
        return p

    def on_done(self, p: int, nreq: int) -> None:
        self.out[p] -= nreq


class Elsa(Scheduler):
    tracks = True

    def __init__(self, eng):
        super().__init__(eng)
        svc = eng.service
        self.order = sorted(range(self.n), key=lambda p: (svc.capacity[p], p))
        self.alpha, self.beta = eng.alpha, eng.beta
        self.q_items = [0] * self.n
        self.q_est = [0.0] * self.n
        self.cur_end = [0.0] * self.n
        self.alone = eng.rcap == 1
        self.cap = [c[0] for c in eng.caps]
        self.full = [svc.mean(p, self.cap[p]) for p in range(self.n)]
        # partial[p][i]: a batch of i < Batch_max items (0 for none)
        self.partial = [[0.0] + [svc.mean(p, i) for i in range(1, self.cap[p])] for p in range(self.n)]

    def estimates(self, rid: int, now: float) -> list[tuple[float, float]]:
        """(T_wait, T_estimated,new) of request rid on every partition at time `now` (equation 1)."""
        eng = self.eng
        return [self._estimate(p, eng.size_l[rid], eng.len_of(rid), now) for p in range(self.n)]

    def _estimate(self, p: int, q: int, ln, now: float) -> tuple[float, float]:
        """(T_wait, T_estimated,new) on partition p. With batching, Q queued items are priced as full
        Batch_max batches plus one partial batch, and the new query as the increase of that price."""
        rem = self.cur_end[p] - now
        if rem < 0:
            rem = 0.0
        if self.alone:
            return self.q_est[p] + rem, self.eng.service.mean(p, q, ln)
        cap, x, part, full = self.cap[p], self.q_items[p], self.partial[p], self.full[p]
        f0, r0 = divmod(x, cap)
        f1, r1 = divmod(x + q, cap)
        return f0 * full + part[r0] + rem, (f1 - f0) * full + part[r1] - part[r0]

    def assign(self, rid: int, now: float) -> int:
        eng = self.eng
        q, ln = eng.size_l[rid], eng.len_of(rid)
        budget = eng.sla_s - (now - eng.arrival_l[rid])
        alpha, beta = self.alpha, self.beta
        choice, best, seen = -1, None, []
        for p in self.order:  # step A: the smallest partition with slack
            w, t_new = self._estimate(p, q, ln, now)
            if budget > alpha * (w + beta * t_new):
                choice = p
                break
            seen.append((w + t_new, p, t_new))
        else:  # step B: the fastest completion
            best = min(seen)
            choice, t_new = best[1], best[2]
        self.q_items[choice] += q
        if self.alone:
            self.q_est[choice] += t_new
        return choice

    def on_take(self, p: int, items: int, est: float) -> None:
        self.q_items[p] -= items
        if self.alone:
            self.q_est[p] = max(0.0, self.q_est[p] - est)

    def on_start(self, p: int, now: float, est: float) -> None:
        self.cur_end[p] = now + est


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
