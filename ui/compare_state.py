"""Cached engine calls for the Compare page (keyed by the designs' JSON and the data version)."""

from __future__ import annotations

import streamlit as st

from engine.studies.compare import compare, simulate_bounds
from engine.scenario import load_scenario
from engine.seed_presets import build_preset
from ui.compute import run_with_progress
from ui.design_state import context_at
from ui.session import get_store


@st.cache_data(max_entries=64, show_spinner="Evaluating the pinned designs...")
def _compare(designs: tuple[str, ...], baseline: int, version: tuple):
    ctx = context_at(version)
    return compare([load_scenario(d, ctx.book) for d in designs], ctx, baseline)


def compare_cached(designs: list[str], baseline: int):
    return _compare(tuple(designs), baseline, get_store().version())


@st.cache_data(max_entries=16, show_spinner="Building the preset's designs...")
def _preset(key: str, version: tuple) -> list[str]:
    ctx = context_at(version)
    return [load_scenario(d, ctx.book).to_json() for d in build_preset(key, ctx)]


def preset_designs(key: str) -> list[str]:
    """The preset's designs as validated scenario JSON."""
    return _preset(key, get_store().version())


def simulate_cached(designs: list[str], n_requests: int, seed: int = 0):
    """Simulated latency-bounded throughput of every design (engine.studies.compare.simulate_bounds), computed once per
    inputs for all sessions, with a progress bar."""
    version = get_store().version()

    def compute(progress):
        ctx = context_at(version)
        return simulate_bounds([load_scenario(d, ctx.book) for d in designs], ctx, n_requests, seed, progress)

    return run_with_progress("compare-sim", (tuple(designs), n_requests, seed, version), compute, "simulating...")
