"""The batcher, the scheduler and the GPU partitions: a few simpy processes (not one per request), and the same
steps as plain event loops where no process waits on another's event (open loop).

One process per partition; it takes a batch from its queue (its own, or the shared one for
first-idle-first-serve, where free partitions queue for the batcher in the order they became free),
serves it, and comes back. Batch formation is engine.sim.batcher's; a static queue (open loop,
fifs or round-robin) knows every future arrival, so a partition waits exactly until its batch is
due: a handful of events per batch, none per request. JSQ and ELSA decide on arrival, so a
dispatcher process steps through the arrivals (one event per request); a closed-loop client
(single-stream, multi-stream) issues the next query when the previous one completes.
Per batch it records partition, start, the time its rule was met, end, items and requests;
per request, its batch (through the queues' segments).

Which runs where: a closed loop (a client waits for each query) and a shared queue filled as requests arrive
run the simpy processes; every other run takes the same steps on one heap of (time, order) events, scheduled in
the order simpy would give them event ids, so ties break the same way and a seed gives the same result either way
(engine.sim.loops: run_static for first-idle over a static queue and round-robin; loop_dynamic for JSQ, ELSA).
use_simpy forces the processes (tests compare the two).

Inputs: a GpuSpec (the partitions' service, batching rules and scheduler; one per design) and GpuRequests
(the run's requests as they reach the batcher).
"""

from __future__ import annotations

from array import array
from collections import deque
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
import simpy

from engine.sim.batcher import BatchQueue, dynamic_queue, static_queue
from engine.sim.loop_dynamic import loop_dynamic
from engine.sim.loops import run_static
from engine.sim.plan import GpuPlan
from engine.sim.schedulers import SchedulerView, scheduler_for


REPEAT_CHUNK = 1 << 13  # batches whose request numbers are written at a time (GpuEngine._log)


@dataclass(frozen=True, slots=True)
class GpuSpec:
    """The GPU side of a design: how each partition serves a batch, how batches form, who gets a request."""

    service: object  # mean(p, items, length), sample(p, items, length, batch number), capacity[p] (GpuService)
    plan: GpuPlan  # Batch_max per partition and length bucket, request cap, Time_queue, buckets
    scheduler: str = "fifs"  # a SchedulerPolicy value
    sla_s: float = float("inf")  # the end-to-end SLA, for ELSA
    alpha: float = 1.0  # ELSA's weights (engine.sim.schedulers)
    beta: float = 1.0


@dataclass(frozen=True, slots=True)
class GpuRequests:
    """The run's requests, indexed by request number.

    Open loop: `ready` is when each reaches the batcher and `arrival` when it arrived (ELSA reads it; None
    when no scheduler needs it). Closed loop (single-stream, multi-stream): the client issues each query
    when the previous one completes, so `ready` holds the host stages' time from that moment and `arrival`
    is left None: both are decided during the run (BatchLog.arrival, BatchLog.ready)."""

    ready: np.ndarray
    sizes: np.ndarray  # items per query
    lengths: Optional[np.ndarray] = None  # input lengths (variable-length models)
    arrival: Optional[np.ndarray] = None
    closed_loop: bool = False
    ready_order: Optional[np.ndarray] = None  # np.argsort(ready, kind="stable") where known (else computed)


@dataclass(frozen=True, slots=True)
class BatchLog:
    """What the GPU side did: per-batch columns (indexed by batch number) and each request's batch number."""

    partition: np.ndarray
    start: np.ndarray
    formed: np.ndarray  # when its rule was met (full or timed out), at most its start
    end: np.ndarray
    items: np.ndarray
    n_requests: np.ndarray
    request_batch: np.ndarray  # per request
    arrival: Optional[np.ndarray]  # per request, closed loop only: decided during the run
    ready: Optional[np.ndarray]


class GpuEngine:
    """One run of the GPU side: GpuEngine(spec, requests).run() -> BatchLog."""

    def __init__(self, spec: GpuSpec, requests: GpuRequests, *,
                 progress: Optional[Callable[[float], None]] = None, force_dynamic: bool = False,
                 use_simpy: bool = False):
        """force_dynamic: queue requests as they arrive even where every arrival is known in advance (tests
        check the two paths agree); use_simpy: run the simpy processes even where the plain event loop would
        (tests check the loop takes the same steps)."""
        self.env = simpy.Environment()
        self.spec, plan = spec, spec.plan
        self.service = spec.service
        self.n_partitions = len(plan.batch_max)
        self.n_requests = len(requests.sizes)
        self.requests = requests
        self.progress = progress
        self.closed_loop = requests.closed_loop
        scheduler_class = scheduler_for(spec.scheduler)
        self.dynamic = force_dynamic or self.closed_loop or not (scheduler_class.shared or scheduler_class.static)
        # plain lists where requests are handled one at a time (dynamic queues, the simpy processes), which numpy
        # arrays index slowly; static queues hold their own (engine.sim.batcher.static_queue)
        per_request = self.dynamic or use_simpy
        self.sizes = requests.sizes.tolist() if per_request else None
        self.lengths = requests.lengths.tolist() if per_request and requests.lengths is not None else None
        self.host_offset = None
        if self.closed_loop:
            self.host_offset = requests.ready.tolist()
            self.arrival = [0.0] * self.n_requests
            self.ready = [0.0] * self.n_requests
        else:
            self.arrival = requests.arrival.tolist() if per_request and requests.arrival is not None else None
            self.ready = requests.ready.tolist() if per_request else None
        self.scheduler = scheduler_class(SchedulerView(
            n_partitions=self.n_partitions, service=spec.service, batch_max=[caps[0] for caps in plan.batch_max],
            request_cap=plan.request_cap, sla_s=spec.sla_s, alpha=spec.alpha, beta=spec.beta, sizes=self.sizes,
            lengths=self.lengths, arrivals=self.arrival))
        lengths = requests.lengths
        self.n_buckets = (int(np.max(lengths) // plan.bucket_width) + 1
                          if (plan.bucket_width > 0 and lengths is not None) else 1)
        # simpy processes where they interact (closed loop: a client and the partitions; a shared queue that
        # fills as requests arrive), else a plain event loop of the same steps (use_simpy: always the processes)
        self.use_simpy = use_simpy or self.closed_loop or (self.dynamic and self.scheduler.shared)
        self.closed = False  # no request is still to come
        self.query_done = None  # closed loop: the event of the query in flight completing
        # first-idle-first-serve: one partition at a time at the shared queue, the others wait in line
        self.batcher_busy = False
        self.batcher_line: deque = deque()
        self.buckets = []  # every queue's buckets, numbered as Bucket.index
        self._build_queues()
        # the batch log, one entry per batch
        # typed arrays (8 bytes an entry, no float objects): an unbatched run logs as many batches as requests
        self.batch_partition, self.batch_items, self.batch_requests = array("q"), array("q"), array("q")
        self.batch_start, self.batch_formed, self.batch_end = array("d"), array("d"), array("d")
        # its segments (Segment: bucket, position, count) with their batch number, to map requests to batches
        self.segment_batch, self.segment_bucket = array("q"), array("q")
        self.segment_position, self.segment_count = array("q"), array("q")
        self.in_order: Optional[list[int]] = None
        # per partition, the one bucket its batches took in order (they logged no segments), or None

    # -- queues ------------------------------------------------------------------------------------

    def _build_queues(self) -> None:
        plan, requests, shared = self.spec.plan, self.requests, self.scheduler.shared
        n_queues = 1 if shared else self.n_partitions
        if self.dynamic:
            unit = bool(np.all(requests.sizes == 1))
            queues = [dynamic_queue(index * self.n_buckets, self.n_buckets, unit, requests.lengths is not None,
                                    plan.bucket_width, plan.merge) for index in range(n_queues)]
            for queue in queues:
                self.buckets += queue.buckets
        else:
            ready = requests.ready
            order = requests.ready_order if requests.ready_order is not None else np.argsort(ready, kind="stable")
            # owner of the j-th request to reach the scheduler (ready order); a shared queue takes them all
            owner = None if shared else self.scheduler.static_assign(self.n_requests)
            queues = []
            for index in range(n_queues):
                ids = order if owner is None else order[owner == index]
                queue = static_queue(len(self.buckets), ids, ready, requests.sizes, requests.lengths,
                                     plan.bucket_width, plan.merge)
                self.buckets += queue.buckets
                queues.append(queue)
        self.queues: list[BatchQueue] = queues
        self.queue_of = [queues[0]] * self.n_partitions if shared else queues  # per partition

    # -- processes ---------------------------------------------------------------------------------

    def _wait(self, queue: BatchQueue, until: Optional[float]):
        """An event that fires on the next arrival to the queue, or at `until`."""
        event = self.env.event()
        queue.waiter = event
        if until is not None:
            self.env.timeout(until - self.env.now).callbacks.append(
                lambda _timeout, event=event: event.triggered or event.succeed())
        return event

    def _release_batcher(self) -> None:
        if self.batcher_line:
            self.batcher_line.popleft().succeed()  # ownership passes to the next free instance
        else:
            self.batcher_busy = False

    def _kick(self, queue: BatchQueue) -> None:
        waiter = queue.waiter
        if waiter is not None and not waiter.triggered:
            waiter.succeed()

    def _arrive(self, request: int) -> None:
        queue = self.queue_of[self.scheduler.assign(request, self.env.now)]
        length = self.lengths[request] if self.lengths is not None else None
        queue.buckets[queue.bucket_of(length)].append(request, self.ready[request], self.sizes[request], length)
        self._kick(queue)

    def _partition(self, partition: int):
        """One partition: take a batch when its rule is met, serve it, come back."""
        env, queue, service, scheduler = self.env, self.queue_of[partition], self.service, self.scheduler
        plan = self.spec.plan
        batch_max, request_cap, time_queue_s = plan.batch_max[partition], plan.request_cap, plan.time_queue_s
        shared, static, tracks = scheduler.shared, queue.static, scheduler.tracks
        # bound once: attribute lookups per batch add up over a million requests (simpy's bind_early idea)
        log_partition, log_start = self.batch_partition.append, self.batch_start.append
        log_formed, log_end = self.batch_formed.append, self.batch_end.append
        log_items, log_requests = self.batch_items.append, self.batch_requests.append
        log_segment_batch, log_segment_bucket = self.segment_batch.append, self.segment_bucket.append
        log_segment_position, log_segment_count = self.segment_position.append, self.segment_count.append
        timeout, decide, take, sample = env.timeout, queue.decide, queue.take, service.sample
        while True:
            if shared:  # wait for our turn at the shared queue
                if self.batcher_busy:
                    turn = env.event()
                    self.batcher_line.append(turn)
                    yield turn
                else:
                    self.batcher_busy = True
            while True:
                decision = decide(env.now, batch_max, request_cap, time_queue_s)
                if decision is None:
                    if static or self.closed:
                        if shared:
                            self._release_batcher()
                        return
                    yield self._wait(queue, None)
                    continue
                leave_at, rule_met_at, bucket, request_limit = decision
                if leave_at > env.now:
                    if static:
                        yield timeout(leave_at - env.now)
                    else:  # an arrival may fill the batch before its timeout: decide again then
                        yield self._wait(queue, leave_at)
                        continue
                break
            now = env.now
            # env.now + (leave_at - env.now) can land one ulp short of leave_at: take as of the decision time,
            # so the request that was due is taken (not an empty batch)
            segments, items, longest = take(max(now, leave_at), bucket, request_limit, batch_max)
            if shared:
                self._release_batcher()
            number = len(self.batch_start)
            service_s = sample(partition, items, longest, number)
            n_requests = 0
            for segment_bucket, position, count in segments:
                log_segment_batch(number), log_segment_bucket(segment_bucket)
                log_segment_position(position), log_segment_count(count)
                n_requests += count
            log_partition(partition), log_start(now), log_formed(rule_met_at if rule_met_at < now else now)
            log_end(now + service_s), log_items(items), log_requests(n_requests)
            if tracks:
                estimate = service.mean(partition, items, longest)
                scheduler.on_take(partition, items, estimate)
                scheduler.on_start(partition, now, estimate)
            yield timeout(service_s)
            if tracks:
                scheduler.on_done(partition, n_requests)
            if self.query_done is not None and not self.query_done.triggered:
                self.query_done.succeed()

    def _dispatcher(self, order: np.ndarray):
        """Open loop, dynamic queues: hand each request to the scheduler when it reaches the batcher."""
        env, ready = self.env, self.ready
        timeout, arrive = env.timeout, self._arrive  # bound once: one call per request
        for request in order.tolist():
            ready_at = ready[request]
            if ready_at > env.now:
                yield timeout(ready_at - env.now)
            arrive(request)
        self._close()

    def _client(self):
        """Closed loop: issue each query when the previous one completes."""
        env, offset = self.env, self.host_offset
        step = max(1, self.n_requests // 100)
        for request in range(self.n_requests):
            issued = env.now
            self.arrival[request] = issued
            self.ready[request] = issued + offset[request]
            if offset[request] > 0:
                yield env.timeout(offset[request])
            self.query_done = env.event()
            self._arrive(request)
            yield self.query_done
            if self.progress is not None and request % step == 0:
                self.progress(request / self.n_requests)
        self._close()

    def _close(self) -> None:
        self.closed = True
        for queue in self.queues:
            self._kick(queue)

    def run(self) -> BatchLog:
        if not self.use_simpy:
            if self.dynamic:
                loop_dynamic(self)
            else:
                run_static(self)
            if self.progress is not None:
                self.progress(1.0)
            return self._log()
        env = self.env
        for partition in range(self.n_partitions):
            env.process(self._partition(partition))
        if self.closed_loop:
            env.process(self._client())
            env.run()
        else:
            if self.dynamic:
                env.process(self._dispatcher(np.argsort(np.asarray(self.ready), kind="stable")))
            horizon = max(self.ready) if self.ready else 0.0
            if self.progress is not None and horizon > 0:
                for step in range(1, 51):
                    env.run(until=max(env.now, horizon * step / 50) + 1e-12)
                    self.progress(min(0.99, step / 50))
            env.run()
        if self.progress is not None:
            self.progress(1.0)
        return self._log()

    def _log(self) -> BatchLog:
        request_batch = np.full(self.n_requests, -1, dtype=np.int64)
        n_requests = _column(self.batch_requests, np.int64)
        if self.in_order is not None:  # batch k took the next n_requests[k] requests of its partition's bucket
            shared = len(set(self.in_order)) == 1  # every batch took from the one bucket (first-idle)
            bucket_of_batch = None if shared else \
                np.asarray(self.in_order, dtype=np.int64)[np.asarray(self.batch_partition)]
            for index in dict.fromkeys(self.in_order):
                if shared:  # no per-batch lookups: an unbatched run logs a batch per request
                    batches, counts = np.arange(len(n_requests)), n_requests
                else:
                    batches = np.flatnonzero(bucket_of_batch == index)
                    counts = n_requests[batches]
                taken = np.asarray(self.buckets[index].ids[:int(counts.sum())], dtype=np.int64)
                # a stretch of batches at a time: the repeated batch numbers stay in cache, not a new array of a
                # value per request (a fresh process pays for every page it touches first)
                ends = np.cumsum(counts)
                for first in range(0, len(batches), REPEAT_CHUNK):
                    last = min(len(batches), first + REPEAT_CHUNK)
                    at = int(ends[first - 1]) if first else 0
                    request_batch[taken[at:int(ends[last - 1])]] = np.repeat(batches[first:last], counts[first:last])
        batch = np.array(self.segment_batch, dtype=np.int64)
        bucket_of = np.array(self.segment_bucket, dtype=np.int64)
        position = np.array(self.segment_position, dtype=np.int64)
        count_of = np.array(self.segment_count, dtype=np.int64)
        for index, bucket in enumerate(self.buckets):
            chosen = bucket_of == index
            if not chosen.any():
                continue
            counts, starts, batches = count_of[chosen], position[chosen], batch[chosen]
            total = int(counts.sum())
            # positions in the bucket of every request its segments took, in segment order
            offsets = np.repeat(starts - (np.cumsum(counts) - counts), counts) + np.arange(total)
            request_batch[np.asarray(bucket.ids, dtype=np.int64)[offsets]] = np.repeat(batches, counts)
        arrival = np.array(self.arrival) if self.closed_loop else None
        ready = np.array(self.ready) if self.closed_loop else None
        return BatchLog(partition=_column(self.batch_partition, np.int64), start=_column(self.batch_start, np.float64),
                        formed=_column(self.batch_formed, np.float64), end=_column(self.batch_end, np.float64),
                        items=_column(self.batch_items, np.int64),
                        n_requests=n_requests, request_batch=request_batch,
                        arrival=arrival, ready=ready)


def _column(values, dtype) -> np.ndarray:
    """A log column as a numpy array: a view of a typed array's buffer (no copy: an unbatched run logs a batch per
    request), or a copy of a list."""
    if isinstance(values, array):
        return np.frombuffer(values, dtype=dtype) if len(values) else np.zeros(0, dtype=dtype)
    return np.asarray(values, dtype=dtype)
