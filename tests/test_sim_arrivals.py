"""Every simulate path uses the scenario's own arrival process (a rate scales it): the simulated arrivals have the
statistics of that process, not Poisson's, whether the run comes from simulate(), a sweep, or the CLI."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.analytic import Context, build_design, capacity
from engine.scenario import load_scenario
from engine.sim import simulate_design
from engine.sim.sweep import sweep

ROOT = Path(__file__).resolve().parents[1]
LAYOUT = ["3g.20gb", "2g.10gb", "1g.5gb", "1g.5gb"]
BASE = {"model": "resnet50", "gpu": {"sku": "A100-SXM4-40GB", "layout": LAYOUT}, "preprocessing": {"device": "none"}}
DIURNAL = {"kind": "diurnal", "period_s": 2.0, "amplitude": 0.9, "noise_cv": 0.3, "noise_interval_s": 0.1}
STEADY_TRACE = [i * 0.001 for i in range(3000)]  # one request per millisecond, exactly


@pytest.fixture(scope="module")
def ctx(store):
    return Context.from_store(store)


def design_with(ctx, **arrival):
    data = {**BASE, "workload": {"arrival": arrival}}
    return build_design(load_scenario(data, ctx.book), ctx)


@pytest.fixture(scope="module")
def light(ctx):
    """A rate well under capacity, so that arrivals, not queueing, shape the run."""
    return 0.3 * capacity(design_with(ctx))[0]


def dispersion(arrivals: np.ndarray, window_s: float) -> float:
    """Variance over mean of the arrival counts per window: 1 for Poisson, far above for a varying rate."""
    counts = np.bincount((arrivals // window_s).astype(int))[:-1]  # the last window is cut short
    return float(counts.var() / counts.mean())


def gaps_cv(arrivals: np.ndarray) -> float:
    gaps = np.diff(np.sort(arrivals))
    return float(gaps.std() / gaps.mean())


def test_a_diurnal_scenario_is_simulated_diurnal_not_poisson(ctx, light):
    poisson = simulate_design(design_with(ctx), duration_s=4.0, seed=3, rate=light, ctx=ctx)
    diurnal = simulate_design(design_with(ctx, **DIURNAL), duration_s=4.0, seed=3, rate=light, ctx=ctx)
    assert (poisson.workload, diurnal.workload) == ("poisson", "diurnal")
    assert diurnal.n_requests == pytest.approx(poisson.n_requests, rel=0.25)  # the same mean rate
    assert dispersion(poisson.records["arrival"], 0.1) < 1.5
    assert dispersion(diurnal.records["arrival"], 0.1) > 10


def test_a_trace_scenario_plays_its_timestamps_and_a_rate_scales_them(ctx):
    design = design_with(ctx, kind="trace", timestamps=STEADY_TRACE)
    own = simulate_design(design, None, seed=1, ctx=ctx)
    assert own.workload == "trace" and own.n_requests == len(STEADY_TRACE)
    assert np.allclose(np.diff(own.records["arrival"]), 0.001)  # its own pace
    scaled = simulate_design(design, 2000, seed=1, ctx=ctx, rate=500.0)
    gaps = np.diff(scaled.records["arrival"])
    assert np.allclose(gaps, 0.002) and scaled.rate_rps == pytest.approx(500.0)  # shape kept: still steady
    poisson = simulate_design(design_with(ctx), 2000, seed=1, ctx=ctx, rate=500.0)
    assert gaps_cv(poisson.records["arrival"]) > 0.8 and gaps_cv(scaled.records["arrival"]) < 0.01


def test_a_bursty_trace_stays_bursty_when_scaled(ctx):
    bursts = sorted(b + 0.0001 * k for b in np.arange(0, 3.0, 0.05) for k in range(20))  # 20 back-to-back per 50 ms
    design = design_with(ctx, kind="trace", timestamps=bursts)
    r = simulate_design(design, None, seed=1, ctx=ctx, rate=200.0)
    assert r.rate_rps == pytest.approx(200.0)
    assert gaps_cv(r.records["arrival"]) > 3  # Poisson's is 1


def test_mlperf_single_stream_is_a_closed_loop(ctx):
    r = simulate_design(design_with(ctx, kind="single-stream"), 400, seed=1, ctx=ctx, rate=1e6)
    assert r.workload == "single-stream"
    order = np.argsort(r.records["arrival"])
    arrival, end = r.records["arrival"][order], r.records["end"][order]
    assert np.all(arrival[1:] >= end[:-1] - 1e-12)  # the next query is issued only when the previous one is done


def test_mlperf_multi_stream_and_offline_follow_their_rules(ctx):
    multi = simulate_design(design_with(ctx, kind="multi-stream", samples_per_query=8), 200, seed=1, ctx=ctx)
    assert multi.workload == "multi-stream" and np.all(multi.records["size"] == 8)
    offline = simulate_design(design_with(ctx, kind="offline"), 500, seed=1, ctx=ctx)
    assert offline.workload == "offline" and np.all(offline.records["arrival"] == 0)


def test_mlperf_server_is_poisson_with_its_verdict(ctx, light):
    r = simulate_design(design_with(ctx, kind="mlperf-server"), 5000, seed=2, ctx=ctx, rate=light)
    assert r.workload == "mlperf-server" and r.mlperf is not None
    assert 0.9 < gaps_cv(r.records["arrival"]) < 1.1


def test_a_sweep_runs_the_scenario_s_process_at_each_rate(ctx):
    """The Design page's simulated points and the CLI's --sweep-rate go through sweep()."""
    design = design_with(ctx, kind="trace", timestamps=STEADY_TRACE)
    runs = sweep(design, [200.0, 400.0], 1000, seed=1, ctx=ctx, workers=1)
    assert [r.workload for r in runs] == ["trace", "trace"]
    assert [round(r.rate_rps) for r in runs] == [200, 400]
    diurnal = sweep(design_with(ctx, **DIURNAL), [300.0], 2000, seed=1, ctx=ctx, workers=1)
    assert diurnal[0].workload == "diurnal"


def test_the_compare_bisection_simulates_the_scenario_s_process(ctx, monkeypatch):
    """Compare's 'Simulate' (engine.studies.compare.simulate_bounds) probes the scenario's own process at each load."""
    import engine.partition.bounded as bounded
    from engine.studies.compare import simulate_bounds

    seen = []
    original = bounded.simulate_design

    def spy(design, *args, **kw):
        result = original(design, *args, **kw)
        seen.append(result.workload)
        return result

    monkeypatch.setattr(bounded, "simulate_design", spy)  # where the bisection looks it up
    scenario = load_scenario({**BASE, "workload": {"arrival": DIURNAL}}, ctx.book)
    simulate_bounds([scenario], ctx, n_requests=1000)
    assert seen and set(seen) == {"diurnal"}


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "engine", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def test_cli_simulate_uses_the_scenario_s_arrival_process(tmp_path):
    path = tmp_path / "diurnal.json"
    path.write_text(json.dumps({**BASE, "workload": {"arrival": {**DIURNAL, "rate_rps": 300}}}))
    done = run_cli("simulate", str(path), "--requests", "1500", "--json", "--no-progress")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["workload"] == "diurnal"
    # --workload lays its fields over the scenario's process rather than replacing it with Poisson's defaults
    done = run_cli("simulate", str(path), "--requests", "1500", "--json", "--no-progress",
                   "--workload", '{"amplitude": 0.2}')
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["workload"] == "diurnal"


def test_a_diurnal_noise_interval_that_would_cut_a_run_into_millions_is_refused(ctx):
    """noise_interval_s is bounded below only by MIN_POSITIVE; one rate per interval must not exhaust memory."""
    from engine.sim import SimError

    design = design_with(ctx, **{**DIURNAL, "noise_interval_s": 1e-6})
    with pytest.raises(SimError, match=r"^workload\.arrival\.noise_interval_s: 1e-06 s cuts this run"):
        simulate_design(design, 1000, seed=1, ctx=ctx, rate=100.0)
