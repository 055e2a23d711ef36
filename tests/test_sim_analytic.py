"""Analytic engine against the simulator (engine.sim.compare): on a grid of scenarios at utilisation <= 0.85,
the analytic p99 within a stated tolerance of the simulated p99.

Stated tolerance: 25 % under first-idle-first-serve (measured with `python -m engine.sim.compare --requests
40000`: median 4.8 %, largest 15.1 %) and 30 % under round-robin (median 6.6 %, largest 25.1 %, the worst at
0.85 load on the heterogeneous layout, where the slowest slice nears saturation). Variable-length models
(`--models variable`: BERT-large over 64-384 tokens, Jasper over log-normal audio, every batching policy):
the DESIGN.md bars, 10 % on the mean and 15 % on p99.
"""

import pytest

from engine.analytic import Context
from engine.sim.compare import compare, scenarios_for, variable_grid

TOLERANCE = 0.25


@pytest.fixture(scope="module")
def ctx(store):
    return Context.from_store(store)


def scenarios(scheduler):
    out = []
    for layout_name, layout in (("7x1g", ["1g.5gb"] * 7), ("3g+2g+1g+1g", ["3g.20gb", "2g.10gb", "1g.5gb", "1g.5gb"])):
        for policy in ("none", "fixed", "work-conserving"):
            out.append({"name": f"{layout_name} {policy} {scheduler}", "model": "resnet50",
                        "gpu": {"sku": "A100-SXM4-40GB", "layout": layout}, "batching": {"policy": policy},
                        "scheduler": {"policy": scheduler}})
    return out


@pytest.fixture(scope="module")
def fifs_table(ctx):
    return compare(ctx, scenarios("fifs"), n_requests=20_000, seed=1)


def test_analytic_p99_within_tolerance_of_the_simulator_under_fifs(fifs_table):
    df = fifs_table
    assert (df["util"] <= 0.85).all() and df["stable"].all()
    bad = df[df["error"].abs() > TOLERANCE]
    assert bad.empty, bad.to_string()


def test_analytic_mean_close_to_the_simulator_under_fifs(fifs_table):
    err = (fifs_table["analytic_mean_ms"] - fifs_table["sim_mean_ms"]) / fifs_table["sim_mean_ms"]
    assert err.abs().max() < 0.35


RR_TOLERANCE = 0.30


def test_analytic_p99_within_tolerance_under_round_robin(ctx):
    df = compare(ctx, scenarios("round-robin"), n_requests=20_000, seed=1)
    assert df["stable"].all()  # the analytic capacity (n x the slowest slice) keeps the grid stable
    assert (df["error"].abs() <= RR_TOLERANCE).all(), df.to_string()


@pytest.fixture(scope="module")
def variable_table(ctx):
    # PREBA's length buckets have their own bars (tests/test_variable_length.py)
    return compare(ctx, variable_grid(policies=("none", "fixed", "work-conserving")), utils=(0.3, 0.6, 0.85),
                   n_requests=30_000, seed=1)


def test_variable_length_models_mean_and_p99_close_to_the_simulator(variable_table):
    """BERT-large (64-384 tokens) and Jasper (log-normal audio) without batching, with fixed (timeout) and with
    work-conserving batching, at 30-85 % load: within the DESIGN.md bars, 10 % on the mean and 15 % on p99.
    Before: up to 139 % (mean) and 202 % (p99) over (python -m engine.sim.compare --models variable)."""
    df = variable_table
    assert df["stable"].all()
    assert (df["mean_error"].abs() < 0.10).all(), df.to_string()
    # p99 within 15 %, or within the simulator's own 95 % interval where a 30k-request run cannot pin its p99
    # down that closely (at 85 % load its interval is 15-25 % of p99)
    close = (df["error"].abs() < 0.15) | ((df["analytic_p99_ms"] - df["sim_p99_ms"]).abs() <= df["sim_ci_ms"])
    assert close.all(), df.to_string()


def test_compare_grid_covers_fixed_and_variable_length_models():
    names = [s["name"] for s in scenarios_for("all", quick=True)]
    assert any(n.startswith("7x1g") for n in names)  # ResNet-50, fixed-size inputs
    assert {n.split()[0] for n in names} >= {"bert-large/64-384tok", "jasper/lognormal-s"}
    assert all(s["workload"]["input_len"]["kind"] != "fixed" for s in variable_grid())
