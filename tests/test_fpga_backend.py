"""FPGA boards as a scenario backend: loading, clear errors, analytic capacity (M/D/c), cost, simulator, pages."""

import json
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.analytic import Context, build_design, evaluate
from engine.analytic.gpu import instance_names
from engine.cost import FPGA_BOARD_PRICE_USD
from engine.fpga import fpga_tenancy_table, service_time
from engine.scenario import ScenarioError, load_scenario
from engine.io.urlstate import decode, encode
from tests.conftest import ROOT

SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
#: a host that never binds: local RPC, no spinning core per request, no preprocessing, many cores
QUIET_HOST = {"rpc": {"preset": "local", "completion": "blocking"}, "preprocessing": {"device": "none"},
              "host": {"cpu_cores": 512}}


@pytest.fixture(scope="module")
def ctx(store):
    return Context.from_store(store)


def fpga(ctx, fpga_spec=None, **kw):
    data = {"model": "resnet50", "fpga": {"ms_per_request": 10.0, **(fpga_spec or {})}, **QUIET_HOST, **kw}
    return load_scenario(data, ctx.book)


def test_fpga_scenario_loads_and_gpu_scenarios_are_unchanged(ctx):
    s = fpga(ctx)
    assert s.gpu is None and s.fpga.board == "intel-pac-a10" and s.accelerator_label() == "1 x intel-pac-a10 FPGA"
    g = load_scenario({"model": "resnet50", "gpu": {"sku": "A100-SXM4-40GB"}}, ctx.book)
    assert g.fpga is None and g.gpu.sku == "A100-SXM4-40GB" and g.accelerator_label() == "1 x A100-SXM4-40GB"


@pytest.mark.parametrize("data, message", [
    ({"model": "resnet50"}, "give exactly one of gpu or fpga (got neither)"),
    ({"model": "resnet50", "gpu": {"sku": "A100-SXM4-40GB"}, "fpga": {"ms_per_request": 1}},
     "give exactly one of gpu or fpga (got both)"),
    ({"model": "resnet50", "fpga": {"ms_per_request": 1, "sparsity": 1.5}},
     "fpga.sparsity: Input should be less than 1"),
    ({"model": "resnet50", "fpga": {"ms_per_request": 1, "sparsity": -0.2}}, "fpga.sparsity: Input should be greater"),
    ({"model": "resnet50", "fpga": {"ms_per_request": 0}}, "fpga.ms_per_request: Input should be greater than 0"),
    ({"model": "resnet50", "fpga": {}}, "fpga.ms_per_request: no per-request time of resnet50 on intel-pac-a10"),
    ({"model": "resnet50", "fpga": {"ms_per_request": 1, "board": "virtex"}}, "fpga.board: 'virtex' is not a known"),
    ({"model": "resnet50", "fpga": {"ms_per_request": 1, "threads_per_accelerator": 7}},
     "fpga.threads_per_accelerator: Intel PAC with Arria 10 GX (EIF prototype) accelerators run at most 6"),
    ({"model": "resnet50", "fpga": {"ms_per_request": 1, "accelerators_per_board": 9}},
     "fpga.accelerators_per_board: Intel PAC with Arria 10 GX (EIF prototype) holds at most 8"),
    ({"model": "resnet50", "fpga": {"ms_per_request": 1, "boards": 2, "model_threads": 97}},
     "fpga.model_threads: 2 board(s) x 8 accelerators x 6 threads give 96 tenants, fewer than 97"),
    ({"model": "resnet50", "fpga": {"ms_per_request": 1}, "preprocessing": {"device": "gpu"}},
     "preprocessing.device: GPU decoding needs a GPU"),
])
def test_bad_fpga_scenarios_get_a_plain_message(ctx, data, message):
    with pytest.raises(ScenarioError) as e:
        load_scenario(data, ctx.book)
    assert str(e.value).startswith(message), str(e.value)


def test_gpu_only_features_refuse_clearly(ctx):
    with pytest.raises(ScenarioError, match="gpu: MIG layouts and GPU% shares needs GPUs, but this scenario runs on "
                                            "1 x intel-pac-a10 FPGA"):
        instance_names(fpga(ctx), ctx.book)


@SETTINGS
@given(st.integers(1, 3), st.integers(1, 8), st.integers(1, 6), st.floats(0.3, 0.9), st.floats(0.5, 50))
def test_capacity_is_threads_over_per_request_time(ctx, boards, acc, threads, sparsity, ms):
    """One server per hardware thread, deterministic service: an M/D/c queue of capacity c / t."""
    s = fpga(ctx, {"boards": boards, "accelerators_per_board": acc, "threads_per_accelerator": threads,
                   "sparsity": sparsity, "ms_per_request": ms})
    t = service_time(ms, threads, sparsity).ms_per_request / 1e3
    c = boards * acc * threads
    e = evaluate(s, ctx, rate=0.5 * c / t)
    assert len(e.partitions) == c
    assert e.stage_capacity_rps["fpga"] == pytest.approx(c / t, rel=1e-9)
    assert e.bottleneck == "fpga" and e.capacity_rps == pytest.approx(c / t, rel=1e-9)
    assert e.utilization["fpga"] == pytest.approx(0.5, rel=1e-6)
    assert e.latency_ms.mean >= t * 1e3  # never faster than the thread's own time
    table = fpga_tenancy_table(ms, sparsity, boards=boards, accelerators_per_board=acc, threads=[threads])
    assert table.throughput_rps.iloc[0] == pytest.approx(e.capacity_rps)


@SETTINGS
@given(st.integers(1, 48), st.integers(1, 8))
def test_model_threads_and_query_size_scale_capacity(ctx, n, q):
    """Only the model's threads serve it, and a query of q items runs its items back to back on one thread."""
    s = fpga(ctx, {"model_threads": n}, workload={"query_size": {"size": q}})
    t = service_time(10.0, 6, 0.6).ms_per_request / 1e3
    design = build_design(s, ctx)
    assert design.gpu.policy.value == "none" and all(p.max_batch == q for p in design.gpu.partitions)
    assert evaluate(s, ctx).stage_capacity_rps["fpga"] == pytest.approx(n / (q * t), rel=1e-9)


def test_batching_policy_is_noted_not_applied(ctx):
    e = evaluate(fpga(ctx, batching={"policy": "preba"}), ctx)
    assert e.batching.policy == "none" and e.batching.time_queue_ms == 0
    assert any("does not apply on FPGA threads" in n for n in e.notes)
    assert any("slowdown for 6 threads" in n for n in e.notes)


def test_cost_counts_fpga_boards_not_gpus(ctx):
    e = evaluate(fpga(ctx, {"boards": 2}), ctx)
    assert e.cost.capex_breakdown_usd["fpgas"] == 2 * FPGA_BOARD_PRICE_USD and e.cost.capex_breakdown_usd["gpus"] == 0
    priced = evaluate(fpga(ctx, {"boards": 2}, cost={"fpga_price_usd": 1000}), ctx)
    assert priced.cost.capex_breakdown_usd["fpgas"] == 2000
    assert priced.cost.capex_usd == pytest.approx(e.cost.capex_usd - 2 * (FPGA_BOARD_PRICE_USD - 1000))
    gpu = evaluate(load_scenario({"model": "resnet50", "gpu": {"sku": "A100-SXM4-40GB"}}, ctx.book), ctx)
    assert "fpgas" not in gpu.cost.capex_breakdown_usd  # GPU results keep their keys


def test_spin_completion_can_bind_before_the_threads(ctx):
    """A spin-wait holds a host core per request in flight: 48 slow threads need 48 cores. (Issue 12: an FPGA
    completes as its board does by default, an interrupt; spin only when the scenario asks for it.)"""
    s = load_scenario({"model": "resnet50", "fpga": {"ms_per_request": 20.0}, "preprocessing": {"device": "none"},
                       "host": {"cpu_cores": 32}, "rpc": {"completion": "spin"}}, ctx.book)
    e = evaluate(s, ctx)
    assert e.bottleneck != "fpga" and e.capacity_rps < e.stage_capacity_rps["fpga"]


def test_simulator_runs_an_fpga_scenario(ctx):
    from engine.sim import simulate

    s = fpga(ctx, {"accelerators_per_board": 2, "threads_per_accelerator": 2})
    t = service_time(10.0, 2, 0.6).ms_per_request / 1e3
    rate = 0.75 * 4 / t
    r = simulate(s, 30_000, ctx=ctx, seed=3, stats="numpy", rate=rate)
    assert r.stable and r.capacity_rps == pytest.approx(4 / t)
    assert r.throughput_rps == pytest.approx(rate, rel=0.03)
    assert r.utilization["fpga"] == pytest.approx(rate * t / 4, rel=0.03)  # utilisation law: lambda t / c
    assert r.latency_ms.mean >= t * 1e3 * 0.95


def test_link_round_trip(ctx):
    s = fpga(ctx, {"boards": 3, "sparsity": 0.55})
    assert load_scenario(decode(encode(s)), ctx.book) == s


def test_cli_evaluate_names_the_fpga(tmp_path):
    path = tmp_path / "f.json"
    path.write_text(json.dumps({"model": "resnet50", "fpga": {"ms_per_request": 5}, **QUIET_HOST}))
    r = subprocess.run([sys.executable, "-m", "engine", "evaluate", str(path)], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "resnet50 on 1 x intel-pac-a10 FPGA" in r.stdout and "bottleneck fpga" in r.stdout


def test_design_page_opens_an_fpga_link(ctx):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["s"] = encode(fpga(ctx))
    at.run()
    assert not at.exception, at.exception
    assert at.radio(key="d_mode").value == "FPGA boards (EIF)"
    assert not any("cannot be used" in e.value for e in at.error)
