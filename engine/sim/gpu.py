"""The batcher, the scheduler and the GPU partitions as a few simpy processes (not one per request).

One process per partition; it takes a batch from its queue (its own, or the shared one for
first-idle-first-serve, where free partitions queue for the batcher in the order they became free),
serves it, and comes back. Batch formation is engine.sim.batcher's; a static queue (open loop,
fifs or round-robin) knows every future arrival, so a partition waits exactly until its batch is
due: a handful of events per batch, none per request. JSQ and ELSA decide on arrival, so a
dispatcher process steps through the arrivals (one event per request); a closed-loop client
(single-stream, multi-stream) issues the next query when the previous one completes.
Per batch it records partition, start, the time its rule was met, end, items and requests;
per request, its batch (through the queues' segments).
"""

from __future__ import annotations

from collections import deque
from typing import Callable, Optional

import numpy as np
import simpy

from engine.sim.batcher import BatchQueue, dynamic_queue, static_queue
from engine.sim.schedulers import scheduler_for


class BatchLog:
    """What the GPU side did: per-batch columns and each request's batch number."""

    def __init__(self, part, start, formed, end, items, nreq, req_batch, arrival, ready):
        self.part, self.start, self.formed, self.end = part, start, formed, end
        self.items, self.nreq, self.req_batch = items, nreq, req_batch
        self.arrival, self.ready = arrival, ready  # closed loop: decided during the run


class GpuEngine:
    def __init__(self, *, service, caps: list[list[int]], rcap: int, tq: float, scheduler: str, sla_s: float,
                 alpha: float, beta: float, ready: np.ndarray, sizes: np.ndarray,
                 lengths: Optional[np.ndarray], width: float = 0.0, merge: bool = False,
                 closed_loop: bool = False, host_offset: Optional[np.ndarray] = None,
                 progress: Optional[Callable[[float], None]] = None, force_dynamic: bool = False):
        self.env = simpy.Environment()
        self.service, self.caps, self.rcap, self.tq = service, caps, rcap, tq
        self.n_parts = len(caps)
        self.sla_s, self.alpha, self.beta = sla_s, alpha, beta
        self.n = len(sizes)
        self.sizes, self.lengths = sizes, lengths
        self.size_l = sizes.tolist()
        self.len_l = lengths.tolist() if lengths is not None else None
        self.closed_loop = closed_loop
        self.host_offset = host_offset
        self.progress = progress
        if closed_loop:
            self.arrival_l = [0.0] * self.n
            self.ready_l = [0.0] * self.n
        else:
            self.ready_l = ready.tolist()
            self.arrival_l = None  # set by the caller (ELSA reads arrival times)
        self.sched = scheduler_for(scheduler)(self)
        self.width, self.merge = width, merge
        self.n_buckets = (int(np.max(lengths) // width) + 1) if (width > 0 and lengths is not None) else 1
        self.dynamic = force_dynamic or closed_loop or not (self.sched.shared or self.sched.static)
        self.closed = False
        self.client_ev = None
        self.lock_busy = False
        self.lock_wait: deque = deque()
        self.buckets = []
        self._build_queues(ready)
        self.b_part, self.b_start, self.b_formed, self.b_end, self.b_items, self.b_nreq = [], [], [], [], [], []
        self.seg_b, self.seg_g, self.seg_pos, self.seg_cnt = [], [], [], []

    def len_of(self, rid: int):
        return self.len_l[rid] if self.len_l is not None else None

    # -- queues ------------------------------------------------------------------------------------

    def _build_queues(self, ready) -> None:
        nq = 1 if self.sched.shared else self.n_parts
        if self.dynamic:
            unit = bool(np.all(self.sizes == 1))
            queues = [dynamic_queue(k * self.n_buckets, self.n_buckets, unit, self.lengths is not None,
                                    self.width, self.merge) for k in range(nq)]
        else:
            order = np.argsort(ready, kind="stable")
            # owner of the j-th request to reach the scheduler (ready order)
            owner = np.zeros(self.n, dtype=int) if self.sched.shared else self.sched.static_assign(self.n)
            queues = []
            for k in range(nq):
                ids = order[owner == k]
                q = static_queue(len(self.buckets), ids, ready[ids], self.sizes[ids],
                                 None if self.lengths is None else self.lengths[ids], self.width, self.merge)
                self.buckets += q.buckets
                queues.append(q)
        if self.dynamic:
            for q in queues:
                self.buckets += q.buckets
        self.queues: list[BatchQueue] = queues
        self.qof = [queues[0]] * self.n_parts if self.sched.shared else queues

    # -- processes ---------------------------------------------------------------------------------

    def _wait(self, q: BatchQueue, until: Optional[float]):
        ev = self.env.event()
        q.waiter = ev
        if until is not None:
            self.env.timeout(until - self.env.now).callbacks.append(lambda _e, ev=ev: ev.triggered or ev.succeed())
        return ev

    def _release(self) -> None:
        if self.lock_wait:
            self.lock_wait.popleft().succeed()  # ownership passes to the next free instance
        else:
            self.lock_busy = False

    def _kick(self, q: BatchQueue) -> None:
        w = q.waiter
        if w is not None and not w.triggered:
            w.succeed()

    def _arrive(self, rid: int) -> None:
        p = self.sched.assign(rid, self.env.now)
        q = self.qof[p]
        ln = self.len_l[rid] if self.len_l is not None else None
        q.buckets[q.bucket_of(ln)].append(rid, self.ready_l[rid], self.size_l[rid], ln)
        self._kick(q)

    def _partition(self, p: int):
        env, q, caps, rcap, tq = self.env, self.qof[p], self.caps[p], self.rcap, self.tq
        shared, static, svc, sched = self.sched.shared, q.static, self.service, self.sched
        tracks = sched.tracks
        b_part, b_start, b_formed, b_end = self.b_part.append, self.b_start.append, self.b_formed.append, self.b_end.append
        b_items, b_nreq = self.b_items.append, self.b_nreq.append
        seg_b, seg_g, seg_pos, seg_cnt = self.seg_b.append, self.seg_g.append, self.seg_pos.append, self.seg_cnt.append
        timeout = env.timeout
        while True:
            if shared:
                if self.lock_busy:
                    ev = env.event()
                    self.lock_wait.append(ev)
                    yield ev
                else:
                    self.lock_busy = True
            while True:
                d = q.decide(env.now, caps, rcap, tq)
                if d is None:
                    if static or self.closed:
                        if shared:
                            self._release()
                        return
                    yield self._wait(q, None)
                    continue
                td, due, j, k = d
                if td > env.now:
                    if static:
                        yield timeout(td - env.now)
                    else:
                        yield self._wait(q, td)
                        continue
                break
            now = env.now
            # env.now + (td - env.now) can land one ulp short of td: take as of the decision time, so the
            # request that was due is taken (not an empty batch)
            segs, items, longest = q.take(max(now, td), j, k, caps)
            if shared:
                self._release()
            bno = len(self.b_start)
            s = svc.sample(p, items, longest, bno)
            nreq = 0
            for g, pos, cnt in segs:
                seg_b(bno), seg_g(g), seg_pos(pos), seg_cnt(cnt)
                nreq += cnt
            b_part(p), b_start(now), b_formed(due if due < now else now), b_end(now + s), b_items(items), b_nreq(nreq)
            if tracks:
                est = svc.mean(p, items, longest)
                sched.on_take(p, items, est)
                sched.on_start(p, now, est)
            yield timeout(s)
            if tracks:
                sched.on_done(p, nreq)
            if self.client_ev is not None and not self.client_ev.triggered:
                self.client_ev.succeed()

    def _dispatcher(self, order: np.ndarray):
        env, ready = self.env, self.ready_l
        timeout, arrive = env.timeout, self._arrive
        for rid in order.tolist():
            r = ready[rid]
            if r > env.now:
                yield timeout(r - env.now)
            arrive(rid)
        self._close()

    def _client(self):
        env, off = self.env, self.host_offset
        step = max(1, self.n // 100)
        for rid in range(self.n):
            a = env.now
            self.arrival_l[rid] = a
            self.ready_l[rid] = a + off[rid]
            if off[rid] > 0:
                yield env.timeout(off[rid])
            self.client_ev = env.event()
            self._arrive(rid)
            yield self.client_ev
            if self.progress is not None and rid % step == 0:
                self.progress(rid / self.n)
        self._close()

    def _close(self) -> None:
        self.closed = True
        for q in self.queues:
            self._kick(q)

    def run(self) -> BatchLog:
        env = self.env
        for p in range(self.n_parts):
            env.process(self._partition(p))
        if self.closed_loop:
            env.process(self._client())
            env.run()
        else:
            if self.dynamic:
                env.process(self._dispatcher(np.argsort(np.asarray(self.ready_l), kind="stable")))
            horizon = max(self.ready_l) if self.ready_l else 0.0
            if self.progress is not None and horizon > 0:
                for i in range(1, 51):
                    env.run(until=max(env.now, horizon * i / 50) + 1e-12)
                    self.progress(min(0.99, i / 50))
            env.run()
        if self.progress is not None:
            self.progress(1.0)
        return self._log()

    def _log(self) -> BatchLog:
        req_batch = np.full(self.n, -1, dtype=np.int64)
        sb, sg = np.array(self.seg_b, dtype=np.int64), np.array(self.seg_g, dtype=np.int64)
        sp, sc = np.array(self.seg_pos, dtype=np.int64), np.array(self.seg_cnt, dtype=np.int64)
        for g, bucket in enumerate(self.buckets):
            sel = sg == g
            if not sel.any():
                continue
            cnt, pos, bat = sc[sel], sp[sel], sb[sel]
            tot = int(cnt.sum())
            offs = np.repeat(pos - (np.cumsum(cnt) - cnt), cnt) + np.arange(tot)
            req_batch[np.asarray(bucket.ids, dtype=np.int64)[offs]] = np.repeat(bat, cnt)
        arrival = np.array(self.arrival_l) if self.closed_loop else None
        ready = np.array(self.ready_l) if self.closed_loop else None
        return BatchLog(np.array(self.b_part, dtype=np.int64), np.array(self.b_start), np.array(self.b_formed),
                        np.array(self.b_end), np.array(self.b_items, dtype=np.int64),
                        np.array(self.b_nreq, dtype=np.int64), req_batch, arrival, ready)
