"""engine.studies (Preprocessing, RPC and Cost page computations) and their charts."""

import math

import pytest

from engine.charts import cost as cost_charts, preprocessing as pre_charts, rpc as rpc_charts
from engine.analytic import Context, evaluate
from engine.presets import DEFAULT_SCENARIO
from engine.scenario import Scenario, ScenarioError, load_scenario
from engine.studies import require_gpu, variant
from engine.studies.cost import cost_study, kwh_sensitivity, tco_over_years
from engine.studies.preprocessing import preprocessing_study
from engine.studies.rpc import CATEGORIES, rpc_study


@pytest.fixture(scope="module")
def ctx(store):
    return Context.from_store(store)


def scenario(ctx, **changes):
    return load_scenario({**DEFAULT_SCENARIO, **changes}, ctx.book)


@pytest.fixture(scope="module")
def pre(ctx):
    return preprocessing_study(scenario(ctx), ctx)


@pytest.fixture(scope="module")
def rpc(ctx):
    return rpc_study(scenario(ctx), ctx)


def served(ctx, **changes):
    """The default question with DPU preprocessing: it meets its SLA, so it has queries per dollar (issue 12: a
    design is priced at its SLA-bounded throughput; the CPU default meets the SLA at no load and has none)."""
    return scenario(ctx, preprocessing={"device": "dpu"}, **changes)


@pytest.fixture(scope="module")
def cost(ctx):
    return cost_study(served(ctx), ctx)


# --------------------------------------------------------------------------- helpers

def test_variant_revalidates_and_names_the_field(ctx):
    s = variant(scenario(ctx), ctx.book, {"preprocessing.device": "dpu", "host.cpu_cores": 64})
    assert s.preprocessing.device == "dpu" and s.host.cpu_cores == 64 and s.model == "resnet50"
    with pytest.raises(ScenarioError, match="host"):
        variant(s, ctx.book, {"host.cpu_reserved_cores": 64})


def test_views_refuse_a_scenario_without_gpus():
    with pytest.raises(ValueError, match="no GPUs"):
        require_gpu(Scenario.model_construct(name="fpga box", model="resnet50", gpu=None))


# --------------------------------------------------------------------------- preprocessing (PREBA 3.3, 4.2)

def test_scaling_matches_the_analytic_engine_per_device(ctx, pre):
    assert [r.active_partitions for r in pre.scaling] == list(range(1, 8))
    ideal = [r.rps["none"] for r in pre.scaling]
    assert all(b > a for a, b in zip(ideal, ideal[1:]))  # each partition adds throughput
    for d in pre.devices:  # with every partition active the curve is the engine's capacity
        assert pre.scaling[-1].rps[d.device] == pytest.approx(d.capacity_rps, rel=1e-9), d.device
        ev = evaluate(scenario(ctx, preprocessing={"device": d.device}), ctx)
        assert d.capacity_rps == pytest.approx(ev.capacity_rps, rel=1e-9) and d.bottleneck == ev.bottleneck


def test_cpu_preprocessing_starves_seven_slices(pre):
    """PREBA 3.3: with 7 x 1g, CPU preprocessing needs more cores than the host has; the CPU saturates."""
    last = pre.scaling[-1]
    assert last.preprocessing_cores + last.rpc_cores > last.available_cores
    assert last.rps["cpu"] < 0.5 * last.rps["none"] and last.cpu_utilization == pytest.approx(1.0)
    first = pre.scaling[0]
    assert first.rps["cpu"] == pytest.approx(first.rps["none"]) and first.cpu_utilization < 1
    cores = [r.preprocessing_cores for r in pre.scaling]
    assert cores[-1] == pytest.approx(7 * cores[0], rel=1e-6)  # equal slices: linear in active partitions


def test_dpu_sizing_grows_with_partitions(pre):
    cus = [r.dpu_cus_needed for r in pre.scaling]
    assert cus == sorted(cus) and cus[-1] > cus[0]
    d = pre.dpu
    assert d.cus_needed == cus[-1] and d.cards == 1 and d.units == 8
    assert d.cus_needed == math.ceil(pre.scaling[-1].rps["none"] * pre.q_mean * d.ii_ms / 1e3)
    assert d.pcie_ok and d.pcie_gbps_used == pytest.approx(pre.scaling[-1].dpu_pcie_gbps)
    assert d.pcie_gbps_used == pytest.approx(pre.scaling[-1].rps["none"] * d.kb_per_item * 1e3 / 1e9)


def test_gpu_decode_costs_the_slice_unless_it_has_a_jpeg_engine(ctx, pre):
    (row,) = pre.decode
    assert row.partition == "1g.10gb" and row.count == 7 and "CUDA" in row.path
    assert row.slice_share == pytest.approx(row.inference_items_per_s / row.decode_items_per_s) and row.slice_share > 1
    assert row.items_per_s_with_decode == pytest.approx(1 / (1 / row.inference_items_per_s
                                                             + 1 / row.decode_items_per_s))
    me = preprocessing_study(scenario(ctx, gpu={"sku": "A100-SXM4-80GB", "layout": ["1g.10gb+me", "3g.40gb"]}), ctx)
    engine = next(r for r in me.decode if r.partition == "1g.10gb+me")
    assert "JPEG engine" in engine.path and engine.slice_share == 0.0
    assert engine.items_per_s_with_decode == min(engine.inference_items_per_s, engine.decode_items_per_s)


def test_text_model_needs_no_preprocessing(ctx):
    v = preprocessing_study(scenario(ctx, model="bert-large"), ctx)
    assert v.pipeline == "none" and v.dpu is None and not v.decode and not v.cost_points
    for r in v.scaling:
        assert len(set(round(x, 6) for x in r.rps.values())) == 1 and r.preprocessing_cores == 0
    assert any("no preprocessing" in n for n in v.notes)


def test_measured_costs_are_preferred_and_compared_with_published(ctx, pre):
    published = next(e for e in pre.cpu_costs if e.prefer == "published")
    assert published.found and not next(e for e in pre.cpu_costs if e.prefer == "measured").found
    row = {"source": "this machine", "pipeline": "image", "step": "decode+resize+crop+normalize", "device": "cpu",
           "implementation": "Pillow [CPU]", "input_desc": "synthetic", "input_size": 0.37, "ms_per_item": 2.0,
           "kind": "measured", "measured_on": "2026-11-22", "note": None}
    points = ctx.preprocessing_points + [row]  # the context's tables are rows (engine.rows)
    local = Context(book=ctx.book, preprocessing_points=points, prices_power=ctx.prices_power, gpus=ctx.gpus)
    v = preprocessing_study(scenario(ctx), local)
    measured = next(e for e in v.cpu_costs if e.prefer == "measured")
    assert measured.found and measured.ms_per_item == pytest.approx(2.0)
    assert {p.kind for p in v.cost_points} >= {"measured", "published"}
    # the CPU design is priced with the measured cost: fewer cores per partition than with the published one
    assert v.scaling[0].preprocessing_cores < pre.scaling[0].preprocessing_cores


# --------------------------------------------------------------------------- RPC (SplitRPC 6.2, 6.3)

def test_rpc_breakdown_per_preset(ctx, rpc):
    assert [r.preset for r in rpc.presets] == ["grpc", "grpc-bypass", "lynx-snic", "splitrpc-pnic", "splitrpc-snic",
                                               "local"]
    assert [r.this_design for r in rpc.presets].count(True) == 1 and rpc.presets[0].this_design
    by = {r.preset: r for r in rpc.presets}
    for r in rpc.presets:
        assert sum(r.breakdown_us[c] for c in CATEGORIES) == pytest.approx(r.e2e_us, rel=1e-9)
        assert r.rpc_tax_us == pytest.approx(r.e2e_us - rpc.gpu_us, rel=1e-9)
    assert by["splitrpc-pnic"].breakdown_us["data_movement"] < 0.05 * by["grpc-bypass"].breakdown_us["data_movement"]
    assert by["lynx-snic"].breakdown_us["gpu"] > 2 * by["grpc"].breakdown_us["gpu"]  # GPU-managed orchestration
    assert by["local"].e2e_us < by["splitrpc-pnic"].e2e_us < by["grpc"].e2e_us
    assert by["lynx-snic"].path_cap_rps < math.inf and by["grpc"].path_cap_rps > by["lynx-snic"].path_cap_rps
    assert by["grpc"].capacity_rps == pytest.approx(evaluate(scenario(ctx), ctx).capacity_rps, rel=1e-9)
    assert by["grpc"].host_cores_at_rate > by["splitrpc-pnic"].host_cores_at_rate  # the RPC tax on cores


def test_rpc_load_curves_rise_to_capacity(rpc):
    assert rpc.sla_ms == 15  # the design's p99 bound (MLPerf ResNet-50), drawn on the p99 curves
    for r in rpc.presets:
        pts = [p for p in rpc.load if p.preset == r.preset]
        assert len(pts) >= 20
        assert all(p.rate_rps < r.capacity_rps and p.p99_ms >= p.mean_ms > 0 for p in pts)
        assert pts[-1].p99_ms > pts[0].p99_ms


def test_table1_services_are_normalised_to_grpc_vma(rpc):
    assert len(rpc.services) == 5 * 6
    for s in rpc.services:
        total = sum(s.normalised.values())
        if s.preset == "grpc-bypass":
            assert total == pytest.approx(1.0)
        if s.preset == "splitrpc-pnic" and s.service == "LeNet":
            assert total == pytest.approx(0.26, abs=0.03)  # SplitRPC 6.2: 74% less than gRPC-VMA
    assert all(c.ok for c in rpc.calibration if c.asserted)


def test_rpc_overrides_stay_on_the_designs_own_path(ctx):
    s = scenario(ctx, rpc={"preset": "grpc", "components": {"transport_us_per_request": 10.0}})
    v = rpc_study(s, ctx)
    assert any("overrides" in n for n in v.notes)
    base = rpc_study(scenario(ctx), ctx)
    assert v.presets[0].e2e_us < base.presets[0].e2e_us and v.presets[1].e2e_us == base.presets[1].e2e_us


# --------------------------------------------------------------------------- cost (PREBA 6.2, 6.3)

def test_cost_matches_the_design_evaluation(ctx, cost):
    ev = evaluate(served(ctx), ctx)
    assert cost.result.tco_usd == pytest.approx(ev.cost.tco_usd, rel=1e-12)
    assert cost.result.queries_per_usd == pytest.approx(ev.cost.queries_per_usd, rel=1e-12)
    assert cost.throughput_rps == pytest.approx(ev.cost.throughput_rps)
    assert cost.priced_utilization == pytest.approx(cost.throughput_rps / cost.capacity_rps)
    assert set(cost.defaults) >= {"gpu_price_usd", "server_price_usd", "usd_per_kwh"}


def test_tco_over_years_starts_at_capex_and_ends_at_tco(cost, ctx):
    assert cost.years[0].year == 0 and cost.years[0].total_usd == pytest.approx(cost.result.capex_usd)
    assert cost.years[-1].year == 3 and cost.years[-1].total_usd == pytest.approx(cost.result.tco_usd)
    part = cost_study(scenario(ctx, cost={"years": 2.5}), ctx)
    assert [y.year for y in part.years] == [0, 1, 2, 2.5]
    assert part.years[-1].total_usd == pytest.approx(part.result.tco_usd)
    assert tco_over_years(part.inputs, part.result) == part.years


def test_electricity_sensitivity(cost):
    rows = cost.kwh
    assert rows[0].usd_per_kwh == 0 and rows[0].tco_usd == pytest.approx(cost.result.capex_usd)
    qpd = [r.queries_per_usd for r in rows]
    assert all(b < a for a, b in zip(qpd, qpd[1:]))
    at = kwh_sensitivity(cost.inputs, cost.inputs.usd_per_kwh, n=2)[-1]
    assert at.tco_usd == pytest.approx(cost.result.tco_usd)
    assert [t.usd_per_kwh for t in cost.tariffs] == sorted(t.usd_per_kwh for t in cost.tariffs)
    assert len(cost.tariffs) >= 10 and all(t.source for t in cost.tariffs)


def test_utilisation_sensitivity(cost):
    qpd = [u.queries_per_usd for u in cost.utilization]
    qpj = [u.queries_per_joule for u in cost.utilization]
    assert all(b > a for a, b in zip(qpd, qpd[1:])) and all(b > a for a, b in zip(qpj, qpj[1:]))
    assert cost.utilization[-1].throughput_rps == pytest.approx(cost.capacity_rps)
    assert all(u.meets_sla == (u.throughput_rps <= cost.sla_bounded_rps) for u in cost.utilization)


def test_dpu_beats_cpu_on_cost_efficiency(cost):
    """PREBA 6.3: the DPU's extra CAPEX is repaid by throughput (3.0x better cost-efficiency on average). Priced at
    the SLA-bounded throughput (issue 12), the CPU design meets the SLA at no load: it has no queries per dollar."""
    by = {d.device: d for d in cost.devices}
    assert set(by) == {"cpu", "dpu", "gpu", "none"}
    assert by["dpu"].tco_usd > by["cpu"].tco_usd and by["dpu"].queries_per_usd > 0
    assert by["cpu"].queries_per_usd is None and by["cpu"].throughput_rps == 0
    assert by["none"].queries_per_usd >= by["dpu"].queries_per_usd


def test_explicit_prices_are_used(ctx, cost):
    v = cost_study(served(ctx, cost={"gpu_price_usd": 1000.0, "server_price_usd": 0.0}), ctx)
    assert v.result.capex_breakdown_usd["gpus"] == 1000.0 and v.result.capex_breakdown_usd["servers"] == 0.0
    assert v.result.queries_per_usd > cost.result.queries_per_usd


# --------------------------------------------------------------------------- charts

def _figures(pre, rpc, cost):
    return {
        "throughput": pre_charts.throughput_by_partitions(pre.scaling), "cores": pre_charts.cores_needed_chart(pre.scaling),
        "dpu": pre_charts.dpu_sizing_chart(pre.scaling, pre.dpu.units, pre.dpu.pcie_gbps_available),
        "decode": pre_charts.decode_chart(pre.decode),
        "costs": pre_charts.preprocessing_costs_chart(pre.cost_points, pre.cpu_costs, pre.input_size, pre.input_unit),
        "rpc": rpc_charts.rpc_breakdown_chart(rpc.presets), "services": rpc_charts.services_chart(rpc.services),
        "load": rpc_charts.load_curves_chart(rpc.load, sla_ms=15, rate_rps=rpc.rate_rps), "cpu": rpc_charts.host_cpu_chart(rpc.presets),
        "split": cost_charts.capex_opex_chart(cost.result.capex_breakdown_usd, cost.result.opex_usd, cost.inputs.years),
        "years": cost_charts.tco_years_chart(cost.years), "kwh": cost_charts.kwh_chart(cost.kwh, cost.tariffs, cost.inputs.usd_per_kwh),
        "util": cost_charts.utilization_chart(cost.utilization, cost.priced_utilization),
        "devices": cost_charts.device_cost_chart(cost.devices, "cpu"),
    }


def test_every_chart_has_axis_titles_with_units_and_a_legend(pre, rpc, cost):
    for name, fig in _figures(pre, rpc, cost).items():
        assert fig.layout.showlegend is True, name
        assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text, name
        assert "(" in fig.layout.xaxis.title.text + fig.layout.yaxis.title.text, (name, "unit of the value axis")
        assert len(fig.data) >= 1 and all(t.name for t in fig.data), name


def test_charts_carry_the_views_numbers(pre, rpc, cost):
    figs = _figures(pre, rpc, cost)
    cpu = next(t for t in figs["throughput"].data if t.name == "CPU preprocessing")
    assert list(cpu.y) == [r.rps["cpu"] for r in pre.scaling]
    gpu = next(t for t in figs["rpc"].data if t.name.startswith("GPU"))
    assert list(gpu.x) == [r.breakdown_us["gpu"] for r in rpc.presets]
    assert figs["util"].layout.yaxis2.title.text.startswith("queries per joule")
