"""Plain heapq event loops of the simulator's GPU side: the reference benchmarks/sim_reference.py times the simulator
against (issue 19), and tests/test_sim_loops.py checks it against, to the last digit.

The loops are written from the batching and scheduling rules (engine.sim.batcher, engine.sim.schedulers'
docstrings), not from engine.sim.gpu: one heap of events, Python lists, no framework, no batch log beyond each
request's end time. They take the run's own inputs (engine.sim.run.prepare: ready times after the host stages,
query sizes, the GPU service's tables and per-batch draws) and compute the same model, including its time
arithmetic (a wait until t from now lands at now + (t - now), as a timer does). Where they take the engine's code:
ELSA's estimate (engine.sim.schedulers.Elsa, PARIS Algorithm 2) and the mean service of an input length
(GpuService.mean, an interpolation over profiled lengths): those are the model's numbers, not its event handling.
PREBA on a variable-length model (length buckets with merging) has no reference loop here.
"""

from __future__ import annotations

import bisect
import heapq
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.sim.schedulers import Elsa, SchedulerView  # noqa: E402


def service_time(gpu_service):
    """time(partition, items, longest, batch number) of the run's GPU service: the table's mean for the batch's
    items times the batch's own draw (a log-normal factor of mean 1 for profiled service)."""
    while gpu_service.draws is not None and len(gpu_service.draws) < gpu_service.n_draws:
        gpu_service.more_draws()  # every draw the run may need, before the loop
    tables, draws, sigma = gpu_service.tables, gpu_service.draws, gpu_service.sigma
    synthetic, by_length = gpu_service.spec is not None, gpu_service.lengths is not None
    mean_of = gpu_service.mean

    def time_of(partition, items, longest, number):
        if by_length and longest is not None:
            mean = mean_of(partition, items, longest)
        else:
            table = tables[partition]
            mean = table[(items if items < len(table) else len(table)) - 1]
        if draws is None:
            return mean
        if synthetic:
            return mean * draws[number]
        s = sigma[partition]
        return mean * math.exp(s * draws[number] - s * s / 2)
    return time_of


def _fit(ready, cum, head, known, batch_max, cap):
    """(count, last): requests from `head` that fit in batch_max items (at least one, at most cap), and the one
    whose arrival completes the batch (>= known: not complete with the requests known so far)."""
    if cum is None:
        count = batch_max if batch_max < cap else cap
        return count, head + count - 1
    before = cum[head - 1] if head else 0
    count = bisect.bisect_right(cum, before + batch_max, head, known) - head
    if count < 1:
        return 1, head
    if count >= cap:
        return cap, head + cap - 1
    end = head + count
    return count, (end - 1 if cum[end - 1] - before == batch_max else end)


def _sorted_inputs(ready, sizes, lengths):
    order = np.argsort(ready, kind="stable")
    unit = bool(np.all(sizes == 1))
    return (order, ready[order].tolist(), None if unit else np.cumsum(sizes[order]).tolist(),
            None if lengths is None else lengths[order].tolist())


def reference_fifs(ready, sizes, lengths, batch_max, cap, time_queue, time_of):
    """First-idle-first-serve: free partitions take turns at one queue in the order they freed."""
    order, r, cum, lens = _sorted_inputs(ready, sizes, lengths)
    n = len(r)
    end = [0.0] * n
    free = [(0.0, p, p) for p in range(len(batch_max))]
    seq, released, head, number = len(batch_max), 0.0, 0, 0
    pop, push = heapq.heappop, heapq.heappush
    while head < n:
        now, _, p = pop(free)
        if now < released:
            now = released
        count, last = _fit(r, cum, head, n, batch_max[p], cap)
        due = r[head] + time_queue
        if last < n and r[last] < due:
            due = r[last]
        if due > now:
            now = now + (due - now)
        at = now if now > due else due
        stop = head + count if head + count < n else n
        taken = bisect.bisect_right(r, at, head, stop) - head
        items = taken if cum is None else cum[head + taken - 1] - (cum[head - 1] if head else 0)
        done = now + time_of(p, items, max(lens[head:head + taken]) if lens else None, number)
        end[head:head + taken] = [done] * taken
        head += taken
        released = now
        number += 1
        push(free, (done, seq, p))
        seq += 1
    out = np.empty(n)
    out[order] = end
    return out


def reference_round_robin(ready, sizes, lengths, batch_max, cap, time_queue, time_of):
    """Request i (in ready order) to partition i mod n; each partition batches its own queue."""
    order, r_all, cum_all, lens_all = _sorted_inputs(ready, sizes, lengths)
    n_part, n = len(batch_max), len(r_all)
    mine = [list(range(p, n, n_part)) for p in range(n_part)]  # positions in ready order
    r = [[r_all[i] for i in ids] for ids in mine]
    sz = None if cum_all is None else np.diff(np.asarray([0] + cum_all))
    cum = [None if sz is None else np.cumsum(sz[ids]).tolist() for ids in mine]
    lens = [None if lens_all is None else [lens_all[i] for i in ids] for ids in mine]
    heads = [0] * n_part
    end = [0.0] * n
    events = [(0.0, p, p, None) for p in range(n_part)]  # (time, order, partition, batch due or None)
    seq, number = n_part, 0
    pop, push = heapq.heappop, heapq.heappush
    while events:
        now, _, p, pending = pop(events)
        rp, cp, head = r[p], cum[p], heads[p]
        known = len(rp)
        if head >= known:
            continue
        if pending is None:
            count, last = _fit(rp, cp, head, known, batch_max[p], cap)
            due = rp[head] + time_queue
            if last < known and rp[last] < due:
                due = rp[last]
            if due > now:
                push(events, (now + (due - now), seq, p, (due, count)))
                seq += 1
                continue
        else:
            due, count = pending
        at = now if now > due else due
        stop = head + count if head + count < known else known
        taken = bisect.bisect_right(rp, at, head, stop) - head
        items = taken if cp is None else cp[head + taken - 1] - (cp[head - 1] if head else 0)
        done = now + time_of(p, items, max(lens[p][head:head + taken]) if lens[p] else None, number)
        for i in mine[p][head:head + taken]:
            end[i] = done
        heads[p] = head + taken
        number += 1
        push(events, (done, seq, p, None))
        seq += 1
    out = np.empty(n)
    out[order] = end
    return out


def reference_on_arrival(ready, sizes, lengths, batch_max, cap, time_queue, time_of, choose, on_take, on_done):
    """Schedulers that decide on arrival (JSQ, ELSA): choose(request, now) -> partition; an arrival to a waiting
    partition makes it decide again; a batch not yet due is a timer (stale once the partition decided again)."""
    order = np.argsort(ready, kind="stable").tolist()
    r_of, size_of = ready.tolist(), sizes.tolist()
    len_of = None if lengths is None else lengths.tolist()
    unit = bool(np.all(sizes == 1))
    n_part, n = len(batch_max), len(r_of)
    ids = [[] for _ in range(n_part)]
    r = [[] for _ in range(n_part)]
    cum = [None if unit else [] for _ in range(n_part)]
    heads, busy, timer = [0] * n_part, [False] * n_part, [-1] * n_part
    end = [0.0] * n
    events: list = []  # (time, order, kind, partition, timer token or requests in the batch)
    seq, number = 0, 0
    pop, push = heapq.heappop, heapq.heappush

    def decide(p, now):
        nonlocal seq, number
        rp, cp, head = r[p], cum[p], heads[p]
        known = len(rp)
        if head >= known:
            return
        count, last = _fit(rp, cp, head, known, batch_max[p], cap)
        due = rp[head] + time_queue
        if last < known and rp[last] < due:
            due = rp[last]
        if due > now:
            timer[p] = seq
            push(events, (now + (due - now), seq, TIMER, p, seq))
            seq += 1
            return
        stop = head + count if head + count < known else known
        taken = bisect.bisect_right(rp, now, head, stop) - head
        items = taken if cp is None else cp[head + taken - 1] - (cp[head - 1] if head else 0)
        batch = ids[p][head:head + taken]
        longest = max(len_of[i] for i in batch) if len_of is not None else None
        done = now + time_of(p, items, longest, number)
        for i in batch:
            end[i] = done
        heads[p] = head + taken
        number += 1
        busy[p], timer[p] = True, -1
        on_take(p, items, longest, now)
        push(events, (done, seq, FREE, p, len(batch)))
        seq += 1

    ARRIVAL, FREE, TIMER = 0, 1, 2
    position = 0
    if n:
        push(events, (r_of[order[0]], -1, ARRIVAL, -1, 0))
    while events:
        now, _, kind, p, token = pop(events)
        if kind == ARRIVAL:  # every request due by now
            while position < n:
                i = order[position]
                if r_of[i] > now:
                    push(events, (now + (r_of[i] - now), seq, ARRIVAL, -1, 0))
                    seq += 1
                    break
                q = choose(i, now)
                ids[q].append(i)
                r[q].append(r_of[i])
                if cum[q] is not None:
                    cum[q].append((cum[q][-1] if cum[q] else 0) + size_of[i])
                position += 1
                if not busy[q]:
                    decide(q, now)
            else:  # the last arrival: every waiting partition looks at its queue once more
                for q in range(n_part):
                    if not busy[q]:
                        decide(q, now)
        elif kind == FREE:
            busy[p] = False
            on_done(p, token)
            decide(p, now)
        elif timer[p] == token:
            timer[p] = -1
            decide(p, now)
    return np.asarray(end)


def reference_jsq(ready, sizes, lengths, batch_max, cap, time_queue, time_of):
    outstanding = [0] * len(batch_max)

    def choose(request, now):
        p = outstanding.index(min(outstanding))
        outstanding[p] += 1
        return p

    def on_done(p, n_requests):
        outstanding[p] -= n_requests
    return reference_on_arrival(ready, sizes, lengths, batch_max, cap, time_queue, time_of, choose,
                                lambda *args: None, on_done)


def reference_elsa(ready, sizes, lengths, batch_max, cap, time_queue, time_of, gpu_service, spec, arrival):
    elsa = Elsa(SchedulerView(n_partitions=len(batch_max), service=gpu_service, batch_max=batch_max,
                              request_cap=cap, sla_s=spec.sla_s, alpha=spec.alpha, beta=spec.beta,
                              sizes=sizes.tolist(), lengths=None if lengths is None else lengths.tolist(),
                              arrivals=arrival.tolist()))

    def on_take(p, items, longest, now):
        estimate = gpu_service.mean(p, items, longest)
        elsa.on_take(p, items, estimate)
        elsa.on_start(p, now, estimate)
    return reference_on_arrival(ready, sizes, lengths, batch_max, cap, time_queue, time_of, elsa.assign,
                                on_take, lambda p, n_requests: None)


def reference(run):
    """Per-request end times (s) of the GPU side of a prepared run (engine.sim.run.prepare)."""
    spec, requests, plan = run.spec, run.requests, run.plan
    if any(len(caps) > 1 for caps in plan.batch_max):
        # outside this benchmark's scope, by choice: the bucketed run is timed against the simpy processes instead
        raise ValueError("the reference loops take one batch size per partition; a run with length buckets (PREBA "
                         "on a variable-length model) is compared with the simpy processes (see main())")
    args = (requests.ready, requests.sizes, requests.lengths, [caps[0] for caps in plan.batch_max],
            plan.request_cap, plan.time_queue_s, service_time(spec.service))
    if spec.scheduler == "fifs":
        return reference_fifs(*args)
    if spec.scheduler == "round-robin":
        return reference_round_robin(*args)
    if spec.scheduler == "jsq":
        return reference_jsq(*args)
    return reference_elsa(*args, spec.service, spec, requests.arrival)
