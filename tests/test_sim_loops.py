"""The simulator's plain event loops take the same steps as its simpy processes, and as the benchmark's reference
loops (benchmarks/reference_loops.py, written from the rules): same batches, same times, to the last digit. The host
pools' numpy fast path equals the Kiefer-Wolfowitz recursion it shortcuts."""

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from engine.analytic import Context, build_design, capacity
from engine.scenario import load_scenario
from engine.sim import ServiceSpec, loops
from engine.sim import service as gpu_service
from engine.sim.gpu import GpuEngine
from engine.sim.hoststages import _few_waits, _kiefer_wolfowitz, _reordered, fifo_pool
from engine.sim.run import prepare

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("reference_loops", ROOT / "benchmarks" / "reference_loops.py")
reference_loops = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reference_loops)

LAYOUT = ["3g.20gb", "2g.10gb", "1g.5gb", "1g.5gb"]
POLICIES = ("none", "work-conserving", "fixed", "preba")
SCHEDULERS = ("fifs", "round-robin", "jsq", "elsa")
LOG_FIELDS = ("partition", "start", "formed", "end", "items", "n_requests", "request_batch")


@pytest.fixture(scope="module")
def ctx(store):
    return Context.from_store(store)


def prepared(ctx, policy, scheduler, n=3000, load=0.8, **extra):
    scenario = {"model": "resnet50", "gpu": {"sku": "A100-SXM4-40GB", "layout": LAYOUT},
                "batching": {"policy": policy}, "scheduler": {"policy": scheduler}, **extra}
    design = build_design(load_scenario(scenario, ctx.book), ctx)
    return prepare(design, n, seed=4, ctx=ctx, rate=load * capacity(design)[0])


def same_log(a, b):
    for field in LOG_FIELDS:
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)


@pytest.mark.parametrize("scheduler", SCHEDULERS)
@pytest.mark.parametrize("policy", POLICIES)
def test_loop_equals_the_simpy_processes(ctx, policy, scheduler):
    run = prepared(ctx, policy, scheduler)
    same_log(GpuEngine(run.spec, run.requests).run(), GpuEngine(run.spec, run.requests, use_simpy=True).run())


def test_loop_equals_the_simpy_processes_with_length_buckets_and_dynamic_round_robin(ctx):
    jasper = {"model": "jasper", "gpu": {"sku": "A100-SXM4-80GB"}, "batching": {"policy": "preba"},
              "preprocessing": {"device": "none"},
              "workload": {"input_len": {"kind": "uniform", "low": 2, "high": 16.7}}}
    for scheduler in SCHEDULERS:
        design = build_design(load_scenario({**jasper, "scheduler": {"policy": scheduler}}, ctx.book), ctx)
        run = prepare(design, 3000, seed=4, ctx=ctx, rate=0.8 * capacity(design)[0])
        assert any(len(caps) > 1 for caps in run.plan.batch_max)
        same_log(GpuEngine(run.spec, run.requests).run(), GpuEngine(run.spec, run.requests, use_simpy=True).run())
    run = prepared(ctx, "fixed", "round-robin")
    same_log(GpuEngine(run.spec, run.requests, force_dynamic=True).run(),
             GpuEngine(run.spec, run.requests, force_dynamic=True, use_simpy=True).run())


@pytest.mark.parametrize("service", [None, {"kind": "lognormal", "scv": 0.5, "mean_ms": 1.0, "host": "none"},
                                     {"kind": "deterministic", "mean_ms": 1.0, "host": "none"}])
def test_unit_loop_moves_its_log_in_chunks_and_draws_on_demand(ctx, monkeypatch, service):
    """First-idle batching of one-item queries (_loop_shared_unit): its log moved from lists every few batches, its
    service draws made as batches need them, a profiled service computed inline and a synthetic one sampled:
    the processes' batches to the last digit."""
    monkeypatch.setattr(loops, "LOG_CHUNK", 7)
    monkeypatch.setattr(gpu_service, "DRAW_CHUNK", 5)  # the first draws; the loop asks for more after 5 batches
    calls = []
    unit_loop = loops._loop_shared_unit
    monkeypatch.setattr(loops, "_loop_shared_unit", lambda engine: calls.append(1) or unit_loop(engine))
    run = prepared(ctx, "fixed", "fifs", load=0.5, **({"service": service} if service else {}))
    log = GpuEngine(run.spec, run.requests).run()
    assert calls and len(log.start) > 100
    same_log(log, GpuEngine(run.spec, run.requests, use_simpy=True).run())


@pytest.mark.parametrize("scheduler", SCHEDULERS)
@pytest.mark.parametrize("policy", ("none", "fixed"))
def test_reference_loops_give_the_same_latencies(ctx, policy, scheduler):
    run = prepared(ctx, policy, scheduler, n=4000)
    log = GpuEngine(run.spec, run.requests).run()
    np.testing.assert_array_equal(reference_loops.reference(run), log.end[log.request_batch])


def test_reference_loop_of_an_mmc_queue(ctx):
    design = build_design(load_scenario({"model": "resnet50", "gpu": {"sku": "A100-SXM4-40GB",
                                                                       "layout": ["1g.5gb"] * 7},
                                         "batching": {"policy": "none"}, "preprocessing": {"device": "none"}},
                                        ctx.book), ctx)
    run = prepare(design, 5000, seed=4, ctx=ctx, rate=0.9 * 7 / 1e-3,
                  service=ServiceSpec(kind="exponential", mean_ms=1.0, host="none"))
    log = GpuEngine(run.spec, run.requests).run()
    np.testing.assert_array_equal(reference_loops.reference(run), log.end[log.request_batch])


@pytest.mark.parametrize("k, load", [(2, 0.1), (2, 0.9), (7, 0.5), (7, 1.1), (23, 0.4), (40, 0.97)])
def test_host_pool_fast_path_equals_the_recursion(k, load):
    rng = np.random.default_rng(k)
    n = 30_000
    arrive = np.cumsum(rng.exponential(1 / (load * k), n))
    service = rng.lognormal(0.0, 0.8, n)
    start, end = fifo_pool(arrive, service, k)
    exact_start, exact_end = _kiefer_wolfowitz(arrive, service, k, 0, [-math.inf] * k)
    np.testing.assert_array_equal(start, exact_start)
    np.testing.assert_array_equal(end, exact_end)


@pytest.mark.parametrize("k, load, sigma, grid, n, behind", [(23, 0.41, 0.55, 0.0, 40_000, False),
                                                              (2, 0.02, 0.8, 0.0, 40_000, False),
                                                              (4, 0.1, 2.0, 0.0, 100_000, True),
                                                              (7, 0.25, 0.0, 0.0, 40_000, False),
                                                              (3, 0.05, 0.8, 0.25, 40_000, True),
                                                              (40, 0.6, 1.2, 0.0, 40_000, True)])
def test_few_waits_path_equals_the_recursion(k, load, sigma, grid, n, behind):
    """The path for pools where few requests wait (counts over the no-wait ends, then the waits one by one) gives
    the recursion's floats: with heavy tails, constant service, tied arrivals (`grid`: arrival times rounded to
    a grid of that many mean service times) and, where `behind`, requests that wait only because earlier ones
    did (their count without those waits is below k)."""
    rng = np.random.default_rng(k + int(100 * load))
    arrive = np.cumsum(rng.exponential(1 / (load * k), n))
    if grid:
        arrive = np.round(arrive / grid) * grid
    service = rng.lognormal(-sigma * sigma / 2, sigma, n) if sigma else np.ones(n)
    few = _few_waits(arrive, service, k, ordered=True)
    assert few is not None  # the path is taken
    start, end, order = few
    exact_start, exact_end = _kiefer_wolfowitz(arrive, service, k, 0, [-math.inf] * k)
    np.testing.assert_array_equal(end, exact_end)
    # the order the batcher takes them in, fixed up from the no-wait ends' sort (ties by index, `grid`)
    np.testing.assert_array_equal(order, np.argsort(exact_end, kind="stable"))
    waited = exact_start > arrive
    no_wait_busy = np.arange(n) - np.searchsorted(np.sort(arrive + service), arrive, side="right")
    assert waited.any() and (int(waited.sum()) > int(np.sum(no_wait_busy >= k))) == behind
    np.testing.assert_array_equal(start, exact_start)


@pytest.mark.parametrize("seed", range(8))
def test_reordered_is_the_stable_argsort_after_values_grow(seed):
    """The batcher's order from the host pool's (_reordered): the stable order of values after some grew, from
    the order before, with many ties (small integers) among the moved, the rest and both."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    values = rng.integers(0, 1 + n // 8, n).astype(float)
    order = np.argsort(values, kind="stable")
    old_sorted = values[order]
    grown = values.copy()
    indices = rng.choice(n, size=int(rng.integers(0, n // 4 + 2)) if n > 1 else 1, replace=False)
    grown[indices] += rng.integers(0, 1 + n // 8, len(indices))  # some by 0: moved to where they were
    moved = [(int(index), float(values[index])) for index in rng.permutation(indices)]
    np.testing.assert_array_equal(_reordered(order, old_sorted, grown, moved), np.argsort(grown, kind="stable"))


def test_few_waits_path_declines_a_busy_pool():
    rng = np.random.default_rng(3)
    arrive = np.cumsum(rng.exponential(1 / (0.95 * 4), 20_000))
    assert _few_waits(arrive, rng.exponential(1.0, 20_000), 4) is None


@pytest.mark.parametrize("service", [None, {"kind": "lognormal", "scv": 0.5, "mean_ms": 1.0, "host": "none"},
                                     {"kind": "deterministic", "mean_ms": 1.0, "host": "none"}])
def test_unbatched_service_drawn_at_once_equals_the_processes(ctx, service):
    """A homogeneous layout without batching draws every batch's service time at once (GpuService.unbatched_times):
    the same numbers as one draw per batch."""
    design = build_design(load_scenario({"model": "resnet50", "gpu": {"sku": "A100-SXM4-40GB",
                                                                       "layout": ["1g.5gb"] * 7},
                                         "batching": {"policy": "none"}}, ctx.book), ctx)
    rate = 0.9 * (7 / 1e-3 if service else capacity(design)[0])
    run = prepare(design, 4000, seed=4, ctx=ctx, rate=rate, service=service)
    assert run.spec.service.unbatched_times(run.requests.sizes) is not None
    same_log(GpuEngine(run.spec, run.requests).run(), GpuEngine(run.spec, run.requests, use_simpy=True).run())
