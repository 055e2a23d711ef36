"""The simulator's batcher: each rule fires in a constructed case; PREBA buckets and merging on a
hand-built arrival sequence; the static (open-loop) and dynamic (per-arrival) paths agree."""

import numpy as np
import pytest

from engine.sim.batcher import static_queue
from engine.sim.gpu import GpuEngine, GpuRequests, GpuSpec
from engine.sim.plan import NO_CAP, GpuPlan

MS = 1e-3


class FixedService:
    """Deterministic batch service: `base` + `per_item` x items seconds, per partition."""

    def __init__(self, base, per_item=0.0):
        self.base = base if isinstance(base, list) else [base]
        self.per_item = per_item
        self.capacity = [1.0 / b for b in self.base]

    def mean(self, p, items, length=None):
        return self.base[p] + self.per_item * items

    def sample(self, p, items, length, k):
        return self.mean(p, items, length)


def run(ready_ms, caps, tq_ms, service, sizes=None, lengths=None, request_cap=NO_CAP, scheduler="fifs", width=0.0,
        merge=False, force_dynamic=False):
    ready = np.array(ready_ms, dtype=float) * MS
    sizes = np.ones(len(ready), dtype=np.int64) if sizes is None else np.array(sizes, dtype=np.int64)
    plan = GpuPlan(batch_max=caps, request_cap=request_cap, time_queue_s=tq_ms * MS, bucket_width=width, merge=merge)
    requests = GpuRequests(ready=ready, sizes=sizes, lengths=None if lengths is None else np.array(lengths, float),
                           arrival=ready)
    log = GpuEngine(GpuSpec(service=service, plan=plan, scheduler=scheduler, sla_s=1.0), requests,
                    force_dynamic=force_dynamic).run()
    batches = []
    for b in range(len(log.start)):
        members = sorted(np.flatnonzero(log.request_batch == b).tolist())
        batches.append((round(log.start[b] / MS, 9), int(log.partition[b]), members))
    return batches, log


def test_size_rule_fires_when_batch_max_requests_wait():
    # Batch_max 4, Time_queue 10 ms: the 4th request (3 ms) completes the batch before the timeout
    batches, _ = run([0, 1, 2, 3, 4], [[4]], 10, FixedService(5 * MS))
    assert batches[0] == (3.0, 0, [0, 1, 2, 3])


def test_timeout_rule_fires_when_the_oldest_has_waited_time_queue():
    batches, log = run([0, 1], [[4]], 10, FixedService(5 * MS))
    assert batches == [(10.0, 0, [0, 1])]
    assert log.formed[0] == pytest.approx(10 * MS)


def test_busy_instance_holds_the_batch_until_it_is_free():
    # batch 1 (request 0, alone) times out at 2 ms and runs to 22 ms; requests at 5, 6, 7 ms have timed out
    # by 9 ms, but the only instance is busy: they leave together at 22 ms
    batches, log = run([0, 5, 6, 7], [[4]], 2, FixedService(20 * MS))
    assert batches == [(2.0, 0, [0]), (22.0, 0, [1, 2, 3])]
    assert log.formed[1] == pytest.approx(7 * MS)  # rule met at 7 ms; the 15 ms after that are queueing


def test_busy_instance_batch_is_capped_at_batch_max_and_rest_waits():
    batches, _ = run([0, 1, 1, 1, 1, 1, 1], [[3]], 0.5, FixedService(10 * MS))
    assert batches[0] == (0.5, 0, [0])
    assert batches[1] == (10.5, 0, [1, 2, 3])  # Batch_max 3 of the 6 waiting
    assert batches[2] == (20.5, 0, [4, 5, 6])


def test_work_conserving_takes_everything_outstanding_at_once():
    batches, _ = run([0, 1, 2, 3], [[8]], 0, FixedService(5 * MS))
    assert batches == [(0.0, 0, [0]), (5.0, 0, [1, 2, 3])]


def test_none_runs_each_query_alone_at_its_size():
    svc = FixedService(1 * MS, per_item=1 * MS)
    batches, log = run([0, 0, 0], [[32]], 0, svc, sizes=[4, 2, 7], request_cap=1)
    assert [b[2] for b in batches] == [[0], [1], [2]]
    assert log.items.tolist() == [4, 2, 7]
    assert log.end[-1] == pytest.approx((5 + 3 + 8) * MS)


def test_batch_max_counts_items_and_a_large_query_runs_alone():
    batches, log = run([0, 0, 0, 0], [[8]], 1, FixedService(1 * MS), sizes=[3, 3, 3, 12])
    assert [b[2] for b in batches] == [[0, 1], [2], [3]]
    assert log.items.tolist() == [6, 3, 12]


def test_first_idle_first_serve_uses_instances_in_the_order_they_became_free():
    # two instances, Batch_max 1: p0 takes r0, p1 takes r1; p1 finishes first (faster) and takes r2
    batches, _ = run([0, 0, 1], [[1], [1]], 0, FixedService([10 * MS, 2 * MS]))
    assert batches == [(0.0, 0, [0]), (0.0, 1, [1]), (2.0, 1, [2])]


def test_preba_buckets_and_merging_on_a_hand_built_sequence():
    # buckets of 2.5 s: b0 [0, 2.5), b1 [2.5, 5), b2 [5, 7.5); Batch_max 8 / 4 / 2; Time_queue 10 ms
    ready = [0, 1, 2, 3, 4, 5, 30, 31]
    lengths = [3.0, 1.0, 3.5, 4.0, 1.5, 6.0, 6.1, 6.2]  # b1 b0 b1 b1 b0 b2 b2 b2
    batches, log = run(ready, [[8, 4, 2]], 10, FixedService(5 * MS), lengths=lengths, width=2.5, merge=True)
    # 10 ms: b1 times out first (oldest 0 ms) with 3 requests, topped up to its Batch_max 4 from b0 (the 1 ms one);
    #        b2 would lower the cap to 2, so it is not merged
    # 15 ms: instance free; b0 (4 ms) and b2 (5 ms) are both due, b0 is older: 1 request, + 1 from b2 under
    #        b2's Batch_max of 2 (the longest input now decides)
    # 31 ms: b2's two requests at 30 and 31 ms fill its Batch_max 2
    assert batches == [(10.0, 0, [0, 1, 2, 3]), (15.0, 0, [4, 5]), (31.0, 0, [6, 7])]
    assert log.items.tolist() == [4, 2, 2]


def test_preba_without_merging_keeps_buckets_apart():
    ready = [0, 1, 2, 3, 4, 5, 30, 31]
    lengths = [3.0, 1.0, 3.5, 4.0, 1.5, 6.0, 6.1, 6.2]
    batches, _ = run(ready, [[8, 4, 2]], 10, FixedService(5 * MS), lengths=lengths, width=2.5, merge=False)
    assert batches[0] == (10.0, 0, [0, 2, 3])
    assert all(len({int(lengths[i] // 2.5) for i in b[2]}) == 1 for b in batches)


@pytest.mark.parametrize("scheduler", ["fifs", "round-robin"])
def test_static_and_dynamic_paths_form_the_same_batches(scheduler):
    rng = np.random.default_rng(5)
    ready = np.cumsum(rng.exponential(0.4, 3000))
    sizes = rng.integers(1, 4, 3000)
    svc = FixedService([3 * MS, 5 * MS, 8 * MS], per_item=0.2 * MS)
    kw = dict(caps=[[6], [8], [12]], tq_ms=1.5, service=svc, sizes=sizes, scheduler=scheduler)
    a, la = run(ready, **kw)
    b, lb = run(ready, force_dynamic=True, **kw)
    assert a == b
    np.testing.assert_allclose(la.end, lb.end)


def test_static_queue_reads_its_requests_from_the_runs_arrays():
    """static_queue takes the run's per-request arrays and the ids of its requests (ready order): its buckets hold
    those requests' ready times (gathered straight into a typed array), items and lengths; a queue whose requests
    are all one item counts positions even where the run has larger queries elsewhere."""
    ready = np.array([0.5, 0.1, 0.3, 0.2, 0.4])
    sizes = np.array([1, 1, 3, 1, 2])
    ids = np.array([1, 3, 0])  # one item each
    bucket = static_queue(0, ids, ready, sizes, None).buckets[0]
    assert list(bucket.ready) == [0.1, 0.2, 0.5] and bucket.cum_items is None
    ids = np.array([1, 2, 4])
    bucket = static_queue(0, ids, ready, sizes, np.array([1.0, 2.0, 3.0, 4.0, 5.0])).buckets[0]
    assert list(bucket.ready) == [0.1, 0.3, 0.4] and bucket.cum_items == [1, 4, 6] and bucket.lengths == [2.0, 3.0, 5.0]
    buckets = static_queue(3, ids, ready, sizes, np.array([1.0, 2.0, 3.0, 4.0, 5.0]), width=2.5).buckets
    assert [b.index for b in buckets] == [3, 4, 5]
    assert [list(b.ready) for b in buckets] == [[0.1], [0.3], [0.4]]
    assert [b.ids.tolist() for b in buckets] == [[1], [2], [4]]
