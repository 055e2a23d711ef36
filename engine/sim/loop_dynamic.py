"""The GPU side's event loop for per-partition queues filled on arrival (JSQ, ELSA): the steps of engine.sim.gpu's
simpy processes on one heap of (time, order) events, as engine.sim.loops does for static queues (the same tie order
and batch numbering; tests/test_sim_loops.py compares both with the processes)."""

from __future__ import annotations

import bisect
import heapq
import math
from typing import TYPE_CHECKING

import numpy as np

from engine.sim.loops import horizon_of, log_appends, sampler

if TYPE_CHECKING:
    from engine.sim.gpu import GpuEngine


def loop_dynamic(engine: GpuEngine) -> None:
    """Open loop, per-partition dynamic queues (JSQ, ELSA): the scheduler decides each request's partition
    when it reaches the batcher. The steps of the simpy processes (GpuEngine._dispatcher, _partition, _wait,
    _kick) as events on one heap, scheduled in the same order so that ties break as simpy's event ids break them:
    an arrival wakes its partition's waiter (a wake event at that time); a wait with a deadline is a timer
    that wakes the partition unless an arrival did first (a stale timer is dropped: it schedules nothing)."""
    service, plan, scheduler = engine.service, engine.spec.plan, engine.scheduler
    batch_maxes, request_cap, time_queue_s = plan.batch_max, plan.request_cap, plan.time_queue_s
    queues, n_partitions = engine.queue_of, engine.n_partitions
    ready, sizes, lengths = engine.ready, engine.sizes, engine.lengths
    sample, mean, assign, tracks = sampler(service), service.mean, scheduler.assign, scheduler.tracks
    (log_partition, log_start, log_formed, log_end, log_items, log_requests,
     log_segment_batch, log_segment_bucket, log_segment_position, log_segment_count) = log_appends(engine)
    pop, push, bisect_right = heapq.heappop, heapq.heappush, bisect.bisect_right
    progress, horizon = engine.progress, horizon_of(engine)
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
        engine.in_order = [bucket.index for bucket in buckets]
