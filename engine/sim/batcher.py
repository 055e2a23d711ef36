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
"""

from __future__ import annotations

import bisect
import math
from typing import Optional

import numpy as np

INF = math.inf


class Bucket:
    """Requests of one queue (and one length bucket), oldest first, with a head pointer."""

    __slots__ = ("ids", "ready", "cum", "lens", "head", "gid")

    def __init__(self, gid: int, ids=None, ready=None, sizes=None, lens=None, unit_sizes: bool = True):
        self.gid = gid
        self.ids = list(ids) if ids is not None else []
        self.ready = list(ready) if ready is not None else []
        self.cum = None if unit_sizes else (np.cumsum(sizes).tolist() if sizes is not None else [])
        self.lens = list(lens) if lens is not None else None
        self.head = 0

    def append(self, rid: int, ready: float, size: int, length: Optional[float]) -> None:
        self.ids.append(rid)
        self.ready.append(ready)
        if self.cum is not None:
            self.cum.append((self.cum[-1] if self.cum else 0) + size)
        if self.lens is not None:
            self.lens.append(length)

    def waiting(self) -> int:
        return len(self.ids) - self.head

    def fit(self, cap: int, rcap: int) -> tuple[int, int]:
        """(k, last): k = how many requests from the head fit in `cap` items (at least one, at most
        `rcap`); the batch is full when request `last` arrives: the k-th if it brings the batch to
        `cap` items or `rcap` requests, else the next one, which does not fit (an index past the
        known requests: not full yet)."""
        h = self.head
        if self.cum is None:
            k = cap if cap < rcap else rcap
            return k, h + k - 1
        cum = self.cum
        base = cum[h - 1] if h else 0
        k = bisect.bisect_right(cum, base + cap, h) - h
        if k < 1:
            return 1, h
        if k >= rcap:
            return rcap, h + rcap - 1
        return k, (h + k - 1 if h + k <= len(cum) and cum[h + k - 1] - base == cap else h + k)

    def items(self, pos: int, count: int) -> int:
        if self.cum is None:
            return count
        return self.cum[pos + count - 1] - (self.cum[pos - 1] if pos else 0)


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

    def decide(self, t: float, caps: list[int], rcap: int, tq: float):
        """(time the batch leaves, time its rule was met, bucket, request cap) or None when empty.

        For a dynamic queue whose batch is not yet full, the time is the timeout (an arrival may
        fill it earlier: the caller waits for that time or the next arrival, then decides again).
        """
        if len(self.buckets) == 1:
            b = self.buckets[0]
            h, n = b.head, len(b.ready)
            if h >= n:
                return None
            k, last = b.fit(caps[0], rcap)
            due = b.ready[h] + tq
            if last < n and b.ready[last] < due:
                due = b.ready[last]
            return (t if due <= t else due), due, 0, k
        best = None
        for j, b in enumerate(self.buckets):
            h, n = b.head, len(b.ready)
            if h >= n:
                continue
            k, last = b.fit(caps[j], rcap)
            due = b.ready[h] + tq
            if last < n and b.ready[last] < due:
                due = b.ready[last]
            key = (max(due, t), b.ready[h])
            if best is None or key < best[0]:
                best = (key, due, j, k)
        if best is None:
            return None
        return best[0][0], best[1], best[2], best[3]

    def take(self, td: float, j: int, k: int, caps: list[int]):
        """Take the batch at time td from bucket j (k requests at most): ([(bucket gid, pos, count)],
        items, longest input or None)."""
        b = self.buckets[j]
        h = b.head
        hi = min(h + k, len(b.ready))
        m = bisect.bisect_right(b.ready, td, h, hi) - h if b.ready[hi - 1] > td else hi - h
        b.head = h + m
        items = b.items(h, m)
        segs = [(b.gid, h, m)]
        longest = max(b.lens[h:h + m]) if b.lens is not None else None
        if self.merge and len(self.buckets) > 1 and items < caps[j]:
            items, longest = self._merge(td, j, caps, items, longest, segs)
        return segs, items, longest

    def _merge(self, td, j, caps, items, longest, segs):
        """PREBA: top up from neighbouring buckets without exceeding Batch_max of the longest input."""
        top = j
        nb = len(self.buckets)
        for d in range(1, nb):
            for i in (j - d, j + d):
                if not 0 <= i < nb:
                    continue
                limit = caps[max(top, i)]
                if items >= limit:
                    continue
                b = self.buckets[i]
                h, n = b.head, len(b.ready)
                arrived = bisect.bisect_right(b.ready, td, h, n) - h
                if arrived <= 0:
                    continue
                m = 0
                while m < arrived and items + b.items(h + m, 1) <= limit:
                    items += b.items(h + m, 1)
                    m += 1
                if m:
                    b.head = h + m
                    segs.append((b.gid, h, m))
                    if b.lens is not None:
                        mx = max(b.lens[h:h + m])
                        longest = mx if longest is None else max(longest, mx)
                    top = max(top, i)
            if items >= caps[top]:
                break
        return items, longest


def static_queue(first_gid: int, ids: np.ndarray, ready: np.ndarray, sizes: np.ndarray,
                 lengths: Optional[np.ndarray], width: float = 0.0, merge: bool = False) -> BatchQueue:
    """A queue that holds every request it will ever get (ids sorted by ready time)."""
    unit = bool(np.all(sizes == 1))
    if width <= 0 or lengths is None:
        b = Bucket(first_gid, ids.tolist(), ready.tolist(), sizes, None if lengths is None else lengths.tolist(), unit)
        return BatchQueue([b], static=True)
    nb = int(np.max(lengths) // width) + 1 if len(lengths) else 1
    which = np.minimum(nb - 1, (lengths // width).astype(int))
    buckets = []
    for j in range(nb):
        sel = which == j
        buckets.append(Bucket(first_gid + j, ids[sel].tolist(), ready[sel].tolist(), sizes[sel],
                              lengths[sel].tolist(), unit))
    return BatchQueue(buckets, static=True, width=width, merge=merge)


def dynamic_queue(first_gid: int, n_buckets: int, unit_sizes: bool, has_lengths: bool, width: float = 0.0,
                  merge: bool = False) -> BatchQueue:
    buckets = [Bucket(first_gid + j, lens=[] if has_lengths else None, unit_sizes=unit_sizes)
               for j in range(max(1, n_buckets))]
    return BatchQueue(buckets, static=False, width=width if n_buckets > 1 else 0.0, merge=merge)
