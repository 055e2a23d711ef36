"""Multi-Model: instances x GPU% within a deadline (GPU runtime primitives seed, Sec V-D, VI-B)."""

import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from engine.profiles import ProfileBook
from engine.tenancy import (GpuShareCurve, GpuSharePoint, TenancyError, latency_vs_gpu_pct, multi_model,
                            plan_multimodel)

SWEEPS = [("resnet50", "V100-16GB"), ("resnet50", "T4-16GB"), ("efficientnet-b0", "V100-16GB"),
          ("bert-base", "T4-16GB"), ("resnet50", "A100-SXM4-40GB")]


@pytest.fixture(scope="module")
def book(store):
    return ProfileBook.from_store(store)


def _check(plan, curve):
    """Every invariant of a plan against a brute force over all (instances, share) choices."""
    allowed = [(n, p) for p in curve.points for n in range(1, 101)
               if p.tail_ms <= plan.deadline_ms and n * p.gpu_pct <= plan.available_pct
               and (plan.max_instances is None or n <= plan.max_instances)]
    for o in [plan.best, plan.for_rate, plan.single, *plan.options]:
        if o is None:
            continue
        assert o.tail_ms <= plan.deadline_ms  # never past the deadline
        assert o.total_pct == o.instances * o.gpu_pct_each <= plan.available_pct <= 100  # never past 100%
        assert plan.max_instances is None or o.instances <= plan.max_instances
    if not allowed:
        assert plan.best is None and plan.reason
        return
    top = max(n * p.throughput_items_per_s for n, p in allowed)
    assert math.isclose(plan.best.throughput_items_per_s, top, rel_tol=1e-12)
    assert plan.speedup >= 1 - 1e-12
    if plan.rate_rps is not None:
        enough = [n * p.gpu_pct for n, p in allowed if n * p.throughput_items_per_s >= plan.rate_rps]
        assert (plan.for_rate is None) == (not enough)
        if enough:
            assert plan.for_rate.total_pct == min(enough)
            assert plan.for_rate.throughput_items_per_s >= plan.rate_rps


@st.composite
def curves(draw):
    pct = sorted(draw(st.sets(st.integers(1, 100), min_size=1, max_size=12)))
    lat = draw(st.lists(st.floats(0.1, 200), min_size=len(pct), max_size=len(pct)))
    pts = tuple(GpuSharePoint(gpu_pct=p, mean_ms=t, tail_ms=t * 1.2, throughput_items_per_s=4e3 / t,
                              provenance="measured") for p, t in zip(pct, lat))
    return GpuShareCurve(model="m", sku="g", batch=4, percentile=99, input_len=None, points=pts, refused=(),
                         reference=None, fit_rms_rel_error=None, sources=())


@settings(max_examples=150, deadline=None)
@given(curves(), st.floats(0.5, 300), st.floats(1, 100), st.none() | st.floats(1, 5e4),
       st.none() | st.integers(1, 20))
def test_any_curve_gives_the_best_plan_within_deadline_and_100_pct(curve, deadline, available, rate, cap):
    plan = plan_multimodel(curve, deadline, available, rate, cap)
    _check(plan, curve)


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(SWEEPS), st.integers(1, 8), st.floats(2, 80), st.floats(10, 100),
       st.none() | st.floats(50, 5000))
def test_profile_book_plans_keep_deadline_and_gpu_budget(book, pair, batch, deadline, available, rate):
    try:
        curve = latency_vs_gpu_pct(book, *pair, batch=batch, step=10)
    except TenancyError as e:  # batch beyond the reference curve even on the whole GPU
        assert "outside" in str(e)
        assume(False)
    _check(plan_multimodel(curve, deadline, available, rate), curve)


def test_several_instances_beat_one_whole_gpu(book):
    # Sec VI-B, Table IV: instances near the knee give about 2x one model per GPU; ResNet-50 SLO 30 ms
    plan = multi_model(book, "resnet50", "V100-16GB", deadline_ms=30, batch=8)
    assert plan.best.instances > 1 and plan.best.gpu_pct_each < 100
    assert plan.single.gpu_pct_each == 100 and plan.speedup > 1.2


def test_the_rate_plan_is_the_smallest_that_serves_it(book):
    curve = latency_vs_gpu_pct(book, "resnet50", "T4-16GB", batch=8)
    best = plan_multimodel(curve, 30).best
    plan = plan_multimodel(curve, 30, rate_rps=best.throughput_items_per_s / 2)
    assert plan.for_rate.total_pct < best.total_pct
    _check(plan, curve)
    beyond = plan_multimodel(curve, 30, rate_rps=best.throughput_items_per_s * 1.01)
    assert beyond.for_rate is None and "no plan within the deadline reaches" in beyond.reason


def test_an_impossible_deadline_says_why(book):
    plan = multi_model(book, "resnet50", "V100-16GB", deadline_ms=0.5, batch=8)
    assert plan.best is None and plan.options == () and "lowest p99 latency" in plan.reason


@pytest.mark.parametrize("kw, field", [({"deadline_ms": 0}, "deadline_ms"), ({"available_pct": 150}, "available_pct"),
                                        ({"rate_rps": -1}, "rate_rps"), ({"max_instances": 0}, "max_instances")])
def test_bad_input_is_named(book, kw, field):
    curve = latency_vs_gpu_pct(book, "resnet50", "V100-16GB", step=50)
    with pytest.raises(TenancyError, match=field):
        plan_multimodel(curve, **({"deadline_ms": 30.0} | kw))
