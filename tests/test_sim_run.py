"""simulate(): determinism and seeds, workloads, results, stability, sweeps, the CLI."""

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.analytic import Context, build_design, capacity
from engine.scenario import load_scenario
from engine.sim import ServiceSpec, SimError, SimWorkload, simulate, simulate_design
from engine.sim.sweep import adaptive, sweep
from engine.io.traces import TraceError, parse_trace_bytes

ROOT = Path(__file__).resolve().parents[1]
LAYOUT = ["3g.20gb", "2g.10gb", "1g.5gb", "1g.5gb"]


@pytest.fixture(scope="module")
def ctx(store):
    return Context.from_store(store)


def make(ctx, **kw):
    base = {"model": "resnet50", "gpu": {"sku": "A100-SXM4-40GB", "layout": LAYOUT}}
    for k, v in kw.items():
        base[k] = {**base.get(k, {}), **v} if isinstance(v, dict) else v
    return build_design(load_scenario(base, ctx.book), ctx)


@pytest.fixture(scope="module")
def design(ctx):
    return make(ctx)


@pytest.fixture(scope="module")
def rate(design):
    return 0.6 * capacity(design)[0]


def test_same_seed_same_result(ctx, design, rate):
    a = simulate_design(design, 8000, seed=5, rate=rate, ctx=ctx)
    b = simulate_design(design, 8000, seed=5, rate=rate, ctx=ctx)
    assert a.model_dump(exclude={"wall_s"}) == b.model_dump(exclude={"wall_s"})
    np.testing.assert_array_equal(a.records["end"], b.records["end"])


def test_different_seeds_agree_within_their_confidence_intervals(ctx, design, rate):
    a = simulate_design(design, 30_000, seed=1, rate=rate, ctx=ctx)
    b = simulate_design(design, 30_000, seed=2, rate=rate, ctx=ctx)
    assert a.latency_ms.p99 != b.latency_ms.p99
    for field in ("mean", "p50", "p99"):
        hw = math.hypot(getattr(a.ci, field), getattr(b.ci, field))
        first, second = getattr(a.latency_ms, field), getattr(b.latency_ms, field)
        assert abs(first - second) <= hw, (field, first, second, hw)


def test_result_fields(ctx, design, rate):
    r = simulate_design(design, 10_000, seed=3, rate=rate, ctx=ctx)
    assert set(r.latency_ms.model_dump()) == {"mean", "p50", "p95", "p99"}
    assert r.stable and r.unstable_reason is None
    assert r.throughput_rps == pytest.approx(rate, rel=0.05)
    assert r.little["rel_error"] < 0.02
    assert 0 <= r.sla_violation_rate <= 1 and r.sla.met == (r.sla.latency_at_rate_ms <= r.sla.latency_ms)
    assert {f"gpu:{p.label}" for p in design.gpu.partitions} <= set(r.utilization)
    assert r.utilization["host_cpu"] == pytest.approx(rate / design.host_stages[0].capacity_rps, rel=0.1)
    assert sum(r.batch_size_histogram.values()) == sum(part.batches for part in r.partitions)
    assert set(r.breakdown_ms) >= {"host_cpu_wait", "host_cpu", "batching_wait", "gpu_queue", "gpu_service"}
    rec = r.records
    assert len(rec) == 10_000 and rec.measured_from == 1000
    lat = rec["latency"][rec.measured_from:]
    assert np.mean(lat) * 1e3 == pytest.approx(sum(r.breakdown_ms.values()), rel=1e-6)
    assert np.all(rec["batch_start"] >= rec["ready"] - 1e-12) and np.all(rec["end"] > rec["batch_start"])
    json.loads(r.to_json())


def test_duckdb_and_numpy_percentiles_agree(ctx, design, rate):
    a = simulate_design(design, 5000, seed=3, rate=rate, ctx=ctx, stats="duckdb")
    b = simulate_design(design, 5000, seed=3, rate=rate, ctx=ctx, stats="numpy")
    assert b.latency_ms.model_dump() == pytest.approx(a.latency_ms.model_dump(), rel=1e-9)
    assert a.ci.p99 == pytest.approx(b.ci.p99, rel=1e-9)


def test_default_percentiles_are_duckdbs(ctx, design, rate):
    """The default engine computes DuckDB's quantile_cont in numpy: the run's results are the ones DuckDB gives."""
    a = simulate_design(design, 5000, seed=3, rate=rate, ctx=ctx, stats="duckdb")
    b = simulate_design(design, 5000, seed=3, rate=rate, ctx=ctx)
    assert (a.stats_engine, b.stats_engine) == ("duckdb", "quantile_cont")
    results = [result.to_dict() for result in (a, b)]
    for result in results:
        del result["wall_s"], result["stats_engine"]
    assert results[0] == results[1]


def test_overload_is_judged_from_the_run_and_reports_growth(ctx, design):
    cap = capacity(design)[0]
    r = simulate_design(design, 20_000, seed=1, rate=1.3 * cap, ctx=ctx)
    assert not r.stable
    # the run's own tests tripped (not the analytic capacity), and it never claims to have stopped early
    assert "queue growth" in r.unstable_reason and "throughput" in r.unstable_reason
    assert "stopped" not in r.unstable_reason
    assert r.queue_growth_rps == pytest.approx(0.3 * cap, rel=0.25)


def test_mlperf_server_pass_fail(ctx):
    d = make(ctx, preprocessing={"device": "none"}, rpc={"preset": "local"}, batching={"policy": "none"})
    cap = capacity(d)[0]
    low = simulate_design(d, 5000, seed=1, rate=0.2 * cap, ctx=ctx, workload=SimWorkload(kind="mlperf-server"))
    assert low.mlperf["bound_ms"] == 15.0 and low.mlperf["passed"] == (low.latency_ms.p99 <= 15.0)
    high = simulate_design(d, 5000, seed=1, rate=1.2 * cap, ctx=ctx, workload=SimWorkload(kind="mlperf-server"))
    assert high.mlperf["passed"] is False


def test_offline_runs_at_capacity(ctx, design):
    r = simulate_design(design, 20_000, seed=1, ctx=ctx, workload=SimWorkload(kind="offline"))
    assert r.workload == "offline" and r.warmup_requests == 0
    assert r.throughput_rps == pytest.approx(capacity(design)[0], rel=0.1)
    assert max(r.batch_size_histogram) == max(p.max_batch for p in design.gpu.partitions)


def test_closed_loop_streams_keep_one_query_in_flight(ctx, design):
    s = simulate_design(design, 500, seed=1, ctx=ctx, workload=SimWorkload(kind="single-stream"))
    assert s.mean_in_system == pytest.approx(1.0, rel=1e-6)
    rec = s.records
    assert np.all(rec["arrival"][1:] >= rec["end"][:-1] - 1e-12)
    assert s.mlperf["metric"] == "p90 latency"
    m = simulate_design(design, 300, seed=1, ctx=ctx, workload=SimWorkload(kind="multi-stream", samples_per_query=8))
    assert set(m.batch_size_histogram) == {8}


def test_diurnal_trace_has_a_time_series_with_the_cycle(ctx, design, rate):
    w = SimWorkload(kind="diurnal", period_s=10.0, amplitude=0.8, noise_cv=0.05, noise_interval_s=0.25)
    r = simulate_design(design, duration_s=10.0, seed=1, rate=0.5 * rate, ctx=ctx, workload=w)
    ts = r.timeseries
    arr = np.array(ts["arrivals_rps"])
    assert len(arr) == 100
    assert arr[15:35].mean() > 2.5 * arr[65:85].mean()  # peak near t = 2.5 s, trough near 7.5 s
    assert r.n_requests == pytest.approx(0.5 * rate * 10, rel=0.1)


def test_uploaded_trace(ctx, design):
    t = np.cumsum(np.random.default_rng(1).exponential(1e-3, 3000)) + 100.0
    data = ("timestamp_s,other\n" + "".join(f"{x:.6f},1\n" for x in t)).encode()
    stamps = parse_trace_bytes(data, "trace.csv")
    r = simulate_design(design, None, seed=1, ctx=ctx, workload=SimWorkload(kind="trace", timestamps=stamps))
    assert r.n_requests == 3000 and r.timeseries is not None
    assert r.records["arrival"][0] == 0.0
    assert r.rate_rps == pytest.approx(1000, rel=0.1)


@pytest.mark.parametrize("lines, message", [
    (["t", "0.1", "abc"], "line 3: column 1 is not a number"),  # the line's text is never echoed
    (["when,what", "1,2"], "no timestamp column"),
    ([], "no timestamps"),
])
def test_bad_traces_name_the_line(lines, message):
    with pytest.raises(TraceError, match=message):
        parse_trace_bytes("\n".join(lines).encode())


def test_bad_arguments_are_sim_errors(ctx, design):
    with pytest.raises(SimError, match="n_requests or duration_s"):
        simulate_design(design, None, ctx=ctx)
    with pytest.raises(SimError, match="warmup"):
        simulate_design(design, 100, ctx=ctx, warmup=1.5)
    with pytest.raises(SimError, match="stats"):
        simulate_design(design, 100, ctx=ctx, stats="excel")
    with pytest.raises(SimError, match="service.mean_ms: 3 values for 4 partitions"):
        simulate_design(design, 100, ctx=ctx, service=ServiceSpec(mean_ms=[1.0, 2.0, 3.0]))
    assert issubclass(SimError, ValueError)


def test_simulate_takes_a_scenario_dict(ctx):
    r = simulate({"model": "resnet50", "gpu": {"sku": "A100-SXM4-40GB"}, "workload": {"arrival": {"rate_rps": 500}}},
                 3000, seed=1, ctx=ctx)
    assert r.rate_rps == 500 and r.n_requests == 3000


def test_preba_on_audio_uses_length_buckets(ctx):
    sc = load_scenario({"model": "jasper", "gpu": {"sku": "A100-SXM4-80GB"}, "batching": {"policy": "preba"},
                        "preprocessing": {"device": "none"},
                        "workload": {"input_len": {"kind": "uniform", "low": 2, "high": 16.7}}}, ctx.book)
    d = build_design(sc, ctx)
    r = simulate_design(d, 6000, seed=1, rate=0.7 * capacity(d)[0], ctx=ctx)
    assert r.batching.bucket_width == 2.5 and len(r.batching.batch_max[0]) == 7
    rec = r.records
    # a batch is priced at its longest input: batches holding long inputs take longer at the same size
    long_b = rec["length"] > 12
    assert np.all(rec["length"] <= 16.7 + 1e-9)
    assert r.stable and np.any(long_b)


def test_sweep_in_parallel_equals_serial_runs(ctx, design):
    cap = capacity(design)[0]
    rates = [0.2 * cap, 0.5 * cap, 0.8 * cap]
    par = sweep(design, rates, 4000, seed=2, ctx=ctx, workers=2)
    ser = [simulate_design(design, 4000, seed=2, rate=r, ctx=ctx, stats="numpy") for r in rates]
    assert [p.latency_ms for p in par] == [s.latency_ms for s in ser]
    assert [p.rate_rps for p in par] == pytest.approx(rates)


def test_adaptive_length_doubles_until_the_target(ctx, design, rate):
    r, rounds = adaptive(design, 0.05, n_start=2000, max_requests=64_000, seed=1, rate=rate, ctx=ctx)
    assert r.ci.p99 <= 0.05 * r.latency_ms.p99 or r.n_requests == 64_000
    assert rounds >= 1 and "adaptive length" in r.notes[-1]


def test_idiomatic_model_gives_the_same_answer(ctx, design, rate):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from sim_speed import idiomatic
    finally:
        sys.path.pop(0)
    from engine.sim.hoststages import pool_shape
    from engine.sim.plan import gpu_plan
    from engine.sim.service import GpuService

    n = 6000
    res = simulate_design(design, n, seed=4, rate=rate, ctx=ctx, warmup=0.0)
    rec = res.records
    svc = GpuService(design, n, np.random.default_rng(np.random.SeedSequence(4).spawn(4)[3]), None, ctx)
    plan = gpu_plan(design, ctx)
    end = idiomatic(rec["arrival"].tolist(), [s.fixed_s for s in design.host_stages],
                    [(rec[f"{s.name}_end"] - rec[f"{s.name}_start"]).tolist() for s in design.host_stages],
                    [pool_shape(s)[0] for s in design.host_stages], [c[0] for c in plan.batch_max], plan.time_queue_s, svc)
    np.testing.assert_allclose(end, rec["end"], rtol=0, atol=1e-9)


def run_cli(*args, input_text=None):
    return subprocess.run([sys.executable, "-c", "import sys; from engine.cli.main import _Parser; from engine.cli import simulate as cli_sim;"
                           "p = _Parser(prog='engine'); s = p.add_subparsers(dest='command', required=True, "
                           "parser_class=_Parser); cli_sim.register(s); a = p.parse_args(sys.argv[1:]); "
                           "raise SystemExit(a.func(a))", *args], capture_output=True, text=True, cwd=ROOT,
                          input=input_text, timeout=120)


def test_cli_simulate_json_and_sweep(tmp_path):
    sc = tmp_path / "s.json"
    sc.write_text(json.dumps({"model": "resnet50", "gpu": {"sku": "A100-SXM4-40GB", "layout": LAYOUT},
                              "workload": {"arrival": {"rate_rps": 800}}}))
    p = run_cli("simulate", str(sc), "--requests", "3000", "--seed", "1", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert {"ci", "sla_violation_rate", "mean_in_system", "throughput_rps", "latency_ms", "utilization",
            "breakdown_ms", "stable"} <= set(out)
    p = run_cli("simulate", str(sc), "--requests", "2000", "--sweep-rate", "200:1200:3")
    assert p.returncode == 0, p.stderr
    assert len(p.stdout.strip().splitlines()) == 4
    p = run_cli("simulate", str(sc), "--requests", "100", "--workload", "sometimes")
    assert p.returncode == 2 and p.stderr.startswith("error: --workload: kind") and "Traceback" not in p.stderr
    p = run_cli("simulate", str(sc), "--requests", "100", "--service", '{"kind": "exponential"}')
    assert p.returncode == 2 and "mean_ms" in p.stderr


def test_progress_is_reported_up_to_one(ctx, design, rate):
    seen = []
    simulate_design(design, 5000, seed=1, rate=rate, ctx=ctx, progress=seen.append)
    assert seen[-1] == 1.0 and seen == sorted(seen) and len(seen) > 10
    seen.clear()
    simulate_design(design, 300, seed=1, ctx=ctx, progress=seen.append, workload=SimWorkload(kind="single-stream"))
    assert seen[-1] == 1.0


def test_synthetic_service_and_workload_come_from_the_scenario_json(store):
    """The same JSON contract carries a synthetic service (M/M/1 here) and the arrival kind."""
    from engine.analytic import Context
    from engine.analytic.queueing import mmc_wait_mean
    from engine.sim import simulate

    ctx = Context.from_store(store)
    scenario = {"model": "resnet50", "gpu": {"sku": "A100-SXM4-80GB"}, "batching": {"policy": "none"},
                "workload": {"arrival": {"kind": "poisson", "rate_rps": 700}},
                "service": {"kind": "exponential", "mean_ms": 1.0, "host": "none"}}
    r = simulate(scenario, 60_000, seed=3, ctx=ctx)
    wq = mmc_wait_mean(700, 1000, 1) * 1e3  # ms
    assert r.latency_ms.mean == pytest.approx(wq + 1.0, rel=0.06)
    offline = simulate({**scenario, "workload": {"arrival": {"kind": "offline"}}}, 2_000, seed=3, ctx=ctx)
    assert offline.workload == "offline"
