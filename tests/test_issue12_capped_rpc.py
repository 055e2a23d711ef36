"""Issue 12 item 6: when a SmartNIC (or link) cap binds, the simulator and the analytic engine charge a request
the same time: the capped resource's own time is in the stage's fixed time (wire, ARM work), so the pool adds
only the wait for it and the request's own host service."""

import pytest

from engine.analytic import Context, evaluate
from engine.sim import simulate
from engine.sim.hoststages import own_service_ratio, pool_shape
from engine.stages import StageCost


@pytest.fixture(scope="module")
def ctx(store):
    return Context.from_store(store)


def test_smartnic_cap_adds_no_service_time_in_the_simulator(ctx):
    # before: the simulator's RPC service was 1 / cap = 0.26 ms per request against the analytic 0.002 ms
    sc = {"model": "resnet50", "gpu": {"sku": "A100-SXM4-80GB", "layout": ["3g.40gb", "4g.40gb"]},
          "preprocessing": {"device": "none"}, "rpc": {"preset": "lynx-snic"}}
    cap = evaluate(sc, ctx).stage_capacity_rps["rpc"]
    ev = evaluate(sc, ctx, rate=0.5 * cap)
    r = simulate(sc, 20_000, ctx=ctx, seed=1, stats="numpy", rate=0.5 * cap)
    assert r.breakdown_ms["rpc"] == pytest.approx(ev.breakdown_ms["rpc"], abs=0.02)
    assert r.breakdown_ms["rpc_wait"] == pytest.approx(ev.breakdown_ms["rpc_wait"], rel=0.15)
    assert r.utilization["rpc"] == pytest.approx(ev.utilization["rpc"], abs=0.05)  # the cap's busy fraction


def test_own_service_ratio_is_one_without_a_binding_cap():
    free = StageCost(name="rpc", service_s=1e-3, servers=4, capacity_rps=4000.0)
    capped = StageCost(name="rpc", service_s=1e-5, servers=4, capacity_rps=2000.0)
    assert own_service_ratio(free) == 1.0
    k, mean = pool_shape(capped)
    assert k == 1 and mean == pytest.approx(1 / 2000) and own_service_ratio(capped) == pytest.approx(1e-5 * 2000)
