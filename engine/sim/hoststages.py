"""Host-side stages (RPC/host CPU, preprocessing pool, DPU, GPU decode) as FIFO pools, without simpy.

Each StageCost of Design.host_stages is a pool of `servers` FIFO servers with mean service time
service_s and squared coefficient of variation scv, plus `fixed_s` of delay that holds no server
(wire time, a PCIe hop), applied before the pool. The simulator samples what the analytic model
averages (engine.analytic.host_point.host_stage_point):
- effective servers c = capacity_rps x service_s (a link or SmartNIC cap may bind before the cores);
  k = max(1, floor(c)) servers, each with mean service k / capacity_rps, as in the Allen-Cunneen
  formula's rounding (engine.analytic.queueing.allen_cunneen_wait);
- when a cap binds (k / capacity_rps > service_s), the pool's servers are the capped resource (the wire,
  the SmartNIC's ARM cores): a request waits for one as long as k / capacity_rps per request ahead of it,
  but its own time there is only service_s: the capped resource's own time per request (wire serialisation,
  ARM work) is already in fixed_s (engine.stages.rpc), as the analytic model counts it, so it is not added
  twice (own_service_ratio);
- service times log-normal with the stage's mean and scv (deterministic when scv = 0);
- the per-item part of a stage (a preprocessing stage, or the 'preprocess_cpu' share of a shared
  host_cpu pool) scales with the query's items over the mean items per query, so its mean is
  unchanged.
The stages are feed-forward and FIFO, so every request's start and end at every stage follow from
the arrival times alone: c = 1 by Lindley's recursion in closed form (cumulative maximum), c > 1 by
the Kiefer-Wolfowitz recursion on a heap of server free times. That is all host-side work before
the batcher, which is where the simpy processes start (engine.sim.gpu).
"""

from __future__ import annotations

import heapq
import math
from typing import Optional

import numpy as np
from pydantic import BaseModel, ConfigDict

from engine.stages import StageCost

CHUNK = 1 << 15  # requests at a time where a pass needs a scratch array (it stays in cache)


class HostTimes(BaseModel):
    """Per request and stage (columns): when it entered the queue, started service, left (s)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    names: tuple[str, ...]
    servers: tuple[int, ...]
    enter: tuple[np.ndarray, ...]  # after the fixed delay, joining the queue
    start: tuple[np.ndarray, ...]
    end: tuple[np.ndarray, ...]
    ready: np.ndarray  # end of the last stage (arrival time when there is none): reaches the batcher
    # np.argsort(ready, kind="stable") where the last stage's pool had it at little cost (fifo_pool_ordered), else
    # None: the batcher's queue takes requests in that order
    ready_order: Optional[np.ndarray] = None


def pool_shape(stage: StageCost) -> tuple[int, float]:
    """(whole servers, mean service per server in s) with the stage's capacity."""
    if stage.service_s <= 0:
        return 0, 0.0
    capped = math.isfinite(stage.capacity_rps)
    effective = stage.capacity_rps * stage.service_s if capped else stage.servers
    servers = max(1, int(math.floor(effective + 1e-9)))
    return servers, servers / stage.capacity_rps if capped else stage.service_s


def own_service_ratio(stage: StageCost) -> float:
    """A request's own service time over its server's occupancy in the pool (a fraction, 1 when no cap binds).

    With a link or SmartNIC cap binding, a pool server is held k / capacity_rps per request, but the request
    itself spends only service_s there (the capped resource's own time is in fixed_s)."""
    servers, mean = pool_shape(stage)
    if servers == 0 or mean <= 0:
        return 1.0
    return min(1.0, stage.service_s / mean)


def per_item_fraction(stage: StageCost) -> float:
    """Share of a stage's service time that is per item (scales with the query size)."""
    if stage.name.startswith("preprocess"):
        return 1.0
    per_item_s = sum(part_s for name, part_s in stage.breakdown_s.items() if name.startswith("preprocess"))
    return min(1.0, per_item_s / stage.service_s) if stage.service_s > 0 else 0.0


def lognormal(mean: float, scv: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """n samples with the given mean and squared coefficient of variation (constant when scv = 0)."""
    if scv <= 0:
        return np.full(n, mean)
    log_variance = math.log1p(scv)
    # mean * exp(sqrt(v) z - v / 2), step by step in the draws' own array (the same floats, no temporaries)
    out = rng.standard_normal(n)
    np.multiply(math.sqrt(log_variance), out, out=out)
    np.subtract(out, log_variance / 2, out=out)
    np.exp(out, out=out)
    np.multiply(mean, out, out=out)
    return out


def fifo_pool(arrive: np.ndarray, service: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Start and end times of a FIFO pool of k servers; `arrive` must be non-decreasing."""
    start, end, _ = fifo_pool_ordered(arrive, service, k, ordered=False)
    return start, end


def fifo_pool_ordered(arrive: np.ndarray, service: np.ndarray, k: int,
                      ordered: bool = True) -> tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]:
    """fifo_pool's start and end times, and np.argsort(end, kind="stable") where its path for a pool with servers
    to spare has it at little cost (_few_waits), else None (and None unless `ordered`)."""
    n = len(arrive)
    if n == 0:
        return arrive.copy(), arrive.copy(), None
    if k == 1:  # Lindley: end_i = max(a_i, end_{i-1}) + s_i, as a cumulative maximum
        csum = np.cumsum(service)
        end = csum + np.maximum.accumulate(arrive - csum + service)
        return end - service, end, None
    if k >= n:
        return arrive.copy(), arrive + service, None
    if not np.all(service > 0):  # the fast paths below need every request to end after it arrives
        return (*_kiefer_wolfowitz(arrive, service, k, 0, [-math.inf] * k), None)
    few = _few_waits(arrive, service, k, ordered)
    if few is not None:
        return few
    # Kiefer-Wolfowitz, with the stretches where a server is free at every arrival done in numpy. Its heap of
    # k free times holds the k latest ends so far (an end is never below the free time it replaces), so
    # request i starts at its arrival iff fewer than k of the earlier requests' ends are after it. Blocks of
    # requests are checked at once under the assumption that none of them waited; up to the first that
    # must wait the assumption holds, and from there the recursion runs one request at a time for a while.
    start = arrive.copy()
    ends = arrive + service
    top = np.full(k, -math.inf)  # the k latest ends so far, sorted
    at, block, stretch = 0, 1024, 64
    while at < n:
        stop = min(n, at + block)
        arrive_block = arrive[at:stop]
        # ends are arrivals plus service: nearly sorted already, which a stable sort (a merge sort that takes
        # sorted runs as they come) orders several times faster than quicksort
        busy = (k - np.searchsorted(top, arrive_block, side="right")  # earlier ends after each arrival
                + np.arange(stop - at)
                - np.searchsorted(np.sort(ends[at:stop], kind="stable"), arrive_block, side="right"))
        waits = np.flatnonzero(busy >= k)
        free_run = int(waits[0]) if waits.size else stop - at
        if free_run:
            latest = np.concatenate([top, ends[at:at + free_run]])
            top = np.sort(np.partition(latest, len(latest) - k)[-k:])
            at += free_run
        if at >= n:
            break
        if waits.size:  # one at a time from the first request that waits
            until = min(n, at + stretch)
            free = top.tolist()  # sorted: a valid heap
            _kiefer_wolfowitz(arrive, service, k, at, free, start, until)
            ends[at:until] = start[at:until] + service[at:until]
            top = np.sort(np.asarray(free))
            at = until
            # the next block about twice the last free run; a longer stretch while few requests run free
            stretch = 64 if free_run >= stretch else min(1 << 14, stretch * 2)
            block = min(1 << 16, max(256, 2 * free_run))
        else:
            block = min(1 << 16, block * 2)
    return start, start + service, None


def _few_waits(arrive: np.ndarray, service: np.ndarray, k: int,
               ordered: bool = False) -> Optional[tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]]:
    """fifo_pool's (start, end) times where few requests wait (a pool with servers to spare), with, if `ordered`,
    the order of the ends (np.argsort(end, kind="stable"), from the sort of the no-wait ends made anyway: the
    batcher's queue takes requests in that order), else None; or None where more than about one in 500 would
    wait, or the pool is busy over 80 % of the time (fifo_pool's blocks do better there).

    A request waits iff at least k earlier requests end after it arrives (fifo_pool's Kiefer-Wolfowitz reading).
    Had none waited, request j would end at e_j = arrival + service, and request i would find
    busy_i = i - #{j: e_j <= a_i} of them still in service (a count over the sorted ends); a request that waits
    ends later than e_j, by its wait, so the true count is busy_i plus the waited requests j < i with
    e_j <= a_i < their true end. Every request with busy_i >= k waits; the others wait only where those waited
    requests push their count to k, which is checked over the arrivals in each one's extra time. They are taken
    in order: each starts when the k-th latest of the earlier true ends comes (read from the requests that can
    still be in service: those that arrived within twice the longest service, and the waited ones), as the
    recursion's heap would give it, so the same floats."""
    n = len(arrive)
    if float(np.sum(service)) > 0.8 * k * float(arrive[-1] - arrive[0]):
        return None  # busy most of the time: many wait
    ends = arrive + service  # the no-wait ends; the true ends once requests wait (start + service: returned)
    # nearly sorted already: a merge sort takes its runs
    by_end = np.argsort(ends, kind="stable") if ordered else None
    no_wait_sorted = ends[by_end] if ordered else np.sort(ends, kind="stable")
    # k earlier ends after a_i include one at index <= i - k, so only requests behind an end that reaches past
    # them (a running maximum, a cache-sized chunk at a time: no temporary of a value per request) are counted
    maybe_parts, reach_so_far = [], -math.inf
    for at in range(0, n - k, CHUNK):
        stop = min(n - k, at + CHUNK)
        running = np.maximum.accumulate(ends[at:stop])
        np.maximum(running, reach_so_far, out=running)
        reach_so_far = float(running[-1])
        maybe_parts.append(k + at + np.flatnonzero(running > arrive[k + at:k + stop]))
    maybe = np.concatenate(maybe_parts) if maybe_parts else np.zeros(0, dtype=np.int64)
    del maybe_parts
    busy = maybe - np.searchsorted(no_wait_sorted, arrive[maybe], side="right")
    waits = maybe[busy >= k].tolist()
    del busy, maybe
    most_waits = max(64, n // 512)
    if len(waits) > most_waits:
        return None
    start = arrive.copy()
    reach = 2 * float(service.max())  # requests that arrived longer ago than this ended without waiting
    extra = np.zeros(n, dtype=np.int32)  # waited requests still in service beyond their no-wait end
    late: list[tuple[float, int]] = []  # (true end, index) of the waited requests
    moved: list[tuple[int, float]] = []  # (index, no-wait end) of every request that waited
    taken, count = -1, 0
    while waits:
        i = heapq.heappop(waits)
        if i <= taken:
            continue  # found twice
        taken = i
        count += 1
        if count > most_waits:
            return None
        arrival = float(arrive[i])
        first = int(np.searchsorted(arrive, arrival - reach, side="left"))
        late = [(end, j) for end, j in late if end > arrival]
        candidates = ends[first:i]
        outside = [end for end, j in late if j < first]
        if outside:
            candidates = np.concatenate([candidates, outside])
        if len(candidates) < k:
            continue
        free_at = float(np.partition(candidates, len(candidates) - k)[len(candidates) - k])  # k-th latest end
        if free_at <= arrival:
            continue
        no_wait_end, end = float(ends[i]), free_at + float(service[i])
        start[i], ends[i] = free_at, end
        late.append((end, i))
        moved.append((i, no_wait_end))
        # the requests arriving in [no-wait end, true end) find one more request in service than counted
        low = int(np.searchsorted(arrive, no_wait_end, side="left"))
        high = int(np.searchsorted(arrive, end, side="left"))
        if high > low:
            extra[low:high] += 1
            busy = np.arange(low, high) - np.searchsorted(no_wait_sorted, arrive[low:high], side="right")
            for index in (low + np.flatnonzero(busy + extra[low:high] >= k)).tolist():
                heapq.heappush(waits, index)
    return start, ends, (_reordered(by_end, no_wait_sorted, ends, moved) if ordered else None)


def _reordered(order: np.ndarray, old_sorted: np.ndarray, values: np.ndarray,
               moved: list[tuple[int, float]]) -> np.ndarray:
    """np.argsort(values, kind="stable") from `order`, that of the values before the `moved` ones (index, value
    before) grew (old_sorted: the values before, in that order): the moved are taken out and put back where their
    new values go, after the equal values of lower index."""
    if not moved:
        return order
    indices = np.array([index for index, _ in moved], dtype=np.int64)
    before = np.array([value for _, value in moved])
    # where each sits in `order`: in the run of its value before, whose indices are in ascending order
    low = np.searchsorted(old_sorted, before, side="left")
    high = np.searchsorted(old_sorted, before, side="right")
    removed = sorted(at + int(np.searchsorted(order[at:stop], index)) for index, at, stop in zip(indices, low, high))
    after = values[indices]
    # among the rest (the values before, less the moved): those below the new value, then the equal ones of
    # lower index
    places = np.searchsorted(old_sorted, after, side="left") - np.searchsorted(np.sort(before), after, side="left")
    moved_set = set(indices.tolist())
    for which, (index, value) in enumerate(zip(indices.tolist(), after.tolist())):
        at, stop = np.searchsorted(old_sorted, value, side="left"), np.searchsorted(old_sorted, value, side="right")
        if stop > at:
            places[which] += sum(1 for other in order[at:stop].tolist() if other < index and other not in moved_set)
    by_place = np.lexsort((indices, after))  # by new value, then index: their order where places are equal
    inserts = list(zip(places[by_place].tolist(), indices[by_place].tolist()))
    # the rest is `order` less the removed positions, a slice between each two of them; the moved go in before the
    # rest's element at their place: one new array, of the slices and the moved between them
    pieces, done, last = [], 0, len(removed)  # done: elements of the rest before the current slice
    for number, (start, stop) in enumerate(zip([0] + [position + 1 for position in removed], removed + [len(order)])):
        at = start
        while inserts and (inserts[0][0] < done + stop - start or number == last):
            place, index = inserts.pop(0)
            cut = start + place - done
            pieces += [order[at:cut], np.array([index], dtype=order.dtype)]
            at = cut
        pieces.append(order[at:stop])
        done += stop - start
    return np.concatenate(pieces)


def _kiefer_wolfowitz(arrive: np.ndarray, service: np.ndarray, k: int, first: int, free: list,
                      start: Optional[np.ndarray] = None, until: Optional[int] = None):
    """Requests first..until-1 through a FIFO pool of k servers whose free times are the heap `free` (updated
    in place); their starts go into `start`. Without `start`: the whole run, returning (start, end)."""
    whole = start is None
    until = len(arrive) if until is None else until
    # once per request: plain lists (numpy scalars are slow to index one at a time) and a bound heapreplace
    arrive_list, service_list = arrive[first:until].tolist(), service[first:until].tolist()
    starts = [0.0] * (until - first)
    replace = heapq.heapreplace
    for i in range(until - first):
        earliest_free, begin = free[0], arrive_list[i]
        if earliest_free > begin:
            begin = earliest_free
        starts[i] = begin
        replace(free, begin + service_list[i])
    if not whole:
        start[first:until] = starts
        return None
    start = np.array(starts)
    return start, start + service


def run_host(stages: tuple[StageCost, ...], arrive: np.ndarray, sizes: np.ndarray, q_mean: float,
             rngs: list[np.random.Generator], isolated: bool = False) -> HostTimes:
    """Push every request through the host stages in order; `isolated`: no queueing (closed loop, one
    request in the system), so each request's time is its fixed delays plus its service samples."""
    n = len(arrive)
    names, servers, enters, starts, ends = [], [], [], [], []
    leave = arrive  # when each request leaves the previous stage
    scale = None  # sizes / q_mean, made when a stage has a per-item part and the sizes differ
    order = None  # np.argsort(leave, kind="stable") where the pool just passed gave it
    for number, (stage, rng) in enumerate(zip(stages, rngs)):
        n_servers, mean = pool_shape(stage)
        order = None
        enter = leave + stage.fixed_s
        if n_servers == 0:
            start = end = enter
        else:
            per_item = per_item_fraction(stage)
            service = lognormal(mean, stage.scv, n, rng)
            if per_item > 0 and not np.all(sizes == sizes[0]):
                if scale is None:
                    scale = sizes / q_mean if q_mean > 0 else np.ones(n)
                service = service * ((1 - per_item) + per_item * scale)
            if isolated:
                start, end = enter, enter + service
            elif n > 1 and np.any(enter[1:] < enter[:-1]):  # overtaking in an earlier pool: FIFO by entry
                order = np.argsort(enter, kind="stable")
                start_sorted, end_sorted = fifo_pool(enter[order], service[order], n_servers)
                start, end = np.empty(n), np.empty(n)
                start[order], end[order] = start_sorted, end_sorted
            else:  # the last stage's order of ends is the batcher's (wanted only there)
                start, end, order = fifo_pool_ordered(enter, service, n_servers, ordered=number == len(stages) - 1)
            own = own_service_ratio(stage)
            if own < 1:  # the server stays busy for the whole service; the request leaves after its own share
                end = start + (end - start) * own
                order = None
        names.append(stage.name), servers.append(n_servers), enters.append(enter), starts.append(start)
        ends.append(end)
        leave = end
    return HostTimes(names=tuple(names), servers=tuple(servers), enter=tuple(enters), start=tuple(starts),
                     end=tuple(ends), ready=leave, ready_order=order)
