"""Latency vs GPU%, the knee GPU% and oversubscription (GPU runtime primitives seed, Sec IV-C, VI-C)."""

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from engine.profiles import ProfileBook
from engine.tenancy import (GpuShareCurve, GpuSharePoint, TenancyError, Tenant, knee_gpu_pct, latency_vs_gpu_pct,
                            oversubscribe, oversubscription_sweep, share_grid)
from engine.tenancy.gpu_share import knee_index

# (model, GPU) pairs with a batch sweep to derive GPU% shares from
SWEEPS = [("resnet50", "V100-16GB"), ("resnet50", "T4-16GB"), ("efficientnet-b0", "V100-16GB"),
          ("bert-large", "T4-16GB"), ("jasper", "T4-16GB"), ("resnet50", "A100-SXM4-40GB")]


@pytest.fixture(scope="module")
def book(store):
    return ProfileBook.from_store(store)


def _figure(store, item: str) -> float:
    df = store.table("rpc_figures")
    row = df[(df["category"] == "gpu_share") & (df["item"] == item)]
    assert len(row) == 1, item
    return float(row["value"].iloc[0])


def test_share_grid_ends_at_100():
    assert share_grid(25) == (25, 50, 75, 100)
    assert share_grid(30) == (30, 60, 90, 100)
    for bad in (0, 101, 2.5):
        with pytest.raises(TenancyError, match="step"):
            share_grid(bad)


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(SWEEPS), st.integers(1, 16), st.sampled_from([5, 10, 20]))
def test_latency_never_rises_with_more_gpu_pct(book, pair, batch, step):
    try:
        curve = latency_vs_gpu_pct(book, *pair, batch=batch, step=step)
    except TenancyError as e:  # a batch beyond the reference curve even at 100%
        assert "outside" in str(e)
        assume(False)
    pct = [p.gpu_pct for p in curve.points]
    assert pct == sorted(pct) and pct[-1] == 100
    for key in ("mean_ms", "tail_ms"):
        t = np.array([getattr(p, key) for p in curve.points])
        assert np.all(np.diff(t) <= 1e-9 * t[:-1]), key
    assert {r.gpu_pct for r in curve.refused}.isdisjoint(pct)
    assert len(curve.points) + len(curve.refused) == len(share_grid(step))


def test_shares_beyond_the_reference_range_are_extrapolated_only_past_saturation_and_say_so(book):
    # issue 12: the slice law follows a saturated reference past its batches (up to the memory limit), labelled
    curve = latency_vs_gpu_pct(book, "bert-large", "T4-16GB", batch=8, input_len=384.0)
    ref_max = max(book.curve("bert-large", "T4-16GB", "full", input_len=384.0).batches)
    assert ref_max == 8  # so every share under 100% needs batch 8 from less than 8 x s: beyond the law's support
    assert all(p.provenance == "derived-extrapolated" for p in curve.points if p.gpu_pct < 100)
    assert not curve.refused


@pytest.mark.parametrize("model, sku", [("nosuch", "V100-16GB"), ("alexnet", "V100-16GB")])
def test_no_answer_is_a_plain_error(book, model, sku):
    with pytest.raises(TenancyError, match=model):
        latency_vs_gpu_pct(book, model, sku)


def _curve(latencies, pct=None) -> GpuShareCurve:
    pct = pct or [round(100 * (k + 1) / len(latencies)) for k in range(len(latencies))]
    pts = tuple(GpuSharePoint(gpu_pct=p, mean_ms=t, tail_ms=t, throughput_items_per_s=1e3 / t, provenance="derived")
                for p, t in zip(pct, latencies))
    return GpuShareCurve(model="m", sku="g", batch=1, percentile=99, input_len=None, points=pts, refused=(),
                         reference=None, fit_rms_rel_error=None, sources=())


@given(st.lists(st.floats(0.01, 1e4), min_size=1, max_size=30), st.floats(0, 0.9))
def test_knee_is_the_first_share_no_larger_share_beats_by_more_than_the_threshold(t, threshold):
    i = knee_index(t, threshold)
    tol = 1e-9 * max(t)
    assert min(t[i:]) >= (1 - threshold) * t[i] - tol  # nothing past the knee gains more than the threshold
    assert all(min(t[p:]) < (1 - threshold) * t[p] + tol for p in range(i))  # every smaller share does


def test_mobilenet_knee_is_at_or_below_15_pct(store):
    # Sec IV-C Fig 3: Mobilenet takes 1.003 ms at 15% GPU and 1.023 ms at 100%
    curve = _curve([_figure(store, "Mobilenet inference latency at 15% GPU"),
                    _figure(store, "Mobilenet inference latency at 100% GPU")], pct=[15, 100])
    assert knee_gpu_pct(curve, threshold=0.0).gpu_pct == 15


def test_bigger_batches_have_higher_knees(book):
    # Sec IV-C: work that fills the GPU (compute-heavy models, bigger batches) has a higher knee GPU%
    knees = [knee_gpu_pct(latency_vs_gpu_pct(book, "resnet50", "V100-16GB", batch=b)) for b in (1, 2, 4, 8, 16)]
    pct = [k.gpu_pct for k in knees]
    assert pct == sorted(pct) and pct[0] < pct[-1]
    for k in knees:
        assert k.remaining_gain <= k.threshold and k.best_gpu_pct >= k.gpu_pct


@pytest.mark.parametrize("threshold", [-0.1, 1.0])
def test_bad_threshold_is_named(threshold):
    with pytest.raises(TenancyError, match="threshold"):
        knee_index([2.0, 1.0], threshold)


# -- oversubscription ------------------------------------------------------------------------

def test_instances_past_100_pct_add_latency_not_throughput(book):
    curve = latency_vs_gpu_pct(book, "resnet50", "V100-16GB", batch=8, step=20)
    sweep = oversubscription_sweep(curve, 20, 10)
    full = [r for r in sweep.rows if r.total_pct >= 100]
    assert [r.instances for r in full] == list(range(5, 11))
    assert all(math.isclose(r.throughput_items_per_s, sweep.cap_items_per_s) for r in full)
    lat = [r.latency_ms for r in full]
    assert all(b > a for a, b in zip(lat, lat[1:]))  # latency climbs (Sec VI-C, Fig 12)
    under = [r.throughput_items_per_s for r in sweep.rows if r.total_pct <= 100]
    assert all(b > a for a, b in zip(under, under[1:]))  # up to 100%, each instance adds throughput


tenant = st.builds(Tenant, name=st.just("t"), gpu_pct=st.floats(1, 100), batch=st.integers(1, 64),
                   latency_ms=st.floats(0.1, 1000))


@given(st.lists(tenant, min_size=1, max_size=12))
def test_oversubscription_caps_throughput(tenants):
    o = oversubscribe(tenants)
    alone = sum(t.batch / t.latency_ms * 1e3 for t in tenants)
    assert o.throughput_items_per_s <= o.cap_items_per_s * (1 + 1e-9)
    assert o.throughput_items_per_s <= alone * (1 + 1e-9)
    if o.total_pct >= 100:
        assert math.isclose(o.throughput_items_per_s, o.cap_items_per_s, rel_tol=1e-9)
    else:
        assert all(s.latency_ms == t.latency_ms for s, t in zip(o.tenants, tenants))
    assert all(s.latency_ms >= t.latency_ms for s, t in zip(o.tenants, tenants))


def test_bad_tenant_is_named():
    with pytest.raises(TenancyError, match=r"tenants\[1\].gpu_pct"):
        oversubscribe([Tenant(name="a", gpu_pct=50, batch=1, latency_ms=1),
                       Tenant(name="b", gpu_pct=0, batch=1, latency_ms=1)])
    with pytest.raises(TenancyError, match="gpu_pct 40"):
        oversubscription_sweep(_curve([3.0, 2.0, 1.0]), 40, 4)
