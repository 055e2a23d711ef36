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
(_loop_shared: first-idle over a static queue; _loop_each: round-robin; _loop_dynamic: JSQ, ELSA). use_simpy
forces the processes (tests compare the two).

Inputs: a GpuSpec (the partitions' service, batching rules and scheduler; one per design) and GpuRequests
(the run's requests as they reach the batcher).
"""

from __future__ import annotations

import bisect
import heapq
import math
from array import array
from collections import deque
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
import simpy

from engine.sim.batcher import BatchQueue, dynamic_queue, static_queue
from engine.sim.plan import GpuPlan
from engine.sim.schedulers import SchedulerView, scheduler_for


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


def _sampler(service) -> Callable:
    """The service's sample(partition, items, longest, batch number), bound once per run where it offers that."""
    return service.sampler() if hasattr(service, "sampler") else service.sample


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
            order = np.argsort(ready, kind="stable")
            # owner of the j-th request to reach the scheduler (ready order)
            owner = np.zeros(self.n_requests, dtype=int) if shared else self.scheduler.static_assign(self.n_requests)
            queues = []
            for index in range(n_queues):
                ids = order[owner == index]
                queue = static_queue(len(self.buckets), ids, ready[ids], requests.sizes[ids],
                                     None if requests.lengths is None else requests.lengths[ids],
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

    # -- static queues: a plain event loop ----------------------------------------------------------

    def _run_static(self) -> None:
        """Open loop with static queues (fifs, round-robin): every arrival is known, so the partitions only
        ever wait for a time, never for each other's events, and a heap of (time, order) replaces simpy.

        The same steps in the same order as the simpy processes (_partition): times are the same floats
        (a wait of leave_at - now lands at now + (leave_at - now)), ties go the way simpy's event ids
        send them (the order events were scheduled), and batch numbers (which pick the service draws)
        follow the order batches are taken."""
        if self.scheduler.shared:
            if self.spec.plan.request_cap == 1 and len(self.queues[0].buckets) == 1:
                self._loop_unbatched()
            else:
                self._loop_shared()
        else:
            self._loop_each()

    def _horizon(self) -> float:
        """When the last request reaches the batcher (s): the event loops report progress against it."""
        ready = self.requests.ready
        return float(ready.max()) if len(ready) else 0.0

    def _loop_unbatched(self) -> None:
        """_loop_shared with one request per batch (no batching, first-idle): batch k is the k-th request to
        reach the batcher, due when it arrives, so the loop only picks the partition and times the batch; the
        columns that follow from that (items, one request each, when its rule was met) are filled in after."""
        bucket, service = self.queues[0].buckets[0], self.service
        ready, lengths = bucket.ready, bucket.lengths
        known = len(ready)
        items_of = self.requests.sizes[bucket.ids]
        items = None
        sample = _sampler(service)
        # every batch's service time at once where the partition does not change it (a homogeneous layout)
        times = service.unbatched_times(items_of) if hasattr(service, "unbatched_times") else None
        if times is None and not np.all(items_of == 1):
            items = items_of.tolist()
        if times is not None:
            as_array = array("d")
            as_array.frombytes(memoryview(np.ascontiguousarray(times)).cast("B"))  # 8 bytes a batch
            times = as_array
        log_partition, log_start, log_end = self.batch_partition.append, self.batch_start.append, self.batch_end.append
        free = [(0.0, partition, partition) for partition in range(self.n_partitions)]  # (time, order, partition)
        order, released = self.n_partitions, 0.0
        replace = heapq.heapreplace
        progress, horizon = self.progress, self._horizon()
        next_at = horizon / 50 if horizon > 0 else math.inf  # the next progress report
        for number in range(known):
            now, _, partition = free[0]
            if now < released:
                now = released
            due = ready[number]
            if due > now:
                now = now + (due - now)
            service_s = times[number] if times is not None else sample(
                partition, 1 if items is None else items[number], lengths[number] if lengths is not None else None,
                number)
            end = now + service_s
            released = now
            log_partition(partition), log_start(now), log_end(end)
            replace(free, (end, order, partition))
            order += 1
            if progress is not None and now >= next_at:  # about 50 reports over the run's time
                progress(min(0.99, now / horizon))
                next_at = now + horizon / 50
        bucket.head = known
        start = np.asarray(self.batch_start)
        self.batch_formed = np.minimum(np.asarray(ready), start)  # due (its arrival), or one ulp past the wait
        self.batch_items = items_of.astype(np.int64)
        self.batch_requests = np.ones(known, dtype=np.int64)
        self.in_order = [bucket.index] * self.n_partitions

    def _loop_shared(self) -> None:
        """First-idle-first-serve over one static queue: free partitions take turns at the batcher in the order
        they became free (a partition that frees at f while the batcher was last released at T decides at
        max(f, T)); the one at the batcher waits until its batch is due, takes it and releases the batcher."""
        queue, service, plan = self.queues[0], self.service, self.spec.plan
        batch_maxes, request_cap, time_queue_s = plan.batch_max, plan.request_cap, plan.time_queue_s
        single = len(queue.buckets) == 1
        bucket = queue.buckets[0]
        ready, cum, lengths = bucket.ready, bucket.cum_items, bucket.lengths
        known = len(ready)
        decide, take, sample = queue.decide, queue.take, _sampler(service)
        logs = self._log_appends()
        (log_partition, log_start, log_formed, log_end, log_items, log_requests,
         log_segment_batch, log_segment_bucket, log_segment_position, log_segment_count) = logs
        free = [(0.0, partition, partition) for partition in range(self.n_partitions)]  # (time, order, partition)
        order, released, number, head = self.n_partitions, 0.0, 0, 0
        pop, push = heapq.heappop, heapq.heappush
        progress, horizon = self.progress, self._horizon()
        next_at = horizon / 50 if horizon > 0 else math.inf  # the next progress report
        while free:
            now, _, partition = pop(free)
            if now < released:
                now = released
            batch_max = batch_maxes[partition]
            if single:  # BatchQueue.decide and take, inline (one bucket)
                if head >= known:
                    break
                if cum is None or request_cap == 1:  # Bucket.fit's answer without its bisection
                    count = batch_max[0] if batch_max[0] < request_cap else request_cap
                    last = head + count - 1
                else:
                    bucket.head = head
                    count, last = bucket.fit(batch_max[0], request_cap)
                due = ready[head] + time_queue_s
                if last < known and ready[last] < due:
                    due = ready[last]
                if due > now:
                    now = now + (due - now)
                at = now if now > due else due
                stop = head + count
                if stop > known:
                    stop = known
                if ready[stop - 1] > at:
                    count = bisect.bisect_right(ready, at, head, stop) - head
                else:
                    count = stop - head
                items = count if cum is None else cum[head + count - 1] - (cum[head - 1] if head else 0)
                longest = max(lengths[head:head + count]) if lengths is not None else None
                head += count  # batches take the bucket in order: its segments follow from the counts
                n_requests = count
            else:
                decision = decide(now, batch_max, request_cap, time_queue_s)
                if decision is None:
                    break
                leave_at, due, bucket_at, request_limit = decision
                if leave_at > now:
                    now = now + (leave_at - now)
                segments, items, longest = take(max(now, leave_at), bucket_at, request_limit, batch_max)
                n_requests = 0
                for segment_bucket, position, count in segments:
                    log_segment_batch(number), log_segment_bucket(segment_bucket)
                    log_segment_position(position), log_segment_count(count)
                    n_requests += count
            released = now
            service_s = sample(partition, items, longest, number)
            end = now + service_s
            log_partition(partition), log_start(now), log_formed(due if due < now else now)
            log_end(end), log_items(items), log_requests(n_requests)
            push(free, (end, order, partition))
            order += 1
            number += 1
            if progress is not None and now >= next_at:  # about 50 reports over the run's time
                progress(min(0.99, now / horizon))
                next_at = now + horizon / 50
        if single:
            bucket.head = head
            self.in_order = [bucket.index] * self.n_partitions

    def _loop_each(self) -> None:
        """Per-partition static queues (round-robin): each partition decides when it frees; a batch not yet
        due is taken by a second event at its due time. The heap orders both kinds of event as simpy would."""
        service, plan = self.service, self.spec.plan
        batch_maxes, request_cap, time_queue_s = plan.batch_max, plan.request_cap, plan.time_queue_s
        queues = self.queue_of
        sample = _sampler(service)
        (log_partition, log_start, log_formed, log_end, log_items, log_requests,
         log_segment_batch, log_segment_bucket, log_segment_position, log_segment_count) = self._log_appends()
        single = all(len(queue.buckets) == 1 for queue in queues)
        buckets = [queue.buckets[0] for queue in queues]
        readys, cums, lengths_of = ([b.ready for b in buckets], [b.cum_items for b in buckets],
                                    [b.lengths for b in buckets])
        heads = [b.head for b in buckets]
        # (time, order, partition, decision or None): None = the partition frees and decides, else it takes
        events = [(0.0, partition, partition, None) for partition in range(self.n_partitions)]
        order, number = self.n_partitions, 0
        pop, push, bisect_right = heapq.heappop, heapq.heappush, bisect.bisect_right
        progress, horizon = self.progress, self._horizon()
        next_at = horizon / 50 if horizon > 0 else math.inf  # the next progress report
        while events:
            now, _, partition, decision = pop(events)
            if single:  # BatchQueue.decide and take, inline (one bucket per partition)
                ready, head = readys[partition], heads[partition]
                known = len(ready)
                if decision is None:
                    if head >= known:
                        continue  # this partition's queue is done
                    cum = cums[partition]
                    if cum is None or request_cap == 1:  # Bucket.fit's answer without its bisection
                        count = batch_maxes[partition][0]
                        if count > request_cap:
                            count = request_cap
                        last = head + count - 1
                    else:
                        count, last = buckets[partition].fit(batch_maxes[partition][0], request_cap)
                    due = ready[head] + time_queue_s
                    if last < known and ready[last] < due:
                        due = ready[last]
                    if due > now:
                        push(events, (now + (due - now), order, partition, (due, count)))
                        order += 1
                        continue
                else:
                    due, count = decision
                    cum = cums[partition]
                at = now if now > due else due
                stop = head + count
                if stop > known:
                    stop = known
                if ready[stop - 1] > at:
                    count = bisect_right(ready, at, head, stop) - head
                else:
                    count = stop - head
                items = count if cum is None else cum[head + count - 1] - (cum[head - 1] if head else 0)
                lengths = lengths_of[partition]
                longest = max(lengths[head:head + count]) if lengths is not None else None
                head += count
                heads[partition] = buckets[partition].head = head
                n_requests = count
            else:
                queue, batch_max = queues[partition], batch_maxes[partition]
                if decision is None:
                    decision = queue.decide(now, batch_max, request_cap, time_queue_s)
                    if decision is None:
                        continue  # this partition's queue is done
                    leave_at = decision[0]
                    if leave_at > now:
                        push(events, (now + (leave_at - now), order, partition, decision))
                        order += 1
                        continue
                leave_at, due, bucket_at, request_limit = decision
                segments, items, longest = queue.take(max(now, leave_at), bucket_at, request_limit, batch_max)
                n_requests = 0
                for segment_bucket, position, count in segments:
                    log_segment_batch(number), log_segment_bucket(segment_bucket)
                    log_segment_position(position), log_segment_count(count)
                    n_requests += count
            service_s = sample(partition, items, longest, number)
            end = now + service_s
            log_partition(partition), log_start(now), log_formed(due if due < now else now)
            log_end(end), log_items(items), log_requests(n_requests)
            push(events, (end, order, partition, None))
            order += 1
            number += 1
            if progress is not None and now >= next_at:  # about 50 reports over the run's time
                progress(min(0.99, now / horizon))
                next_at = now + horizon / 50
        if single:  # each partition took its own bucket in order
            self.in_order = [bucket.index for bucket in buckets]

    def _loop_dynamic(self) -> None:
        """Open loop, per-partition dynamic queues (JSQ, ELSA): the scheduler decides each request's partition
        when it reaches the batcher. The steps of the simpy processes (_dispatcher, _partition, _wait, _kick) as
        events on one heap, scheduled in the same order so that ties break as simpy's event ids break them:
        an arrival wakes its partition's waiter (a wake event at that time); a wait with a deadline is a timer
        that wakes the partition unless an arrival did first (a stale timer is dropped: it schedules nothing)."""
        service, plan, scheduler = self.service, self.spec.plan, self.scheduler
        batch_maxes, request_cap, time_queue_s = plan.batch_max, plan.request_cap, plan.time_queue_s
        queues, n_partitions = self.queue_of, self.n_partitions
        ready, sizes, lengths = self.ready, self.sizes, self.lengths
        sample, mean, assign, tracks = _sampler(service), service.mean, scheduler.assign, scheduler.tracks
        (log_partition, log_start, log_formed, log_end, log_items, log_requests,
         log_segment_batch, log_segment_bucket, log_segment_position, log_segment_count) = self._log_appends()
        pop, push, bisect_right = heapq.heappop, heapq.heappush, bisect.bisect_right
        progress, horizon = self.progress, self._horizon()
        next_at = horizon / 50 if horizon > 0 else math.inf  # the next progress report
        FREE, WAKE, TIMER, ARRIVAL = 0, 1, 2, 3
        events: list = []  # (time, order, kind, partition or request position, timer token)
        waiting = [-1] * n_partitions  # token of the partition's untriggered waiter (-1: none)
        running = [0] * n_partitions  # requests in the batch each partition is serving
        order = 0
        number = 0
        closed = False
        arrivals = np.argsort(np.asarray(ready), kind="stable").tolist()
        n_arrivals = len(arrivals)
        # one bucket per partition: its columns, read and appended inline (BatchQueue.decide and take, Bucket.append)
        single = all(len(queue.buckets) == 1 for queue in queues)
        buckets = [queue.buckets[0] for queue in queues]
        ids_of, readys = [b.ids for b in buckets], [b.ready for b in buckets]
        cums, lengths_of = [b.cum_items for b in buckets], [b.lengths for b in buckets]
        heads = [0] * n_partitions

        def resume(partition: int, now: float) -> None:
            """The partition decides at `now`: wait (for an arrival, or until its batch is due) or take a batch."""
            nonlocal order, number, next_at
            if single:
                bucket_ready, head = readys[partition], heads[partition]
                known = len(bucket_ready)
                if head >= known:
                    if not closed:
                        waiting[partition] = order  # any unique token; no timer
                        order += 1
                    return
                cum = cums[partition]
                if cum is None or request_cap == 1:  # Bucket.fit's answer without its bisection
                    count = batch_maxes[partition][0]
                    if count > request_cap:
                        count = request_cap
                    last = head + count - 1
                else:
                    count, last = buckets[partition].fit(batch_maxes[partition][0], request_cap)
                due = bucket_ready[head] + time_queue_s
                if last < known and bucket_ready[last] < due:
                    due = bucket_ready[last]
                if due > now:
                    waiting[partition] = order
                    push(events, (now + (due - now), order, TIMER, partition, order))
                    order += 1
                    return
                stop = head + count
                if stop > known:
                    stop = known
                if bucket_ready[stop - 1] > now:
                    count = bisect_right(bucket_ready, now, head, stop) - head
                else:
                    count = stop - head
                items = count if cum is None else cum[head + count - 1] - (cum[head - 1] if head else 0)
                bucket_lengths = lengths_of[partition]
                longest = max(bucket_lengths[head:head + count]) if bucket_lengths is not None else None
                heads[partition] = buckets[partition].head = head + count
                n_requests = count
            else:
                queue, batch_max = queues[partition], batch_maxes[partition]
                decision = queue.decide(now, batch_max, request_cap, time_queue_s)
                if decision is None:
                    if not closed:
                        waiting[partition] = order  # any unique token; no timer
                        order += 1
                    return
                leave_at, due, bucket_at, request_limit = decision
                if leave_at > now:
                    waiting[partition] = order
                    push(events, (now + (leave_at - now), order, TIMER, partition, order))
                    order += 1
                    return
                segments, items, longest = queue.take(max(now, leave_at), bucket_at, request_limit, batch_max)
                n_requests = 0
                for segment_bucket, position, count in segments:
                    log_segment_batch(number), log_segment_bucket(segment_bucket)
                    log_segment_position(position), log_segment_count(count)
                    n_requests += count
            service_s = sample(partition, items, longest, number)
            log_partition(partition), log_start(now), log_formed(due if due < now else now)
            log_end(now + service_s), log_items(items), log_requests(n_requests)
            number += 1
            if tracks:
                estimate = mean(partition, items, longest)
                scheduler.on_take(partition, items, estimate)
                scheduler.on_start(partition, now, estimate)
            running[partition] = n_requests
            push(events, (now + service_s, order, FREE, partition, 0))
            order += 1
            if progress is not None and now >= next_at:  # about 50 reports over the run's time
                progress(min(0.99, now / horizon))
                next_at = now + horizon / 50

        for partition in range(n_partitions):  # the processes start in this order, the dispatcher last
            resume(partition, 0.0)
        events.append((0.0, order, ARRIVAL, 0, 0))  # the heap is empty: every queue is
        order += 1
        while events:
            now, _, kind, which, token = pop(events)
            if kind == ARRIVAL:  # the dispatcher hands on every request due by now, then sleeps until the next
                position = which
                while position < n_arrivals:
                    request = arrivals[position]
                    ready_at = ready[request]
                    if ready_at > now:
                        push(events, (now + (ready_at - now), order, ARRIVAL, position, 0))
                        order += 1
                        break
                    partition = assign(request, now)
                    length = lengths[request] if lengths is not None else None
                    if single:
                        ids_of[partition].append(request)
                        readys[partition].append(ready_at)
                        cum = cums[partition]
                        if cum is not None:
                            cum.append((cum[-1] if cum else 0) + sizes[request])
                        if lengths_of[partition] is not None:
                            lengths_of[partition].append(length)
                    else:
                        queue = queues[partition]
                        queue.buckets[queue.bucket_of(length)].append(request, ready_at, sizes[request], length)
                    if waiting[partition] >= 0:  # wake the partition's waiter
                        waiting[partition] = -1
                        push(events, (now, order, WAKE, partition, 0))
                        order += 1
                    position += 1
                else:  # every request has arrived: wake every waiter once more
                    closed = True
                    for partition in range(n_partitions):
                        if waiting[partition] >= 0:
                            waiting[partition] = -1
                            push(events, (now, order, WAKE, partition, 0))
                            order += 1
            elif kind == FREE:
                if tracks:
                    scheduler.on_done(which, running[which])
                resume(which, now)
            elif kind == WAKE:
                resume(which, now)
            elif waiting[which] == token:  # a timer whose wait no arrival ended: wake the partition now
                waiting[which] = -1
                push(events, (now, order, WAKE, which, 0))
                order += 1
        if single:  # each partition took its own bucket in order
            self.in_order = [bucket.index for bucket in buckets]

    def _log_appends(self) -> tuple:
        return (self.batch_partition.append, self.batch_start.append, self.batch_formed.append,
                self.batch_end.append, self.batch_items.append, self.batch_requests.append,
                self.segment_batch.append, self.segment_bucket.append, self.segment_position.append,
                self.segment_count.append)

    def run(self) -> BatchLog:
        if not self.use_simpy:
            if self.dynamic:
                self._loop_dynamic()
            else:
                self._run_static()
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
            bucket_of_batch = np.asarray(self.in_order, dtype=np.int64)[np.asarray(self.batch_partition)]
            for index in dict.fromkeys(self.in_order):
                batches = np.flatnonzero(bucket_of_batch == index)
                counts = n_requests[batches]
                taken = np.asarray(self.buckets[index].ids[:int(counts.sum())], dtype=np.int64)
                request_batch[taken] = np.repeat(batches, counts)
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
