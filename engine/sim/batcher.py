"""Batch formation: when a batch leaves and which requests it takes (pure functions, no simpy).

Rules (DESIGN.md section 5; PREBA section 4.3), for the instance p that will run the batch:
- fixed: the batch leaves when p is free and either Batch_max(p) items wait or the oldest request
  has waited Time_queue; it takes the waiting requests, oldest first, up to Batch_max(p) items.
- work-conserving: the same with Time_queue = 0 (everything outstanding, up to the cap).
- none: one query per batch, run at its own size (a request cap of 1, no waiting).
- PREBA: requests go to length buckets of `width` (2.5 s of audio); each bucket has its own
  Batch_max(p, bucket), the knee at the bucket's longest input; the first bucket to be full or to
  time out leaves (the one with the oldest request when several are due). A batch below its
  Batch_max is topped up from the neighbouring buckets, nearest first, shorter before longer,
  oldest first, never exceeding the Batch_max of the longest input in the batch.
A query larger than Batch_max runs alone. Requests enter a queue already sorted by the time they
reach the batcher; a static queue holds every future request (open loop: the batcher can tell
when the k-th request will arrive), a dynamic one only those that arrived (JSQ, ELSA, closed loop).

The protocol with the GPU side (engine.sim.gpu): BatchQueue.decide() -> BatchDecision (when and from
which bucket), then BatchQueue.take() -> TakenBatch (which requests, as Segments of buckets).
"""

from __future__ import annotations

import bisect
import math
from array import array
from typing import Optional

import numpy as np

INF = math.inf


# Plain tuples, named here and unpacked into named variables by their one consumer (engine.sim.gpu): they are
# built at least once per batch, and as NamedTuples they made the GPU side 8-15 % slower (JSQ, FIFS).
BatchDecision = tuple[float, float, int, int]
"""decide()'s answer: (leave_at: when the batch leaves (for a dynamic queue not yet full, its timeout),
rule_met_at: when its rule (full or timed out) was met, before leave_at when the instance was busy,
bucket: which of the queue's length buckets, request_limit: at most this many requests)."""
Segment = tuple[int, int, int]
"""A run of consecutive requests taken from one bucket: (Bucket.index, position of the first, count)."""
TakenBatch = tuple[list[Segment], int, Optional[float]]
"""take()'s answer: (segments, items, longest input in the batch for variable-length models, else None)."""


class Bucket:
    """Requests of one queue (and one length bucket), oldest first, with a head pointer."""

    # slots: attribute reads on the hot path, and one Bucket per queue and length bucket
    __slots__ = ("ids", "ready", "cum_items", "lengths", "head", "index")

    def __init__(self, index: int, ids=None, ready=None, sizes=None, lengths=None, unit_sizes: bool = True):
        self.index = index  # among every bucket of the run (segments and the GPU side's log name it)
        # a static queue's ids stay a numpy array (only the batch log reads them); a dynamic queue appends
        self.ids = ids if isinstance(ids, np.ndarray) else (list(ids) if ids is not None else [])
        # a static queue's ready times come as a typed array (8 bytes a request, no float objects; indexing and
        # bisection cost what a list's do); a dynamic queue appends to a list
        self.ready = ready if isinstance(ready, array) else (list(ready) if ready is not None else [])
        # items of the first i + 1 requests; None when every query is one item (counts are then positions)
        self.cum_items = None if unit_sizes else (np.cumsum(sizes).tolist() if sizes is not None else [])
        self.lengths = list(lengths) if lengths is not None else None
        self.head = 0  # first request not yet taken

    def append(self, request: int, ready: float, size: int, length: Optional[float]) -> None:
        self.ids.append(request)
        self.ready.append(ready)
        if self.cum_items is not None:
            self.cum_items.append((self.cum_items[-1] if self.cum_items else 0) + size)
        if self.lengths is not None:
            self.lengths.append(length)

    def waiting(self) -> int:
        return len(self.ids) - self.head

    def fit(self, batch_max: int, request_cap: int) -> tuple[int, int]:
        """(count, last): how many requests from the head fit in `batch_max` items (at least one, at most
        `request_cap`); the batch is full when request `last` arrives: the count-th if it brings the batch
        to `batch_max` items or `request_cap` requests, else the next one, which does not fit (an index past
        the known requests: not full yet)."""
        head = self.head
        if self.cum_items is None:
            count = batch_max if batch_max < request_cap else request_cap
            return count, head + count - 1
        cum = self.cum_items
        before = cum[head - 1] if head else 0
        count = bisect.bisect_right(cum, before + batch_max, head) - head
        if count < 1:
            return 1, head
        if count >= request_cap:
            return request_cap, head + request_cap - 1
        end = head + count
        full = end <= len(cum) and cum[end - 1] - before == batch_max
        return count, (end - 1 if full else end)

    def items(self, position: int, count: int) -> int:
        if self.cum_items is None:
            return count
        return self.cum_items[position + count - 1] - (self.cum_items[position - 1] if position else 0)


class BatchQueue:
    """One batching queue: a single bucket, or PREBA's length buckets (`width` > 0)."""

    def __init__(self, buckets: list[Bucket], static: bool, width: float = 0.0, merge: bool = False):
        self.buckets = buckets
        self.static = static
        self.width = width
        self.merge = merge
        self.waiter = None  # simpy event of the partition waiting on this queue (dynamic queues)

    def bucket_of(self, length: Optional[float]) -> int:
        if self.width <= 0 or length is None:
            return 0
        return min(len(self.buckets) - 1, int(length // self.width))

    def decide(self, now: float, batch_max: list[int], request_cap: int,
               time_queue_s: float) -> Optional[BatchDecision]:
        """The next batch (batch_max per bucket), or None when the queue is empty.

        For a dynamic queue whose batch is not yet full, leave_at is the timeout (an arrival may
        fill it earlier: the caller waits for that time or the next arrival, then decides again).
        """
        if len(self.buckets) == 1:
            bucket = self.buckets[0]
            head, known = bucket.head, len(bucket.ready)
            if head >= known:
                return None
            count, last = bucket.fit(batch_max[0], request_cap)
            due = bucket.ready[head] + time_queue_s
            if last < known and bucket.ready[last] < due:
                due = bucket.ready[last]
            return (now if due <= now else due), due, 0, count
        best = None
        for index, bucket in enumerate(self.buckets):
            head, known = bucket.head, len(bucket.ready)
            if head >= known:
                continue
            count, last = bucket.fit(batch_max[index], request_cap)
            due = bucket.ready[head] + time_queue_s
            if last < known and bucket.ready[last] < due:
                due = bucket.ready[last]
            # the earliest to leave; among those due now, the one with the oldest request
            key = (max(due, now), bucket.ready[head])
            if best is None or key < best[0]:
                best = (key, due, index, count)
        if best is None:
            return None
        (leave_at, _), due, index, count = best
        return leave_at, due, index, count

    def take(self, at: float, bucket_index: int, request_limit: int, batch_max: list[int]) -> TakenBatch:
        """Take the batch at time `at` from bucket `bucket_index` (request_limit requests at most): those that
        reached the batcher by then."""
        bucket = self.buckets[bucket_index]
        head = bucket.head
        stop = min(head + request_limit, len(bucket.ready))
        if bucket.ready[stop - 1] > at:
            count = bisect.bisect_right(bucket.ready, at, head, stop) - head
        else:
            count = stop - head
        bucket.head = head + count
        items = bucket.items(head, count)
        segments = [(bucket.index, head, count)]
        longest = max(bucket.lengths[head:head + count]) if bucket.lengths is not None else None
        if self.merge and len(self.buckets) > 1 and items < batch_max[bucket_index]:
            items, longest = self._merge(at, bucket_index, batch_max, items, longest, segments)
        return segments, items, longest

    def _merge(self, at, first, batch_max, items, longest, segments):
        """PREBA: top up from neighbouring buckets without exceeding Batch_max of the longest input."""
        top = first  # the longest bucket in the batch so far: its Batch_max is the limit
        n_buckets = len(self.buckets)
        for distance in range(1, n_buckets):
            for index in (first - distance, first + distance):
                if not 0 <= index < n_buckets:
                    continue
                limit = batch_max[max(top, index)]
                if items >= limit:
                    continue
                bucket = self.buckets[index]
                head, known = bucket.head, len(bucket.ready)
                arrived = bisect.bisect_right(bucket.ready, at, head, known) - head
                if arrived <= 0:
                    continue
                count = 0
                while count < arrived and items + bucket.items(head + count, 1) <= limit:
                    items += bucket.items(head + count, 1)
                    count += 1
                if count:
                    bucket.head = head + count
                    segments.append((bucket.index, head, count))
                    if bucket.lengths is not None:
                        most = max(bucket.lengths[head:head + count])
                        longest = most if longest is None else max(longest, most)
                    top = max(top, index)
            if items >= batch_max[top]:
                break
        return items, longest


def _doubles(values: np.ndarray, ids: Optional[np.ndarray] = None) -> array:
    """A typed array of doubles with the values (values[ids] when ids are given), written straight into its
    buffer: one copy of their bytes, no float objects and no gathered numpy copy on the way (a fresh process
    pays for every page it touches first)."""
    count = len(values) if ids is None else len(ids)
    out = array("d", [0.0]) * count
    if count:
        view = np.frombuffer(out, dtype=np.float64)
        if ids is None:
            view[:] = values
        else:  # mode 'clip' writes into `out` directly ('raise' buffers it); ids are valid positions
            np.take(values, ids, out=view, mode="clip")
    return out


def static_queue(first_index: int, ids: np.ndarray, ready: np.ndarray, sizes: np.ndarray,
                 lengths: Optional[np.ndarray], width: float = 0.0, merge: bool = False) -> BatchQueue:
    """A queue that holds every request it will ever get: requests `ids` (sorted by ready time) of the run's
    per-request ready times, sizes and lengths; its buckets are numbered from first_index."""
    # every query one item in the whole run (no copy of the sizes needed), or in this queue's share of it
    mine = None if np.all(sizes == 1) else sizes[ids]
    unit = mine is None or bool(np.all(mine == 1))
    if width <= 0 or lengths is None:
        bucket = Bucket(first_index, ids, _doubles(ready, ids), mine, None if lengths is None else lengths[ids].tolist(),
                        unit)
        return BatchQueue([bucket], static=True)
    ready, sizes, lengths = ready[ids], sizes[ids] if mine is None else mine, lengths[ids]
    n_buckets = int(np.max(lengths) // width) + 1 if len(lengths) else 1
    which = np.minimum(n_buckets - 1, (lengths // width).astype(int))
    buckets = []
    for index in range(n_buckets):
        chosen = which == index
        buckets.append(Bucket(first_index + index, ids[chosen], _doubles(ready[chosen]), sizes[chosen],
                              lengths[chosen].tolist(), unit))
    return BatchQueue(buckets, static=True, width=width, merge=merge)


def dynamic_queue(first_index: int, n_buckets: int, unit_sizes: bool, has_lengths: bool, width: float = 0.0,
                  merge: bool = False) -> BatchQueue:
    """An empty queue that requests join as they reach the batcher."""
    buckets = [Bucket(first_index + index, lengths=[] if has_lengths else None, unit_sizes=unit_sizes)
               for index in range(max(1, n_buckets))]
    return BatchQueue(buckets, static=False, width=width if n_buckets > 1 else 0.0, merge=merge)
