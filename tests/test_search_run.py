"""engine.search.search: best designs, Pareto fronts, simulator check, progress, page tables and the CLI."""

import json
import math
import subprocess
import sys

import pytest

from engine.search import SearchError, frames, search
from engine.profiles import ProfileError
from tests.conftest import ROOT
from tests.usermodel import import_measured_on_one_gpu

SPACE = {"name": "small", "base": {"model": "resnet50", "gpu": {"sku": "A100-SXM4-40GB"},
                                   "workload": {"arrival": {"rate_rps": 400}}},
         "layouts": [["1g.5gb"] * 7, ["2g.10gb"] * 3 + ["1g.5gb"], ["7g.40gb"]],
         "preprocessing": ["none", "cpu"], "rpc": ["grpc", "splitrpc-pnic"],
         "batching": ["preba", {"policy": "fixed", "max_batch": 8, "max_queue_delay_ms": 2}]}
TOL = 1e-4  # SLA-bounded throughputs are compared to 5 significant figures (below the bisection's resolution)


@pytest.fixture(scope="module")
def ctx(store):
    from engine.analytic import Context

    return Context.from_store(store)


@pytest.fixture(scope="module")
def calls():
    return []


@pytest.fixture(scope="module")
def result(ctx, calls):
    return search(SPACE, ctx, workers=1, confirm_top=2, sim_requests=20_000,
                  progress=lambda frac, msg: calls.append((frac, msg)))


def test_every_design_is_evaluated(result):
    assert result.size == len(result.designs) == 24
    assert [d.index for d in result.designs] == list(range(24))
    assert all(d.error is None for d in result.designs)
    assert result.sla_ms == 15.0  # the MLPerf Server bound of ResNet-50


def test_the_best_design_meets_the_sla_and_wins_its_criterion(result):
    meeting = [d for d in result.designs if d.meets_sla]
    assert meeting, "the space is meant to hold designs that meet the SLA"
    best = result.designs[result.best_throughput]
    assert best.meets_sla and best.p99_ms <= result.sla_ms
    assert all(best.sla_bounded_rps >= d.sla_bounded_rps * (1 - TOL) for d in meeting)
    value = result.designs[result.best_value]
    assert value.meets_sla and all(value.queries_per_usd >= d.queries_per_usd for d in meeting)
    roles = result.candidate(best.index).roles
    assert "best-throughput" in roles


def test_cost_p99_front_is_non_dominated_and_covers_the_rest(result):
    f = result.front("cost-p99")
    pool = [d for d in result.designs if d.stable]
    members = [result.designs[i] for i in f.indices]
    assert members and all(m.stable for m in members)

    def dom(a, b):
        return a.tco_usd <= b.tco_usd and a.p99_ms <= b.p99_ms and (a.tco_usd < b.tco_usd or a.p99_ms < b.p99_ms)

    for m in members:
        assert not any(dom(d, m) for d in pool)
    for d in pool:
        assert d.index in f.indices or any(dom(m, d) for m in members)
    assert [m.tco_usd for m in members] == sorted(m.tco_usd for m in members)


def test_value_throughput_front_is_non_dominated_and_covers_the_rest(result):
    f = result.front("value-throughput")
    pool = [d for d in result.designs if d.sla_bounded_rps > 0]
    members = [result.designs[i] for i in f.indices]
    assert members and result.best_throughput in f.indices and result.best_value in f.indices

    def clearly_better(a, b):  # beyond the comparison tolerance in throughput
        return (a.queries_per_usd >= b.queries_per_usd and a.sla_bounded_rps >= b.sla_bounded_rps * (1 - TOL)
                and (a.queries_per_usd > b.queries_per_usd or a.sla_bounded_rps > b.sla_bounded_rps * (1 + TOL)))

    for m in members:
        assert not any(clearly_better(d, m) for d in pool)
    for d in pool:
        assert d.index in f.indices or any(m.queries_per_usd >= d.queries_per_usd
                                           and m.sla_bounded_rps >= d.sla_bounded_rps * (1 - TOL) for m in members)


def test_candidates_carry_a_scenario_that_reproduces_their_numbers(result, ctx):
    from engine.analytic import evaluate

    c = result.candidate(result.best_throughput)
    e = evaluate(c.scenario_json, ctx)
    assert e.sla_bounded_rps == pytest.approx(c.row.sla_bounded_rps)
    assert e.cost.tco_usd == pytest.approx(c.row.tco_usd)
    assert e.latency_ms.p99 == pytest.approx(c.row.p99_ms)


def test_the_simulator_confirms_the_top_candidates(result):
    confirmed = [c for c in result.candidates if c.confirmation is not None]
    assert len(confirmed) == 2
    assert {c.row.index for c in confirmed} >= {result.best_throughput}
    for c in confirmed:
        k = c.confirmation
        assert "confirmed" in c.roles and k.n_requests == 20_000
        assert k.sim_p99_ms > 0 and math.isfinite(k.sim_p99_ms)
        assert k.relative_error == pytest.approx((k.analytic_p99_ms - k.sim_p99_ms) / k.sim_p99_ms)
        assert k.sim_meets_sla == (k.sim_p99_ms <= result.sla_ms)


def test_progress_rises_to_one_with_messages(calls, result):
    fracs = [f for f, _ in calls]
    assert len(calls) >= 3 and fracs == sorted(fracs) and fracs[-1] == 1.0
    assert all(isinstance(m, str) and m for _, m in calls)
    assert any("simulating" in m for _, m in calls)


def test_frames_give_a_page_its_tables(result):
    t = frames(result)
    assert len(t["designs"]) == result.size and "roles" in t["designs"]
    assert len(t["best"]) == 2 and set(t["best"]["index"]) == {result.best_throughput, result.best_value}
    for f in result.fronts:
        assert t[f"front:{f.name}"]["index"].tolist() == list(f.indices)
    assert len(t["confirmations"]) == 2


def test_worker_processes_give_the_serial_answer(ctx, result, monkeypatch):
    from engine.search import run

    monkeypatch.setattr(run, "PARALLEL_FROM", 0)  # the pool even for this small space
    par = search(SPACE, ctx, workers=2, confirm_top=0)
    assert par.workers == 2
    assert [d.model_dump() for d in par.designs] == [d.model_dump() for d in result.designs]
    assert par.fronts == result.fronts and par.best_throughput == result.best_throughput


def test_a_design_that_fails_is_reported_not_fatal(ctx, monkeypatch):
    from engine.search import run

    real = run.ranked

    def flaky(design, ctx_):
        if design.scenario.batching.policy.value == "preba":
            raise ProfileError("no curve for this batching")
        return real(design, ctx_)

    monkeypatch.setattr(run, "ranked", flaky)
    r = search(SPACE, ctx, workers=1, confirm_top=0)
    failed = [d for d in r.designs if d.error]
    assert len(failed) == 12 and all(not d.stable and not d.meets_sla for d in failed)
    assert any("could not be evaluated" in n for n in r.notes)
    assert all(i not in f.indices for f in r.fronts for i in (d.index for d in failed))


def test_a_bug_in_one_design_fails_the_search_instead_of_reading_as_a_bad_input(ctx, monkeypatch):
    """Only the engine's user-facing errors (KneepointError) mark a design as failed; anything else is a bug."""
    from engine.search import run

    def broken(design, ctx_):
        raise ValueError("math domain error")  # what a bug raises, not an engine input error

    monkeypatch.setattr(run, "ranked", broken)
    with pytest.raises(ValueError, match="math domain error"):
        search(SPACE, ctx, workers=1, confirm_top=0)


def test_a_space_where_nothing_evaluates_is_an_error(tmp_path):
    """A user's model measured on a V100 only (no operator costs for the estimator) searched on an A100: every
    catalogue model has an estimated answer on every GPU, so only such a model leaves nothing to evaluate."""
    from engine.analytic import Context
    from engine.store import Store

    store = Store(tmp_path / "k.duckdb")
    model = import_measured_on_one_gpu(store)
    space = {"base": {"model": model, "gpu": {"sku": "A100-SXM4-40GB"}, "preprocessing": {"device": "none"}},
             "layouts": [["7g.40gb"]]}
    with pytest.raises(SearchError, match="no design could be evaluated.*my-detector"):
        search(space, Context.from_store(store), workers=1)
    store.close()


@pytest.mark.parametrize("kw, words", [({"workers": 0}, "workers: a whole number >= 1"),
                                       ({"confirm_top": -1}, "confirm_top"), ({"sim_requests": 10}, "sim_requests")])
def test_bad_arguments_name_themselves(ctx, kw, words):
    with pytest.raises(SearchError, match=words):
        search(SPACE, ctx, **kw)


# --------------------------------------------------------------------------- CLI

def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "engine", "search", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def test_cli_json(tmp_path):
    path = tmp_path / "space.json"
    path.write_text(json.dumps({**SPACE, "layouts": SPACE["layouts"][:2], "rpc": ["splitrpc-pnic"]}))
    r = run_cli(str(path), "--json", "--no-confirm", "--workers", "1")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["size"] == 8 and "designs" not in out
    best = out["best_throughput"]
    assert {f["name"] for f in out["fronts"]} == {"cost-p99", "value-throughput"}
    cand = next(c for c in out["candidates"] if c["row"]["index"] == best)
    assert json.loads(cand["scenario_json"])["model"] == "resnet50"


def test_cli_text_and_errors(tmp_path):
    path = tmp_path / "space.json"
    path.write_text(json.dumps({**SPACE, "layouts": [["7g.40gb"]], "preprocessing": ["none"], "rpc": ["grpc"]}))
    r = run_cli(str(path), "--no-confirm")
    assert r.returncode == 0, r.stderr
    assert "Pareto front cost-p99" in r.stdout and "2 designs of resnet50" in r.stdout
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**SPACE, "batching": [{"policy": "fixed", "max_batch": -1}]}))
    errors = {name: run_cli(*args) for name, args in (("bad", [str(bad)]), ("missing", [str(tmp_path / "no.json")]),
                                                        ("workers", [str(path), "--workers", "0"]))}
    for name, r in errors.items():
        assert r.returncode == 2, name
        assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert errors["bad"].stderr.startswith("error: batching[0].max_batch: Input should be greater than")
    assert "cannot read" in errors["missing"].stderr


def test_a_layout_s_twin_takes_its_answers_which_its_own_evaluation_gives(ctx):
    """Layouts with the same slices at other positions are evaluated once (DesignGrid.twins); evaluating the twin
    itself gives the same numbers to float summation order."""
    from collections import Counter

    from engine.analytic import evaluate
    from engine.catalog import enumerate_layouts
    from engine.search import expand, parse_space

    layouts = [lay.labels() for lay in enumerate_layouts(ctx.book.catalog.gpu("A100-SXM4-40GB"))]
    key = [tuple(sorted(Counter(e.split("@")[0] for e in lay).items())) for lay in layouts]
    pair = next((a, b) for a in range(len(layouts)) for b in range(a + 1, len(layouts)) if key[a] == key[b])
    space = {**SPACE, "layouts": [layouts[pair[0]], layouts[pair[1]]], "preprocessing": ["cpu"], "rpc": ["grpc"]}
    grid = expand(parse_space(space), ctx.book)
    r = search(grid, ctx, workers=1, confirm_top=0)
    assert r.size == 4 and grid.twins() == [0, 1, 0, 1]
    for first, twin in ((0, 2), (1, 3)):
        a, b = r.designs[first].model_dump(), r.designs[twin].model_dump()
        assert a["gpu"] != b["gpu"] and {k: v for k, v in a.items() if k not in ("index", "label", "gpu")} == {
            k: v for k, v in b.items() if k not in ("index", "label", "gpu")}
        own = evaluate(grid.scenario(twin), ctx)
        assert own.sla_bounded_rps == pytest.approx(b["sla_bounded_rps"], rel=1e-12)
        assert own.latency_ms.p99 == pytest.approx(b["p99_ms"], rel=1e-12)
        assert own.cost.tco_usd == pytest.approx(b["tco_usd"], rel=1e-12)


@pytest.mark.parametrize("percentile", [99, 95])
def test_the_ranked_numbers_are_evaluate_design_s_bit_for_bit(ctx, percentile):
    """The search reads engine.analytic.evaluate.ranked, evaluate_design without what only a page shows."""
    from engine.analytic import build_design, evaluate_design
    from engine.analytic.evaluate import ranked
    from engine.search import expand, parse_space

    base = {**SPACE["base"], "workload": {"arrival": {"rate_rps": 2500}, "sla": {"percentile": percentile}}}
    grid = expand(parse_space({**SPACE, "base": base}), ctx.book)
    seen = set()
    for i in range(0, grid.size, 3):
        design = build_design(grid.scenario(i), ctx)
        e, r = evaluate_design(design, ctx), ranked(design, ctx.fresh())
        assert (r.capacity_rps, r.bottleneck, r.stable, r.p99_ms, r.sla_latency_ms, r.sla_met, r.sla_bounded_rps) == (
            e.capacity_rps, e.bottleneck, e.stable, e.latency_ms.p99, e.sla.latency_at_rate_ms, e.sla.met,
            e.sla_bounded_rps)
        assert r.cost == e.cost
        seen.add((e.stable, e.sla.met, e.sla_bounded_rps > 0))
    assert len(seen) >= 3  # stable and not, meeting the SLA and not: the cases differ


def test_layouts_of_the_same_physics_are_ranked_once_with_their_own_numbers(ctx, monkeypatch):
    """MIG layouts of other profiles whose GPU sides share their answers (the same tables, e.g. 1g.10gb and 1g.20gb
    slices of a small model) and whose host stages are the same are ranked once in a context
    (engine.search.run._measure); each design's numbers are still the ones ranking it alone, in a fresh context, gives,
    bit for bit."""
    from engine.analytic import build_design
    from engine.analytic.evaluate import ranked
    from engine.catalog import enumerate_layouts
    from engine.search import expand, parse_space
    from engine.search import run

    base = {**SPACE["base"], "gpu": {"sku": "A100-SXM4-80GB"}}
    layouts = [lay.labels() for lay in enumerate_layouts(ctx.book.catalog.gpu("A100-SXM4-80GB"))]
    grid = expand(parse_space({**SPACE, "base": base, "layouts": layouts, "preprocessing": ["none"],
                               "rpc": ["grpc"], "batching": ["preba"]}), ctx.book)
    probe = ctx.fresh()
    sides = [build_design(grid.scenario(i), probe).gpu for i in range(grid.size)]
    pair = next((a, b) for a in range(grid.size) for b in range(a + 1, grid.size)
                if sides[a].answers_key() == sides[b].answers_key() and grid.twins()[a] != grid.twins()[b])
    grid = expand(parse_space({**SPACE, "base": base, "layouts": [layouts[pair[0]], layouts[pair[1]]],
                               "preprocessing": ["none", "cpu"], "rpc": ["grpc"], "batching": ["preba"]}), ctx.book)
    assert grid.twins() == [0, 1, 2, 3]  # not twins by position: other profiles
    counted = []
    monkeypatch.setattr(run, "ranked", lambda design, c: counted.append(1) or ranked(design, c))
    r = search(grid, ctx.fresh(), workers=1, confirm_top=0)
    assert len(counted) == 2  # one per preprocessing option: the second layout reads the first's
    for i in range(grid.size):
        alone = ranked(build_design(grid.scenario(i), (fresh := ctx.fresh())), fresh)
        row = r.designs[i]
        assert (row.sla_bounded_rps, row.p99_ms / 1e3, row.tco_usd) == (
            alone.sla_bounded_rps, alone.p99_ms / 1e3, alone.cost.tco_usd)
