"""The GPU side's plain event loops: the steps of engine.sim.gpu's simpy processes on one heap of (time, order)
events, for the runs where no process waits on another's event (open loop, every run but a closed loop and a
shared queue filled as requests arrive).

Events are scheduled in the order simpy would give them event ids, so ties break the same way and a seed gives
the same result either way (tests/test_sim_loops.py compares them): run_static for static queues (every arrival
known in advance: _loop_unbatched, _loop_shared_unit and _loop_shared for first-idle over one queue, _loop_each for
round-robin); engine.sim.loop_dynamic for per-partition queues filled on arrival (JSQ, ELSA). Each reads a GpuEngine's queues, service and
scheduler and appends to its batch log (GpuEngine._log turns that into a BatchLog).
"""

from __future__ import annotations

import bisect
import heapq
import math
from array import array
from typing import TYPE_CHECKING, Callable

import numpy as np

if TYPE_CHECKING:
    from engine.sim.gpu import GpuEngine


def sampler(service) -> Callable:
    """The service's sample(partition, items, longest, batch number), bound once per run where it offers that."""
    return service.sampler() if hasattr(service, "sampler") else service.sample


def run_static(engine: GpuEngine) -> None:
    """Open loop with static queues (fifs, round-robin): every arrival is known, so the partitions only
    ever wait for a time, never for each other's events, and a heap of (time, order) replaces simpy.

    The same steps in the same order as the simpy processes (GpuEngine._partition): times are the same floats
    (a wait of leave_at - now lands at now + (leave_at - now)), ties go the way simpy's event ids
    send them (the order events were scheduled), and batch numbers (which pick the service draws)
    follow the order batches are taken."""
    if engine.scheduler.shared:
        buckets = engine.queues[0].buckets
        if engine.spec.plan.request_cap == 1 and len(buckets) == 1:
            _loop_unbatched(engine)
        elif len(buckets) == 1 and buckets[0].cum_items is None and buckets[0].lengths is None:
            _loop_shared_unit(engine)
        else:
            _loop_shared(engine)
    else:
        _loop_each(engine)


def horizon_of(engine: GpuEngine) -> float:
    """When the last request reaches the batcher (s): the event loops report progress against it."""
    ready = engine.requests.ready
    return float(ready.max()) if len(ready) else 0.0


def _loop_unbatched(engine: GpuEngine) -> None:
    """_loop_shared with one request per batch (no batching, first-idle): batch k is the k-th request to
    reach the batcher, due when it arrives, so the loop only picks the partition and times the batch; the
    columns that follow from that (items, one request each, when its rule was met) are filled in after."""
    bucket, service = engine.queues[0].buckets[0], engine.service
    ready, lengths = bucket.ready, bucket.lengths
    known = len(ready)
    items_of = engine.requests.sizes[bucket.ids]
    items = None
    sample = sampler(service)
    # every batch's service time at once where the partition does not change it (a homogeneous layout)
    times = service.unbatched_times(items_of) if hasattr(service, "unbatched_times") else None
    if times is None and not np.all(items_of == 1):
        items = items_of.tolist()
    if times is not None:
        as_array = array("d")
        as_array.frombytes(memoryview(np.ascontiguousarray(times)).cast("B"))  # 8 bytes a batch
        times = as_array
    log_partition, log_start = engine.batch_partition.append, engine.batch_start.append
    log_end = engine.batch_end.append
    free = [(0.0, partition, partition) for partition in range(engine.n_partitions)]  # (time, order, partition)
    order, released = engine.n_partitions, 0.0
    replace = heapq.heapreplace
    progress, horizon = engine.progress, horizon_of(engine)
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
    start = np.asarray(engine.batch_start)
    engine.batch_formed = np.minimum(np.asarray(ready), start)  # due (its arrival), or one ulp past the wait
    engine.batch_items = items_of.astype(np.int64, copy=False)  # a gather of its own already
    engine.batch_requests = np.ones(known, dtype=np.int64)
    engine.in_order = [bucket.index] * engine.n_partitions


LOG_CHUNK = 1 << 16  # batches logged in lists before they move to the typed arrays (8 bytes an entry)


def _loop_shared_unit(engine: GpuEngine) -> None:
    """_loop_shared over one bucket of one-item queries of fixed length (no length buckets, no item sums): a
    batch takes its partition's cap of requests, or those that arrived by the time it leaves.

    Per batch only what cannot be had after: partition, start, end and count, in plain lists (an append a
    fraction of a typed array's), moved to the typed arrays every LOG_CHUNK batches so that memory stays at 8
    bytes an entry; items equal counts, and when each batch's rule was met follows from the counts in numpy
    (_formed). A profiled service's draw is computed inline (GpuService.unit_tables), else sample() is called."""
    bucket, service, plan = engine.queues[0].buckets[0], engine.service, engine.spec.plan
    request_cap, time_queue_s = plan.request_cap, plan.time_queue_s
    caps = [caps[0] if caps[0] < request_cap else request_cap for caps in plan.batch_max]  # Bucket.fit, unit sizes
    ready = bucket.ready
    known = len(ready)
    sample = sampler(service)
    tables = service.unit_tables(caps) if hasattr(service, "unit_tables") else None
    means, sigmas, halves = tables if tables is not None else ([None] * len(caps), [0.0] * len(caps), [0.0] * len(caps))
    inline = tables is not None
    # per partition, what a batch on it reads: its cap and its service's mean table, sigma and sigma^2 / 2
    by_partition = list(zip(caps, means, sigmas, halves))
    draws, exp = service.draws if inline else None, math.exp
    n_partitions = engine.n_partitions
    offset = n_partitions - 1  # batch k (from 1) is the heap's (n_partitions + k - 1)-th event, as simpy orders them
    free = [(0.0, partition, partition) for partition in range(n_partitions)]  # (time, order, partition)
    released, number, head = 0.0, 0, 0
    replace, bisect_right = heapq.heapreplace, bisect.bisect_right
    progress, horizon = engine.progress, horizon_of(engine)
    next_at = horizon / 50 if (horizon > 0 and progress is not None) else math.inf  # the next progress report
    partitions, starts, ends, counts = [], [], [], []
    log_partition, log_start, log_end, log_count = partitions.append, starts.append, ends.append, counts.append
    flush_at = LOG_CHUNK
    check_at = min(flush_at, len(draws)) if draws is not None else flush_at
    while head < known:
        now, _, partition = free[0]  # the partition free first takes the batcher next (heapreplace below)
        if now < released:
            now = released
        cap, table, sigma, half = by_partition[partition]
        stop = head + cap
        due = ready[head] + time_queue_s
        if stop <= known:
            last_ready = ready[stop - 1]  # the batch is full when its last request arrives
            if last_ready < due:
                due = last_ready
        else:
            stop = known
            last_ready = ready[stop - 1]
        if due > now:
            now = now + (due - now)
        at = now if now > due else due
        count = bisect_right(ready, at, head, stop) - head if last_ready > at else stop - head
        head += count
        released = now
        if inline:  # GpuService.sample
            end = now + table[count] * exp(sigma * draws[number] - half)
        else:
            end = now + sample(partition, count, None, number)
        log_partition(partition)
        log_start(now)
        log_end(end)
        log_count(count)
        number += 1
        replace(free, (end, number + offset, partition))
        if number >= check_at:  # move the log to the typed arrays; draw the next batches' service factors
            if number >= flush_at:
                _flush(engine, partitions, starts, ends, counts)
                flush_at = number + LOG_CHUNK
            if draws is not None and number >= len(draws):
                service.more_draws()
            check_at = min(flush_at, len(draws)) if draws is not None else flush_at
        if now >= next_at:  # about 50 reports over the run's time
            progress(min(0.99, now / horizon))
            next_at = now + horizon / 50
    _flush(engine, partitions, starts, ends, counts)
    engine.batch_items = array("q", engine.batch_requests)  # one item a request
    engine.batch_formed = _formed(engine, bucket, caps, time_queue_s)
    bucket.head = head
    engine.in_order = [bucket.index] * n_partitions


def _flush(engine: GpuEngine, partitions: list, starts: list, ends: list, counts: list) -> None:
    """Move logged batches from lists to the engine's typed arrays (and empty the lists)."""
    for column, values in ((engine.batch_partition, partitions), (engine.batch_start, starts),
                           (engine.batch_end, ends), (engine.batch_requests, counts)):
        column.extend(array(column.typecode, values))  # array(list) converts ~3x faster than extend(list)
        values.clear()


def _formed(engine: GpuEngine, bucket, caps: list[int], time_queue_s: float) -> np.ndarray:
    """When each batch's rule was met, from the counts (_loop_shared_unit; the loop's own arithmetic): its
    first request's ready time + Time_queue, or the arrival of the request that fills its cap if earlier;
    at most its start."""
    counts = np.frombuffer(engine.batch_requests, dtype=np.int64)
    start = np.frombuffer(engine.batch_start, dtype=np.float64)
    if not len(counts):
        return np.zeros(0)
    ready = np.frombuffer(bucket.ready, dtype=np.float64)  # the bucket's k-th request's ready time (a copy)
    head = np.cumsum(counts) - counts
    last = head + np.asarray(caps, dtype=np.int64)[np.frombuffer(engine.batch_partition, dtype=np.int64)] - 1
    due = ready[head] + time_queue_s
    full = last < len(ready)
    due[full] = np.minimum(due[full], ready[last[full]])
    return np.minimum(due, start)


def _loop_shared(engine: GpuEngine) -> None:
    """First-idle-first-serve over one static queue: free partitions take turns at the batcher in the order
    they became free (a partition that frees at f while the batcher was last released at T decides at
    max(f, T)); the one at the batcher waits until its batch is due, takes it and releases the batcher."""
    queue, service, plan = engine.queues[0], engine.service, engine.spec.plan
    batch_maxes, request_cap, time_queue_s = plan.batch_max, plan.request_cap, plan.time_queue_s
    single = len(queue.buckets) == 1
    bucket = queue.buckets[0]
    ready, cum, lengths = bucket.ready, bucket.cum_items, bucket.lengths
    known = len(ready)
    decide, take, sample = queue.decide, queue.take, sampler(service)
    logs = log_appends(engine)
    (log_partition, log_start, log_formed, log_end, log_items, log_requests,
     log_segment_batch, log_segment_bucket, log_segment_position, log_segment_count) = logs
    free = [(0.0, partition, partition) for partition in range(engine.n_partitions)]  # (time, order, partition)
    order, released, number, head = engine.n_partitions, 0.0, 0, 0
    pop, push = heapq.heappop, heapq.heappush
    progress, horizon = engine.progress, horizon_of(engine)
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
        engine.in_order = [bucket.index] * engine.n_partitions


def _loop_each(engine: GpuEngine) -> None:
    """Per-partition static queues (round-robin): each partition decides when it frees; a batch not yet
    due is taken by a second event at its due time. The heap orders both kinds of event as simpy would."""
    service, plan = engine.service, engine.spec.plan
    batch_maxes, request_cap, time_queue_s = plan.batch_max, plan.request_cap, plan.time_queue_s
    queues = engine.queue_of
    sample = sampler(service)
    (log_partition, log_start, log_formed, log_end, log_items, log_requests,
     log_segment_batch, log_segment_bucket, log_segment_position, log_segment_count) = log_appends(engine)
    single = all(len(queue.buckets) == 1 for queue in queues)
    buckets = [queue.buckets[0] for queue in queues]
    readys, cums, lengths_of = ([b.ready for b in buckets], [b.cum_items for b in buckets],
                                [b.lengths for b in buckets])
    heads = [b.head for b in buckets]
    # (time, order, partition, decision or None): None = the partition frees and decides, else it takes
    events = [(0.0, partition, partition, None) for partition in range(engine.n_partitions)]
    order, number = engine.n_partitions, 0
    pop, push, bisect_right = heapq.heappop, heapq.heappush, bisect.bisect_right
    progress, horizon = engine.progress, horizon_of(engine)
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
        engine.in_order = [bucket.index for bucket in buckets]


def log_appends(engine: GpuEngine) -> tuple:
    return (engine.batch_partition.append, engine.batch_start.append, engine.batch_formed.append,
            engine.batch_end.append, engine.batch_items.append, engine.batch_requests.append,
            engine.segment_batch.append, engine.segment_bucket.append, engine.segment_position.append,
            engine.segment_count.append)
