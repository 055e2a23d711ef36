"""Cached engine calls for the Design page (keyed by the scenario's JSON, so reruns are free)."""

from __future__ import annotations

import streamlit as st

from engine.analytic import Context, Evaluation, build_design, capacity, evaluate_design
from engine.report.build import LoadCurve, load_curve
from engine.scenario import load_scenario
from ui.compute import engine_call
from ui.session import get_book, get_store


@st.cache_resource(max_entries=8, show_spinner=False)  # hosted: a session that imports gets its own version
def context_at(version: tuple) -> Context:
    """The engine context of one data version (cached; every page's engine calls go through it)."""
    return Context.from_store(get_store(), book=get_book())  # one profile book per data version


def context() -> Context:
    return context_at(get_store().version())


@engine_call(entries=256)
def evaluate_cached(scenario_json: str) -> tuple[Evaluation, LoadCurve]:
    """The Evaluation and the 40-point analytic latency-vs-load curve up to capacity."""
    ctx = context()
    scenario = load_scenario(scenario_json, ctx.book)
    design = build_design(scenario, ctx)
    evaluation = evaluate_design(design, ctx)
    return evaluation, load_curve(design, evaluation.sla.percentile)


@engine_call(progress="simulating...", kind="design-sim")
def simulate_cached(scenario_json: str, fractions: tuple, n_requests: int, seed: int = 0, *, progress=None) -> dict:
    """Simulated latency points at fractions of capacity (engine.sim.sweep), and the batch-size histogram
    at the point nearest the offered load; computed once per inputs for all sessions, with a progress bar."""
    from engine.sim.sweep import sweep

    ctx = context()
    design = build_design(load_scenario(scenario_json, ctx.book), ctx)
    cap = capacity(design)[0]
    rates = [cap * f for f in fractions]
    # one process: forking a Streamlit server (threads, sockets) is not safe
    runs = sweep(design, rates, n_requests, seed=seed, ctx=ctx, workers=1, progress=progress)
    points = [{"rate_rps": r.rate_rps, "mean_ms": r.latency_ms.mean, "tail_ms": r.sla.latency_at_rate_ms,
               "tail_ci_ms": r.ci.sla or 0.0, "stable": r.stable} for r in runs]
    hist: dict[int, int] = {}
    at = min(range(len(runs)), key=lambda i: abs(runs[i].rate_rps - design.scenario.workload.arrival.rate_rps))
    for b, c in runs[at].batch_size_histogram.items():
        hist[int(b)] = hist.get(int(b), 0) + int(c)
    return {"points": points, "histogram": hist, "histogram_rate_rps": runs[at].rate_rps,
            "requests": n_requests, "seed": seed}

