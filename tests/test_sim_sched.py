"""Scheduling across partitions: ELSA's slack rule by hand, ELSA against first-idle-first-serve (PARIS's
result), join-shortest-queue and round-robin, and the policy lookup."""

import numpy as np
import pytest

from engine.analytic import Context, build_design, capacity
from engine.profiles.interp import OutOfRange  # noqa: F401  (the profile book must import)
from engine.scenario import load_scenario
from engine.sim import SimError, simulate_design
from engine.sim.schedulers import Elsa, JoinShortestQueue, RoundRobin, SchedulerView, scheduler_for

MS = 1e-3


class Svc:
    """Partition 0 is small (10 ms per query), partition 1 large (4 ms)."""

    capacity = [100.0, 250.0]

    def mean(self, p, items, length=None):
        return (10 * MS, 4 * MS)[p] * items


def view(alpha=1.0, beta=1.0, sla_s=20 * MS):
    """Two partitions, one query per batch, ten one-item queries that arrived at 0."""
    return SchedulerView(n_partitions=2, service=Svc(), batch_max=[32, 32], request_cap=1, sla_s=sla_s, alpha=alpha,
                         beta=beta, sizes=[1] * 10, lengths=None, arrivals=[0.0] * 10)


def test_elsa_prefers_the_smallest_partition_with_slack():
    e = Elsa(view())
    assert e.order == [0, 1]  # ascending size
    assert e.assign(0, 0.0) == 0  # slack: 20 - (0 + 10) > 0 on the small one


def test_elsa_skips_a_small_partition_whose_queue_eats_the_slack():
    e = Elsa(view())
    e.assign(0, 0.0)  # small partition now has 10 ms queued
    # small: 20 - (10 + 10) = 0, not > 0; large: 20 - (0 + 4) > 0
    assert e.assign(1, 0.0) == 1


def test_elsa_counts_the_remaining_time_of_the_running_batch():
    e = Elsa(view())
    e.on_start(0, 0.0, 15 * MS)  # a batch started at 0 on the small partition, estimated 15 ms
    assert e.estimates(0, 6 * MS)[0] == pytest.approx((9 * MS, 10 * MS))  # T_wait = 15 - 6 remaining
    assert e.assign(0, 6 * MS) == 1  # elapsed 6 ms counts against the SLA too: 14 - (9 + 10) < 0


def test_elsa_falls_back_to_the_fastest_completion():
    e = Elsa(view())
    e.queued_estimate = [15 * MS, 18 * MS]  # small: 15 + 10 = 25, large: 18 + 4 = 22; neither meets 20 ms
    e.queued_items = [1, 4]
    assert e.assign(0, 0.0) == 1


def test_elsa_alpha_and_beta_scale_the_estimate():
    assert Elsa(view(alpha=2.0)).assign(0, 0.0) == 1  # 2 x 10 = 20 is not below the 20 ms SLA
    assert Elsa(view(beta=1.9)).assign(0, 0.0) == 0  # 1.9 x 10 = 19 < 20
    assert Elsa(view(beta=2.1)).assign(0, 0.0) == 1


def test_elsa_bookkeeping_follows_takes():
    e = Elsa(view())
    e.assign(0, 0.0)
    e.on_take(0, 1, 10 * MS)
    assert e.queued_items == [0, 0] and e.queued_estimate == [0.0, 0.0]


def test_jsq_and_round_robin():
    j = JoinShortestQueue(view())
    assert [j.assign(i, 0.0) for i in range(4)] == [0, 1, 0, 1]
    j.on_done(1, 2)
    assert j.assign(4, 0.0) == 1
    r = RoundRobin(view())
    assert r.static_assign(5).tolist() == [0, 1, 0, 1, 0]
    assert [r.assign(i, 0.0) for i in range(3)] == [0, 1, 0]


def test_unknown_scheduler_lists_the_valid_ones():
    with pytest.raises(SimError, match="valid: fifs, elsa, round-robin, jsq"):
        scheduler_for("lottery")


@pytest.fixture(scope="module")
def ctx(store):
    return Context.from_store(store)


def paris(ctx, sched: str, **extra):
    """PARIS section V: heterogeneous partitions, log-normal query sizes 1..32, no batching (a query is a batch),
    SLA = 1.5 x the latency of the largest query on GPU(7), the whole A100 (7g.40gb)."""
    t32 = ctx.book.predict("resnet50", "A100-SXM4-40GB", "7g.40gb", 32).mean_s
    sc = load_scenario({"model": "resnet50", "gpu": {"sku": "A100-SXM4-40GB",
                                                     "layout": ["3g.20gb", "2g.10gb", "1g.5gb", "1g.5gb"]},
                        "batching": {"policy": "none"}, "scheduler": {"policy": sched, **extra},
                        "preprocessing": {"device": "none"}, "rpc": {"preset": "local"},
                        "workload": {"query_size": {"kind": "lognormal", "mu": 1.5, "sigma": 1.0, "max_size": 32},
                                     "sla": {"latency_ms": 1.5 * t32 * 1e3}}}, ctx.book)
    return build_design(sc, ctx)


@pytest.mark.parametrize("load", [0.4, 0.7])
def test_elsa_violates_the_sla_less_often_than_fifs(ctx, load):
    d_fifs, d_elsa = paris(ctx, "fifs"), paris(ctx, "elsa")
    rate = load * capacity(d_fifs)[0]
    fifs = simulate_design(d_fifs, 30_000, seed=7, rate=rate, ctx=ctx, stats="numpy")
    elsa = simulate_design(d_elsa, 30_000, seed=7, rate=rate, ctx=ctx, stats="numpy")
    assert elsa.stable and fifs.stable
    assert elsa.sla_violation_rate < 0.8 * fifs.sla_violation_rate, (elsa.sla_violation_rate, fifs.sla_violation_rate)
    assert elsa.latency_ms.p99 < fifs.latency_ms.p99


def test_elsa_keeps_big_queries_off_the_small_slices(ctx):
    d = paris(ctx, "elsa")
    res = simulate_design(d, 20_000, seed=3, rate=0.4 * capacity(d)[0], ctx=ctx, stats="numpy")
    rec = res.records
    small = [i for i, p in enumerate(d.gpu.partitions) if p.name == "1g.5gb"]
    on_small = np.isin(rec["partition"], small)
    assert np.mean(on_small[rec["size"] >= 20]) < 0.05  # a 1g slice cannot run them within the SLA
    assert np.mean(on_small[rec["size"] <= 2]) > 0.4  # small queries fill the small slices first


def test_jsq_balances_outstanding_requests(ctx):
    d = paris(ctx, "jsq")
    res = simulate_design(d, 10_000, seed=3, rate=0.5 * capacity(d)[0], ctx=ctx, stats="numpy")
    counts = np.bincount(res.records["partition"], minlength=4)
    assert counts.min() > 0.15 * counts.sum()
