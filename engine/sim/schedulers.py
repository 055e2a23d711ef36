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

import numpy as np

from engine.scenario import SchedulerPolicy
from engine.sim.errors import SimError


class Scheduler:
    """Base: decides the partition of each request (per-partition queues) or shares one queue."""

    shared = False  # one queue for every partition (fifs)
    static = False  # the assignment can be computed before the run (round-robin)
    tracks = False  # needs on_take/on_start/on_done callbacks

    def __init__(self, eng):
        self.eng = eng
        self.n = eng.n_parts

    def static_assign(self, n_requests: int) -> np.ndarray:
        raise NotImplementedError

    def assign(self, rid: int, now: float) -> int:
        raise NotImplementedError

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

    def _drain(self, p: int, items: int) -> float:
        if items <= 0:
            return 0.0
        full, rest = divmod(items, self.cap[p])
        return full * self.full[p] + (self.eng.service.mean(p, rest) if rest else 0.0)

    def estimates(self, rid: int, now: float) -> list[tuple[float, float]]:
        """(T_wait, T_estimated,new) of request rid on every partition at time `now`."""
        eng = self.eng
        q, ln = eng.size_l[rid], eng.len_of(rid)
        out = []
        for p in range(self.n):
            rem = self.cur_end[p] - now
            rem = rem if rem > 0 else 0.0
            if self.alone:
                out.append((self.q_est[p] + rem, eng.service.mean(p, q, ln)))
            else:
                d0 = self._drain(p, self.q_items[p])
                out.append((d0 + rem, self._drain(p, self.q_items[p] + q) - d0))
        return out

    def assign(self, rid: int, now: float) -> int:
        eng = self.eng
        est = self.estimates(rid, now)
        budget = eng.sla_s - (now - eng.arrival_l[rid])
        choice = -1
        for p in self.order:  # step A: smallest partition with slack
            w, t_new = est[p]
            if budget > self.alpha * (w + self.beta * t_new):
                choice = p
                break
        if choice < 0:  # step B: fastest completion
            choice = min(range(self.n), key=lambda p: (est[p][0] + est[p][1], p))
        self.q_items[choice] += eng.size_l[rid]
        if self.alone:
            self.q_est[choice] += est[choice][1]
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
