"""Cached engine calls for the Design page (keyed by the scenario's JSON, so reruns are free)."""

from __future__ import annotations

import numpy as np
import streamlit as st

from engine.analytic import Context, build_design, capacity, evaluate_design, mean_and_sla
from engine.scenario import load_scenario
from ui.session import get_book, get_store


@st.cache_resource(show_spinner=False)
def _ctx(version: tuple) -> Context:
    return Context.from_store(get_store(), book=get_book())  # one profile book per data version


def context() -> Context:
    return _ctx(get_store().version())


@st.cache_data(max_entries=256, show_spinner=False)
def evaluate_json(scenario_json: str, version: tuple) -> dict:
    """Evaluation and a 40-point analytic latency-vs-load curve up to capacity, as plain data."""
    ctx = _ctx(version)
    scenario = load_scenario(scenario_json, ctx.book)
    design = build_design(scenario, ctx)
    ev = evaluate_design(design, ctx)
    cap = capacity(design)[0]
    rates = list(np.linspace(cap / 40, cap * 0.995, 40))
    pts = [mean_and_sla(design, r) for r in rates]
    return {"evaluation": ev.model_dump(), "curve": {"rates": rates, "mean_ms": [p[0] * 1e3 for p in pts],
                                                      "tail_ms": [p[1] * 1e3 for p in pts]}}


def evaluate_cached(scenario_json: str) -> dict:
    return evaluate_json(scenario_json, get_store().version())
