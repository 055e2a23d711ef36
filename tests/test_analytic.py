"""The analytic engine: properties of capacity and latency, stability, PREBA's bottleneck, SLA search."""

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.analytic import Context, at_rate, build_design, capacity, evaluate, sla_bounded_rate
from engine.scenario import load_scenario

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def ctx(store):
    return Context.from_store(store)


def scenario(ctx, **kw):
    base = {"model": "resnet50", "gpu": {"sku": "A100-SXM4-80GB", "layout": ["3g.40gb", "4g.40gb"]},
            "preprocessing": {"device": "none"}}
    for k, v in kw.items():
        base[k] = {**base.get(k, {}), **v} if isinstance(v, dict) else v
    return load_scenario(base, ctx.book)


def design(ctx, **kw):
    return build_design(scenario(ctx, **kw), ctx)


@SETTINGS
@given(st.integers(4, 60), st.integers(1, 20))
def test_more_cores_never_lowers_capacity(ctx, cores, extra):
    a = capacity(design(ctx, host={"cpu_cores": cores, "cpu_reserved_cores": 2},
                        preprocessing={"device": "cpu"}))[0]
    b = capacity(design(ctx, host={"cpu_cores": cores + extra, "cpu_reserved_cores": 2},
                        preprocessing={"device": "cpu"}))[0]
    assert b >= a * (1 - 1e-9)


@SETTINGS
@given(st.integers(1, 16), st.integers(1, 8))
def test_more_dpu_units_never_lowers_capacity(ctx, units, extra):
    a = capacity(design(ctx, preprocessing={"device": "dpu", "units": units}))[0]
    b = capacity(design(ctx, preprocessing={"device": "dpu", "units": min(64, units + extra)}))[0]
    assert b >= a * (1 - 1e-9)


@SETTINGS
@given(st.floats(1, 400), st.floats(1.01, 4))
def test_faster_link_never_lowers_capacity(ctx, gbps, factor):
    a = capacity(design(ctx, rpc={"link_gbps": gbps}))[0]
    b = capacity(design(ctx, rpc={"link_gbps": min(3200, gbps * factor)}))[0]
    assert b >= a * (1 - 1e-9)


@SETTINGS
@given(st.floats(0.02, 1.3), st.sampled_from(["none", "fixed", "preba", "work-conserving"]),
       st.sampled_from(["fifs", "round-robin", "jsq", "elsa"]))
def test_latency_utilization_and_stability(ctx, load, policy, sched):
    d = design(ctx, batching={"policy": policy}, scheduler={"policy": sched}, preprocessing={"device": "cpu"})
    cap, _, caps = capacity(d)
    rate = load * cap
    pt = at_rate(d, rate)
    for s in pt.stages:  # utilisation = rate / capacity per stage
        assert s.utilization == pytest.approx(rate / caps[s.name])
    assert pt.gpu.utilization == pytest.approx(rate / caps["gpu"])
    assert pt.stable == (rate < cap)  # unstable exactly when some utilisation >= 1
    if pt.stable:
        service = sum(s.service_s + s.fixed_s for s in pt.stages) + min(p.service(1) for p in d.gpu.partitions)
        assert pt.latency_s["mean"] >= service * (1 - 1e-9)  # never below the sum of service times
        assert pt.latency_s["p99"] >= pt.latency_s["p50"]
    else:
        assert pt.unstable_reason and "utilisation >= 1" in pt.unstable_reason


def test_preba_cpu_preprocessing_is_the_bottleneck_on_7x1g(ctx):
    """PREBA 3.3: a light vision model on 7 x 1g with 32 host cores is CPU-bound; a DPU or none removes it."""
    def ev(device):
        return evaluate({"model": "efficientnet-b0", "gpu": {"sku": "A100-SXM4-80GB", "layout": ["1g.10gb"] * 7},
                         "host": {"cpu_cores": 32}, "preprocessing": {"device": device}}, ctx)
    cpu, dpu, ideal = ev("cpu"), ev("dpu"), ev("none")
    assert cpu.bottleneck == "host_cpu" and dpu.bottleneck == "gpu" and ideal.bottleneck == "gpu"
    assert cpu.capacity_rps < 0.85 * ideal.capacity_rps  # CPU preprocessing costs a large share of the ideal
    assert dpu.capacity_rps == pytest.approx(ideal.capacity_rps, rel=0.02)


def test_sla_bounded_rate_meets_sla_and_is_maximal(ctx):
    d = design(ctx)
    r = sla_bounded_rate(d)
    assert 0 < r < capacity(d)[0]
    assert at_rate(d, r).latency_s["sla"] <= d.sla_s
    assert at_rate(d, min(r * 1.02, capacity(d)[0] * 0.9999)).latency_s["sla"] > d.sla_s * 0.98


def test_evaluation_keys_and_units(ctx):
    e = evaluate(scenario(ctx, workload={"arrival": {"rate_rps": 3000}}), ctx)
    assert e.stable and e.bottleneck in e.stage_capacity_rps
    assert set(e.latency_ms.model_dump()) == {"mean", "p50", "p95", "p99"}
    assert e.latency_ms.mean == pytest.approx(sum(e.breakdown_ms.values()))
    assert e.cost.tco_usd == pytest.approx(e.cost.capex_usd + e.cost.opex_usd)
    assert e.cost.queries_per_usd > 0 and e.host_cpu.used >= 0
    assert len(e.partitions) == 2 and all(part.batch_max >= 1 for part in e.partitions)


def test_overloaded_design_is_reported_unstable(ctx):
    e = evaluate(scenario(ctx, workload={"arrival": {"rate_rps": 1e6}}), ctx)
    assert not e.stable and "utilisation >= 1" in e.unstable_reason and math.isinf(e.latency_ms.p99)


def test_load_curve_is_mean_and_sla_on_the_sweep_grid(ctx):
    """The one latency-vs-load curve the pages and the report draw: evenly spaced rates up to 0.995 x capacity."""
    from engine.analytic import load_curve, mean_and_sla
    from engine.analytic.operating_point import sweep_grid

    design = build_design(scenario(ctx), ctx)
    cap = capacity(design)[0]
    points = load_curve(design, 12)
    assert [rate for rate, _, _ in points] == sweep_grid(cap / 12, cap * 0.995, 12)
    assert all((mean, tail) == mean_and_sla(design, rate) for rate, mean, tail in points)
    assert all(tail >= mean > 0 for _, mean, tail in points)


def test_remembered_rate_points_match_a_fresh_context(store):
    """A GPU side remembers its answers per rate; sides with another RPC overhead must not share them."""
    from engine.analytic import mean_and_sla

    shared = Context.from_store(store)
    presets = ("grpc", "local", "splitrpc-pnic", "grpc")
    got = [mean_and_sla(design(shared, rpc={"preset": p}), 2500.0) for p in presets]
    fresh = [mean_and_sla(design(Context.from_store(store), rpc={"preset": p}), 2500.0) for p in presets]
    assert got == fresh
    assert got[0] != got[1]  # the presets' per-batch overheads differ, so their GPU sides do


def test_text_model_with_default_cpu_preprocessing_gives_rpc_every_free_core(ctx):
    ev = evaluate({"model": "bert-large", "gpu": {"sku": "A100-SXM4-80GB", "layout": ["3g.40gb", "4g.40gb"]}}, ctx)
    assert ev.bottleneck == "gpu" and ev.stage_capacity_rps["rpc"] > ev.capacity_rps > 1


def test_gpu_decode_counts_every_gpu(ctx):
    one, two = (evaluate({"model": "resnet50", "gpu": {"sku": "A100-SXM4-80GB", "count": n, "layout": ["1g.10gb"] * 7},
                          "preprocessing": {"device": "gpu"}}, ctx) for n in (1, 2))
    # issue 12: 1g slices have no JPEG engine, so decode is charged to each slice's own SMs (the GPU stage)
    assert "preprocess:gpu" not in one.stage_capacity_rps
    assert two.stage_capacity_rps["gpu"] == pytest.approx(2 * one.stage_capacity_rps["gpu"])
    one, two = (evaluate({"model": "resnet50", "gpu": {"sku": "A100-SXM4-80GB", "count": n, "layout": ["7g.80gb"]},
                          "preprocessing": {"device": "gpu"}}, ctx) for n in (1, 2))  # a JPEG engine per GPU
    assert two.stage_capacity_rps["preprocess:gpu"] == pytest.approx(2 * one.stage_capacity_rps["preprocess:gpu"])


@pytest.mark.parametrize("components", [{}, {"serial_executor": True}])
def test_designs_sharing_a_context_answer_as_they_do_alone(store, components):
    """Designs that differ only in the RPC path share their GPU side's partitions but not their service times (the
    path's GPU-stage overhead; a serial executor's per-item work): each answers in a shared context exactly as
    in a fresh one. A copied partition used to keep its source's batch tables, so the second design read the
    first one's times (SLA-bounded rate and p99 off by up to 2x)."""
    def data(preset):
        return {"model": "resnet50", "gpu": {"sku": "A100-SXM4-40GB"}, "preprocessing": {"device": "none"},
                "rpc": {"preset": preset, "components": components},
                "batching": {"policy": "work-conserving", "max_batch": 8},
                "workload": {"arrival": {"kind": "poisson", "rate_rps": 100},
                             "sla": {"latency_ms": 100, "percentile": 99}}}

    shared = Context.from_store(store)
    for preset in ("grpc", "lynx-snic", "splitrpc-pnic"):
        together = evaluate(data(preset), shared)
        alone = evaluate(data(preset), Context.from_store(store))
        assert together.sla_bounded_rps == alone.sla_bounded_rps, preset
        assert together.latency_ms.p99 == alone.latency_ms.p99, preset


def test_a_changed_partition_copy_remembers_nothing_of_its_source(ctx):
    from engine.analytic.service_laws import batch_tables

    part = design(ctx).gpu.partitions[0]
    batch_tables(part, 4)
    slower = part.model_copy(update={"mean_s": part.mean_s + 1.0, "tail_s": part.tail_s + 1.0})
    assert batch_tables(slower, 4)[0][0] == pytest.approx(part.mean_s[0] + 1.0)
    side = design(ctx).gpu
    assert side.model_copy(update={"partitions": (slower,)}).__pydantic_private__["_answers"] == {}
