"""search(space, ctx) -> SearchResult: sweep a design space analytically, pick the best designs and the
Pareto fronts, then let the simulator check the top candidates.

Every design is evaluated as the Design page evaluates one (engine.analytic.evaluate_design; the search reads the
numbers it ranks by through engine.analytic.evaluate.ranked, the same values without what only a page shows):
capacity, p99 at the offered rate, SLA-bounded throughput (the largest Poisson rate whose
SLA-percentile latency meets the SLA, DESIGN.md section 5) and TCO / queries per dollar at that
throughput (engine.cost, PREBA section 6.3). Best designs are chosen among those meeting the SLA at
the offered rate. Fronts: (TCO, p99 at the offered rate), both minimised, among designs stable at
that rate; (queries per dollar, SLA-bounded throughput), both maximised, among designs with a
positive SLA-bounded throughput. The sweep and the simulator's check run on an executor (engine.executors:
processes forked from the caller by default, or a Ray cluster): chunks of design indices go out, the grid and the
context are shared once, and nothing in a worker touches DuckDB.
"""

from __future__ import annotations

import math
import time
from typing import Callable, Optional

import numpy as np

from engine.analytic import Context, build_design
from engine.analytic.evaluate import ranked
from engine.analytic.sla import sla_of
from engine.executors import Executor, LocalExecutor
from engine.errors import KneepointError
from engine.search.pareto import MAX, MIN, front_order, non_dominated
from engine.search.result import Candidate, Confirmation, DesignRow, Front, SearchResult
from engine.search.space import DesignGrid, SearchError, SearchSpace, expand, parse_space
from engine.scenario import PreprocessingSpec, Scenario
from engine.vocab import PreprocessDevice
from engine.sim import SimError, simulate_design
from engine.store import Store

_METRICS = ("capacity_rps", "stable", "p99_ms", "sla_latency_ms", "meets_sla", "sla_bounded_rps", "tco_usd",
            "capex_usd", "opex_usd", "queries_per_usd", "queries_per_joule")
_FAILED = (0.0, 0.0, math.inf, math.inf, 0.0, 0.0, math.inf, math.inf, math.inf, 0.0, 0.0)
_COL = {name: k for k, name in enumerate(_METRICS)}
FRONTS = (("cost-p99", ("tco_usd", "p99_ms"), (MIN, MIN), "designs stable at the offered rate"),
          ("value-throughput", ("queries_per_usd", "sla_bounded_rps"), (MAX, MAX),
           "designs with an SLA-bounded throughput above 0"))
PARALLEL_FROM = 64  # smaller spaces are done before a pool would have started: one chunk
DEFAULT_SIM_REQUESTS = 100_000
MAX_CHUNK = 250  # designs per chunk at most: a few chunks per worker balance the load


def _evaluate(grid: DesignGrid, ctx: Context, index: int, alike: Optional[dict] = None) -> tuple:
    """(index, metrics in _METRICS order or None, bottleneck or the error). `alike`: _measure's, for this sweep."""
    return index, *_measure(grid.scenario(index), ctx, alike, grid.off_layout_key(index))


def _measure(scenario: Scenario, ctx: Context, alike: Optional[dict] = None,
             off_layout: Optional[tuple] = None) -> tuple[Optional[tuple], str]:
    """(metrics in _METRICS order or None, bottleneck or the error) of one design.

    `alike` (a sweep's, with the grid's DesignGrid.off_layout_key of the design): designs with equal keys whose GPU
    sides give the same answers (GpuSide.answers_key: the same physics, e.g. MIG layouts of other profiles with the
    same tables) and that have the same host stages are ranked once; the others' ranking would read the same
    remembered answers and stages and give the same numbers (64 of the search benchmark's 512 designs)."""
    try:
        design = build_design(scenario, ctx)
        if alike is None or off_layout is None:
            e = ranked(design, ctx)
        else:
            key = (off_layout, design.gpu.answers_key(), id(design.host_stages))
            if key not in alike:  # the design kept with its answer: the side and stages whose ids the key holds live
                alike[key] = (design, ranked(design, ctx))
            e = alike[key][1]
    except KneepointError as exc:  # the engine's input errors (e.g. a model too large for a slice): one bad design
        return None, str(exc)
    cost = e.cost
    return (e.capacity_rps, float(e.stable), e.p99_ms, e.sla_latency_ms, float(e.sla_met), e.sla_bounded_rps,
            cost.tco_usd, cost.capex_usd, cost.opex_usd, cost.queries_per_usd, cost.queries_per_joule), e.bottleneck


def _chunk(shared: tuple, indices: tuple[int, ...]) -> list[tuple]:
    """The evaluations of the designs `indices` (an executor's chunk function). shared: (grid, context) and, from
    search, the sweep's table of designs alike (_measure; each worker process fills its own copy), else one for the
    chunk."""
    grid, ctx, *alike = shared
    table = alike[0] if alike else {}
    return [_evaluate(grid, ctx, i, table) for i in indices]


def _sweep(shared: tuple, executor: Executor, report: Callable[[int], None]) -> tuple[list, int]:
    """Every design's evaluation, in index order, and the number of workers used.

    Only one design of each set of twins (DesignGrid.twins: MIG layouts with the same slices at other positions) is
    evaluated; the others take its answers. A twin whose representative could not be evaluated is evaluated itself
    (its error may name its own layout)."""
    grid, ctx = shared[:2]
    n = grid.size
    twins = grid.twins()
    unique = sorted(set(twins))
    m = len(unique)
    chunk = m if n < PARALLEL_FROM else max(1, min(MAX_CHUNK, math.ceil(m / (4 * executor.workers))))
    chunks = [tuple(unique[s:s + chunk]) for s in range(0, m, chunk)]
    parts = executor.map(_chunk, shared, chunks, progress=lambda done, _total: report(min(n, n * done * chunk // m)))
    done = {e[0]: e for part in parts for e in part}
    out = []
    for i, rep in enumerate(twins):
        first = done[rep]
        out.append(first if rep == i else (i, first[1], first[2]) if first[1] is not None else _evaluate(grid, ctx, i))
    return out, executor.parallel_for(len(chunks))


def _rows(grid: DesignGrid, evaluated: list) -> tuple[list[DesignRow], np.ndarray, list[str]]:
    values = np.array([m if m is not None else _FAILED for _, m, _ in evaluated], dtype=float).reshape(-1,
                                                                                                         len(_METRICS))
    rows, errors = [], []
    labels = grid.labels()
    for (i, m, info), v in zip(evaluated, values.tolist()):
        if m is None:
            errors.append(f"#{i}: {info}")
        rows.append(_row(i, labels(i), v, m is not None, info))
    return rows, values, errors


def _row(index: int, labels: dict[str, str], values: list[float], evaluated: bool, info: str) -> DesignRow:
    """A DesignRow from its axes' labels and its metrics in _METRICS order (NaN: no value)."""
    fields = dict(zip(_METRICS, values))
    fields.update(stable=bool(fields["stable"]), meets_sla=bool(fields["meets_sla"]))
    for k in ("queries_per_usd", "queries_per_joule"):  # no value on the cost basis (engine.cost.priced_rate)
        fields[k] = None if math.isnan(fields[k]) else fields[k]
    return DesignRow(index=index, label=" | ".join(labels.values()), **labels,
                     bottleneck=info if evaluated else "error", error=None if evaluated else info, **fields)


IDEAL_LABEL = "none (ideal)"


def _ideal(grid: DesignGrid, ctx: Context, best: Optional[int]) -> Optional[DesignRow]:
    """The best design with no preprocessing at all (PREBA's ideal: inputs arrive preprocessed), evaluated as a
    reference line for what the design's preprocessing costs; never a candidate, since nothing deploys it."""
    if not grid.ideal_reference or best is None:
        return None
    scenario = grid.scenario(best)
    if scenario.preprocessing.device == PreprocessDevice.NONE:
        return None
    ideal = scenario.model_copy(update={"preprocessing": PreprocessingSpec(device=PreprocessDevice.NONE)})
    metrics, info = _measure(ideal, ctx)
    labels = {**{o.axis: o.label for o in grid.options(best)}, "preprocessing": IDEAL_LABEL}
    return _row(best, labels, np.array(metrics or _FAILED, dtype=float).tolist(), metrics is not None, info)


def _compared(values: np.ndarray) -> np.ndarray:
    """The values ranked and filtered: SLA-bounded throughputs to 5 significant figures. Its bisection
    (engine.analytic.operating_point.sla_bounded_rate) stops a hair below the true bound, so designs on the same
    plateau differ by ~1e-8 relative; they should tie (and fall to the next criterion), not be split by that."""
    v = values.copy()
    x = v[:, _COL["sla_bounded_rps"]]
    pos = x > 0
    step = 10.0 ** (np.floor(np.log10(x[pos])) - 4)
    x[pos] = np.round(x[pos] / step) * step
    return v


def _best(values: np.ndarray, primary: str, secondary: str) -> Optional[int]:
    """Among designs meeting the SLA: highest `primary`, ties to higher `secondary`, then lower index."""
    idx = np.flatnonzero(values[:, _COL["meets_sla"]] > 0)
    if not len(idx):
        return None
    order = np.lexsort((idx, -values[idx, _COL[secondary]], -values[idx, _COL[primary]]))
    return int(idx[order[0]])


def _fronts(values: np.ndarray) -> tuple[Front, ...]:
    ok = {"cost-p99": (values[:, _COL["stable"]] > 0) & np.isfinite(values[:, _COL["p99_ms"]])
          & np.isfinite(values[:, _COL["tco_usd"]]),
          "value-throughput": values[:, _COL["sla_bounded_rps"]] > 0}
    out = []
    for name, objectives, directions, among in FRONTS:
        idx = np.flatnonzero(ok[name])
        cols = values[np.ix_(idx, [_COL[o] for o in objectives])]
        members = front_order(cols, non_dominated(cols, directions), directions)
        out.append(Front(name=name, objectives=objectives, directions=directions, among=among,
                         indices=tuple(int(idx[k]) for k in members)))
    return tuple(out)


def _to_confirm(values: np.ndarray, best: list[Optional[int]], top: int) -> list[int]:
    """The best designs first, then stable ones by (meets the SLA, SLA-bounded throughput, queries/$)."""
    stable = np.flatnonzero(values[:, _COL["stable"]] > 0)
    order = stable[np.lexsort((stable, -values[stable, _COL["queries_per_usd"]],
                               -values[stable, _COL["sla_bounded_rps"]], -values[stable, _COL["meets_sla"]]))]
    picks: list[int] = []
    for i in [b for b in best if b is not None] + order.tolist():
        if len(picks) >= top:
            break
        if i not in picks and values[i, _COL["stable"]] > 0:
            picks.append(int(i))
    return picks


def _confirm(shared: tuple, job: tuple[int, float, int, int]) -> Confirmation:
    """Simulate one design at the offered rate (engine.sim) and compare its p99 with the analytic one (an executor's
    chunk function: job is (design index, analytic p99 ms, requests, seed))."""
    grid, ctx = shared[:2]
    index, p99_ms, n_requests, seed = job
    rate = grid.base.workload.arrival.rate_rps
    common = dict(index=index, rate_rps=rate, analytic_p99_ms=p99_ms, n_requests=n_requests, seed=seed)
    try:
        r = simulate_design(build_design(grid.scenario(index), ctx), n_requests, seed=seed, ctx=ctx,
                            stats="numpy", timeseries=False)
    except SimError as e:
        return Confirmation(sim_p99_ms=None, sim_p99_ci_ms=None, relative_error=None, sim_meets_sla=None,
                            sim_violation_rate=None, note=f"not simulated: {e}", **common)
    p99 = r.latency_ms.p99
    err = (p99_ms - p99) / p99 if p99 > 0 and math.isfinite(p99) else None
    return Confirmation(sim_p99_ms=p99, sim_p99_ci_ms=r.ci.p99, relative_error=err,
                        sim_meets_sla=r.sla.met, sim_violation_rate=r.sla_violation_rate,
                        note=None if r.stable else f"the simulated queue grows: {r.unstable_reason}", **common)


def _check_args(workers, confirm_top, sim_requests, seed) -> None:
    for name, v, lo in (("workers", workers, 1), ("confirm_top", confirm_top, 0), ("sim_requests", sim_requests, 1000),
                        ("seed", seed, 0)):
        if v is None and name == "workers":
            continue
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise SearchError(f"{name}: a whole number >= {lo}, got {v!r}")


def search(space: SearchSpace | DesignGrid | dict | str, ctx: Optional[Context] = None, workers: Optional[int] = None,
           progress: Optional[Callable[[float, str], None]] = None, confirm_top: int = 3,
           sim_requests: int = DEFAULT_SIM_REQUESTS, seed: int = 0,
           executor: Optional[Executor] = None) -> SearchResult:
    """Evaluate every design of a space and return the best designs, the Pareto fronts and a simulator check.

    space: a SearchSpace (or its JSON / dict) or an expanded DesignGrid; ctx: engine.analytic.Context
    (from the default store if None); workers: processes for the sweep (default: all cores);
    progress(fraction, message); confirm_top: designs the simulator checks (0: none), each with
    sim_requests Poisson requests at the offered rate and the given seed; executor: where the sweep and the
    check run (engine.executors; default: a LocalExecutor of `workers` processes). The answer does not depend on it.
    """
    _check_args(workers, confirm_top, sim_requests, seed)
    t0 = time.perf_counter()
    if ctx is None:
        ctx = Context.from_store(Store())
    grid = space if isinstance(space, DesignGrid) else expand(parse_space(space), ctx.book)
    n = grid.size
    span = 0.85 if confirm_top else 1.0  # share of the progress bar for the analytic sweep

    def report(done: int) -> None:
        if progress:
            progress(span * done / n, f"evaluated {done:,} of {n:,} designs")

    executor = executor or LocalExecutor(workers)
    shared = (grid, ctx, {})  # one object: a Ray executor ships it once for the sweep and the check (_chunk)
    evaluated, used = _sweep(shared, executor, report)
    analytic_s = time.perf_counter() - t0
    rows, values, errors = _rows(grid, evaluated)
    if len(errors) == n:
        raise SearchError(f"no design could be evaluated, e.g. {errors[0]}")
    ranked = _compared(values)
    best_tp = _best(ranked, "sla_bounded_rps", "queries_per_usd")
    best_value = _best(ranked, "queries_per_usd", "sla_bounded_rps")
    fronts = _fronts(ranked)
    notes = list(grid.notes) + _notes(grid, values, errors)

    confirmations: dict[int, Confirmation] = {}
    picks = _to_confirm(ranked, [best_tp, best_value], confirm_top) if confirm_top else []
    if progress and picks:
        progress(span, f"simulating {len(picks)} design(s)")

    def confirmed(done: int, total: int) -> None:
        if progress:
            progress(span + (1 - span) * done / total, f"simulated {done} of {total} design(s)")

    checks = executor.map(_confirm, shared, [(i, rows[i].p99_ms, sim_requests, seed) for i in picks],
                          progress=confirmed)
    for i, c in zip(picks, checks):
        confirmations[i] = c
        if c.sim_meets_sla is not None and c.sim_meets_sla != rows[i].meets_sla:
            notes.append(f"#{i}: the simulator finds the SLA {'met' if c.sim_meets_sla else 'missed'} at the offered "
                         f"rate (p99 {c.sim_p99_ms:.2f} ms against {rows[i].p99_ms:.2f} ms analytic)")
    roles: dict[int, list[str]] = {}
    for role, i in (("best-throughput", best_tp), ("best-value", best_value)):
        if i is not None:
            roles.setdefault(i, []).append(role)
    for f in fronts:
        for i in f.indices:
            roles.setdefault(i, []).append(f"front:{f.name}")
    for i in confirmations:
        roles.setdefault(i, []).append("confirmed")
    candidates = tuple(Candidate(row=rows[i], roles=tuple(r), scenario_json=grid.scenario(i).to_json(),
                                 confirmation=confirmations.get(i)) for i, r in sorted(roles.items()))
    if progress:
        progress(1.0, f"done: {n:,} designs")
    base = grid.base
    return SearchResult(
        name=grid.name, model=base.model, gpu=f"{base.gpu.count} x {base.gpu.sku}",
        rate_rps=base.workload.arrival.rate_rps, sla_ms=sla_of(base) * 1e3,
        sla_percentile=base.workload.sla.percentile, size=n, workers=used, wall_s=time.perf_counter() - t0,
        analytic_s=analytic_s, designs_per_s=n / analytic_s if analytic_s > 0 else math.inf, designs=tuple(rows),
        best_throughput=best_tp, best_value=best_value, fronts=fronts, candidates=candidates, notes=tuple(notes),
        ideal_reference=_ideal(grid, ctx, best_tp))


def _notes(grid: DesignGrid, values: np.ndarray, errors: list[str]) -> list[str]:
    out = []
    if errors:
        out.append(f"{len(errors):,} design(s) could not be evaluated, e.g. {errors[0]}")
    rate = grid.base.workload.arrival.rate_rps
    if not (values[:, _COL["meets_sla"]] > 0).any():
        out.append(f"no design meets the SLA at the offered {rate:,.0f} req/s; the value-throughput front shows "
                   "what each design sustains within it")
    kind = grid.base.workload.arrival.kind.value
    if kind != "poisson":
        out.append(f"the analytic model assumes Poisson arrivals at {rate:,.0f} req/s; the simulator uses the "
                   f"base's {kind} workload")
    return out
