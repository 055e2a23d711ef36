"""Cost model (engine.cost): a hand-computed TCO, defaults with sources, monotonicity properties."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.cost import CostInputs, device_power_w, inputs_from_spec, price_defaults, servers_for, tco
from engine.scenario import CostSpec

BASE = dict(throughput_rps=5000.0, years=3.0, usd_per_kwh=0.139, pue=1.5, servers=1, server_price_usd=6250.0,
            gpus=1, gpu_price_usd=11500.0, dpus=1, dpu_price_usd=4000.0, nics=1, nic_price_usd=800.0,
            gpu_tdp_w=400.0, gpu_idle_w=80.0, host_max_w=280.0, host_idle_w=154.0, dpu_tdp_w=75.0,
            dpu_idle_w=22.5, nic_w=20.0, gpu_util=0.5, host_util=0.25, dpu_util=1.0)


def test_hand_computed_tco():
    r = tco(CostInputs(**BASE))
    # CAPEX 6250 + 11500 + 4000 + 800 = 22550 USD
    assert r.capex_usd == pytest.approx(22550.0)
    # power: GPU 80 + 0.5 x 320 = 240; host 154 + 0.25 x 126 = 185.5; DPU 75; NIC 20 -> 520.5 W; x PUE 1.5 = 780.75 W
    assert r.power_breakdown_w == pytest.approx({"gpus": 240.0, "host": 185.5, "dpus": 75.0, "nics": 20.0})
    assert r.wall_power_w == pytest.approx(780.75)
    # 3 years = 26280 h; 780.75 W x 26280 h = 20518.11 kWh; x 0.139 = 2852.01729 USD
    assert r.energy_kwh == pytest.approx(20518.11)
    assert r.opex_usd == pytest.approx(2852.01729)
    assert r.tco_usd == pytest.approx(25402.01729)
    # 5000 q/s x 94,608,000 s = 4.7304e11 queries; / 25402.01729 USD = 1.86221e7 queries per USD
    assert r.queries == pytest.approx(4.7304e11)
    assert r.queries_per_usd == pytest.approx(4.7304e11 / 25402.01729)
    assert r.preba_cost_efficiency == r.queries_per_usd
    assert r.queries_per_joule == pytest.approx(5000 / 780.75)


def test_idle_above_peak_is_refused():
    with pytest.raises(ValueError, match="gpu idle power"):
        CostInputs(**{**BASE, "gpu_idle_w": 500.0})


def test_defaults_name_their_sources(store):
    prices, gpus = store.table("prices_power"), store.table("gpus")
    d = price_defaults(prices, "A100-SXM4-80GB", gpus)
    assert d["gpu_price_usd"].value == 11500 and "used" in d["gpu_price_usd"].source
    assert d["gpu_tdp_w"].value == 400 and not d["gpu_tdp_w"].assumed
    assert d["gpu_idle_w"].value == pytest.approx(80) and d["gpu_idle_w"].assumed
    assert d["usd_per_kwh"].value == pytest.approx(0.139) and "PREBA" in d["usd_per_kwh"].source
    assert d["years"].value == 3
    assert d["server_price_usd"].value == pytest.approx((270000 - 8 * 27500) / 8)
    assert d["dpu_tdp_w"].value == 75 and d["dpu_price_usd"].assumed
    assert all(v.source for v in d.values()) and d["gpu_price_usd"].label().startswith("default: 11,500 USD")
    assert price_defaults(prices, "H100-SXM5-80GB", gpus)["gpu_price_usd"].value == 27500
    assert price_defaults(prices, "H200-141GB", gpus)["gpu_price_usd"].assumed
    assert price_defaults(prices, "T4-16GB", gpus)["gpu_tdp_w"].value == 70
    smart = price_defaults(prices, "A100-SXM4-40GB", gpus, smartnic=True)
    assert smart["nic_price_usd"].value == pytest.approx(4 * d["nic_price_usd"].value)


def test_spec_overrides_win_and_cost_is_per_gpu(store):
    d = price_defaults(store.table("prices_power"), "A100-SXM4-40GB", store.table("gpus"))
    spec = CostSpec(gpu_price_usd=9000.0, usd_per_kwh=0.2, pue=1.2)
    # a 1g.5gb(7x) layout is still one GPU: pass the physical count
    i = inputs_from_spec(spec, d, throughput_rps=1000, gpus=1, gpu_util=0.9, host_util=0.5, dpus=1, dpu_util=0.6)
    assert i.gpu_price_usd == 9000 and i.server_price_usd == d["server_price_usd"].value
    assert i.usd_per_kwh == 0.2 and i.pue == 1.2 and i.gpus == 1 and i.servers == 1
    assert servers_for(9) == 2 and servers_for(0) == 1
    assert tco(i).capex_breakdown_usd["gpus"] == 9000


# --------------------------------------------------------------------------- properties

util = st.floats(0, 1)


@settings(max_examples=80)
@given(st.floats(0.1, 20), st.floats(0.1, 20))
def test_more_years_never_lower_tco(y1, y2):
    lo, hi = sorted((y1, y2))
    assert tco(CostInputs(**{**BASE, "years": lo})).tco_usd <= tco(CostInputs(**{**BASE, "years": hi})).tco_usd


@settings(max_examples=80)
@given(util, util, util, util, st.sampled_from(["gpu_util", "host_util", "dpu_util"]))
def test_higher_utilisation_never_lowers_energy(u1, u2, g, h, which):
    lo, hi = sorted((u1, u2))
    base = {**BASE, "gpu_util": g, "host_util": h}
    e = [tco(CostInputs(**{**base, which: u})).energy_kwh for u in (lo, hi)]
    assert e[0] <= e[1] * (1 + 1e-12)
    assert device_power_w(80, 400, lo) <= device_power_w(80, 400, hi)


@settings(max_examples=80)
@given(st.floats(0, 1), st.floats(0, 1), st.floats(1, 100_000))
def test_queries_per_dollar_falls_as_electricity_price_rises(p1, p2, rate):
    lo, hi = sorted((p1, p2))
    q = [tco(CostInputs(**{**BASE, "usd_per_kwh": p, "throughput_rps": rate})).queries_per_usd for p in (lo, hi)]
    assert q[1] <= q[0] * (1 + 1e-12)
