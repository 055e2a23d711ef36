"""size: the fewest GPUs and host cores that carry R req/s within the SLA, per GPU type, ranked by TCO; the
winner simulated. Every expectation is recomputed with the analytic engine or the simulator."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.analytic import Context, build_design
from engine.analytic.operating_point import at_rate, sla_bounded_rate
from engine.catalog import UnknownNameError, validate_layout
from engine.cost import GPUS_PER_SERVER
from engine.deploy.sizing import MAX_CORES, SizingError, size, size_type
from engine.scenario import ScenarioError, load_scenario
from engine.sim.run import simulate_design
from engine.store import Store
from tests.conftest import ROOT
from tests.usermodel import import_measured_on_one_gpu

BERT = {"name": "bert", "model": "bert-large", "gpu": {"sku": "V100-16GB"}, "workload": {"sla": {"latency_ms": 130}}}
RESNET = {"name": "rn", "model": "resnet50", "gpu": {"sku": "A100-SXM4-80GB", "layout": ["1g.10gb"] * 7},
          "preprocessing": {"device": "dpu"}, "workload": {"sla": {"latency_ms": 15}}}


@pytest.fixture(scope="module")
def ctx(store):
    return Context.from_store(store)


def _meets(ctx, scenario: dict, rate: float) -> bool:
    design = build_design(load_scenario(scenario, ctx.book), ctx)
    pt = at_rate(design, rate)
    return pt.stable and pt.latency_s["sla"] <= design.sla_s


def _with(scenario: dict, **changes) -> dict:
    out = json.loads(json.dumps(scenario))
    if "count" in changes:
        out["gpu"]["count"] = changes["count"]
    if "cores" in changes:
        out["host"]["cpu_cores"] = changes["cores"]
    return out


def _check_least(ctx, answer, rate: float) -> None:
    """Each server meets its share of the rate; one GPU fewer per server, or one host core fewer, does not."""
    sc = answer.scenario
    assert answer.gpus == answer.servers * answer.gpus_per_server
    assert answer.server_rate_rps == pytest.approx(rate / answer.servers)
    rate = answer.server_rate_rps
    assert _meets(ctx, sc, rate)
    if answer.gpus_per_server > 1:
        assert not _meets(ctx, _with(sc, count=answer.gpus_per_server - 1, cores=MAX_CORES), rate)
    lowest = sc["host"]["cpu_reserved_cores"] + 1
    if answer.host_cores > lowest:
        assert not _meets(ctx, _with(sc, cores=answer.host_cores - 1), rate)


@settings(max_examples=6)
@given(st.floats(20, 5000))
def test_the_answer_is_the_least_that_meets_the_rate(ctx, rate):
    base = load_scenario(BERT, ctx.book)
    answer = size_type(base, ctx, "V100-16GB", rate)
    assert answer.status == "ok", answer.reason
    _check_least(ctx, answer, rate)
    one = build_design(load_scenario(_with(answer.scenario, count=1, cores=MAX_CORES), ctx.book), ctx)
    assert answer.per_gpu_sla_rps == pytest.approx(sla_bounded_rate(one))
    assert 1 <= answer.gpus_per_server <= GPUS_PER_SERVER
    if answer.servers > 1:  # a server is only added when the ones before it are full
        assert answer.servers == math.ceil(math.ceil(rate / answer.per_gpu_sla_rps) / GPUS_PER_SERVER) or \
            not _meets(ctx, _with(answer.scenario, count=GPUS_PER_SERVER, cores=MAX_CORES), rate / (answer.servers - 1))


def test_mig_type_packs_a_valid_layout_and_every_type_answers(ctx, catalog):
    """A100 (published curves) and H100 (estimated: no published curve) answer, ranked by TCO; a V100 that cannot
    carry the rate says why instead of raising."""
    rate = 9000.0
    r = size(RESNET, ctx, rate, ["A100-SXM4-80GB", "H100-SXM5-80GB", "V100-16GB"], confirm=False)
    by_sku = {a.sku: a for a in r.answers}
    assert by_sku["A100-SXM4-80GB"].status == by_sku["H100-SXM5-80GB"].status == "ok"
    assert by_sku["V100-16GB"].status == "ok" or by_sku["V100-16GB"].reason
    ok = [a for a in r.answers if a.status == "ok"]
    assert r.answers[:len(ok)] == ok and r.best == ok[0].sku  # answered types first
    assert [a.tco_usd for a in ok] == sorted(a.tco_usd for a in ok)
    assert by_sku["H100-SXM5-80GB"].curves == ["estimated"] and "estimated" not in by_sku["A100-SXM4-80GB"].curves
    for a in ok:
        if a.layout:
            validate_layout(catalog.gpu(a.sku), a.layout)  # a placed, valid per-GPU layout
        _check_least(ctx, a, rate)
    assert by_sku["A100-SXM4-80GB"].candidates > 1  # the scenario's own layout and the type's maximal ones


def test_a_type_the_engine_cannot_price_is_named_and_ranked_last(tmp_path):
    """A user's model measured on a V100 only, with no cost table for the estimator: the H100 is named with
    the reason, not a crash, and ranked after the type that answers."""
    store = Store(tmp_path / "k.duckdb")
    model = import_measured_on_one_gpu(store)
    user_ctx = Context.from_store(store)
    scenario = {"model": model, "gpu": {"sku": "V100-16GB"}, "preprocessing": {"device": "none"},
                "workload": {"sla": {"latency_ms": 50}}}
    r = size(scenario, user_ctx, 500.0, ["H100-SXM5-80GB", "V100-16GB"], confirm=False)
    assert [(a.sku, a.status) for a in r.answers] == [("V100-16GB", "ok"), ("H100-SXM5-80GB", "cannot evaluate")]
    assert model in r.answers[1].reason and r.best == "V100-16GB"
    store.close()


def test_the_simulator_confirms_the_winner(ctx):
    rate = 150.0
    r = size(BERT, ctx, rate, n_requests=4000, seed=3)
    c = r.confirmation
    assert c is not None and c.sku == r.best
    design = build_design(load_scenario(r.answers[0].scenario, ctx.book), ctx)
    sim = simulate_design(design, 4000, seed=3, ctx=ctx, rate=r.answers[0].server_rate_rps, stats="numpy")
    assert c.simulated_ms == pytest.approx(sim.latency_ms.p99)
    assert c.met == (sim.stable and sim.latency_ms.p99 <= design.sla_s * 1e3)
    assert c.analytic_ms == pytest.approx(r.answers[0].latency_at_rate_ms)


def test_an_h100_design_on_estimated_curves_is_confirmed_by_the_simulator(ctx):
    """Issue 20 on H100: the least H100 hardware for 40,000 req/s, and the simulator's run of one of its servers
    at its share on the same (estimated) service times is the verdict reported."""
    r = size(RESNET, ctx, 40_000.0, ["H100-SXM5-80GB"], n_requests=4000, seed=1)
    (winner,) = r.answers
    assert winner.status == "ok" and winner.curves == ["estimated"] and r.best == "H100-SXM5-80GB"
    c = r.confirmation
    design = build_design(load_scenario(winner.scenario, ctx.book), ctx)
    sim = simulate_design(design, 4000, seed=1, ctx=ctx, rate=winner.server_rate_rps, stats="numpy")
    assert c.sku == "H100-SXM5-80GB" and c.simulated_ms == pytest.approx(sim.latency_ms.p99)
    assert c.met == (sim.stable and sim.latency_ms.p99 <= design.sla_s * 1e3)


def test_a_rate_nothing_can_carry_is_answered_not_raised(ctx):
    r = size({**BERT, "workload": {"sla": {"latency_ms": 0.01}}}, ctx, 100.0, confirm=False)
    assert r.best is None and r.confirmation is None
    assert r.answers[0].status == "no design" and "SLA" in r.answers[0].reason


def test_bad_requests_are_named(ctx):
    with pytest.raises(SizingError, match="rate"):
        size(BERT, ctx, -1.0)
    with pytest.raises(SizingError, match="rate"):
        size(BERT, ctx, float("nan"))
    with pytest.raises(UnknownNameError, match="B300"):
        size(BERT, ctx, 10.0, ["B300"])
    with pytest.raises(ScenarioError, match="fpga"):
        size({"model": "resnet50", "fpga": {}}, ctx, 10.0)


def test_cli_size_json_and_text(tmp_path, ctx):
    path = tmp_path / "bert.json"
    path.write_text(json.dumps(BERT))
    cmd = [sys.executable, "-m", "engine", "size", str(path), "--rate", "300", "--gpus", "V100-16GB,H100-SXM5-80GB"]
    r = subprocess.run(cmd + ["--json", "--no-confirm"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    expected = size(BERT, ctx, 300.0, ["V100-16GB", "H100-SXM5-80GB"], confirm=False)
    assert [(a["sku"], a["status"], a["gpus"], a["host_cores"]) for a in out["answers"]] == [
        (a.sku, a.status, a.gpus, a.host_cores) for a in expected.answers]
    out_path = tmp_path / "winner.json"
    r = subprocess.run(cmd + ["--requests", "2000", "--scenario-out", str(out_path)], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    winner = load_scenario(out_path.read_text(), ctx.book)  # one server of the winner, ready for export-design
    assert winner.gpu.count == expected.answers[0].gpus_per_server
    assert winner.host.cpu_cores == expected.answers[0].host_cores
    assert "V100-16GB" in r.stdout and "simulator (2,000 requests" in r.stdout
    assert "H100-SXM5-80GB" in r.stdout and "estimated service times" in r.stdout  # no published H100 curve: said
    r = subprocess.run(cmd[:5] + ["--rate", "0"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "positive" in r.stderr
