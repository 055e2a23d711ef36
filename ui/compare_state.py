"""Cached engine calls for the Compare page (ui.compute.engine_call: keyed by the designs' JSON and the data
version)."""

from __future__ import annotations

from engine.studies.compare import compare_study, simulate_bounds
from engine.scenario import load_scenario
from engine.reproduce.registry import build_preset
from ui.compute import engine_call
from ui.design_state import context


@engine_call(entries=64, spinner="Evaluating the pinned designs...")
def compare_cached(designs: list[str], baseline: int):
    ctx = context()
    return compare_study([load_scenario(design, ctx.book) for design in designs], ctx, baseline)


@engine_call(entries=16, spinner="Building the preset's designs...")
def preset_designs(key: str) -> list[str]:
    """The preset's designs as validated scenario JSON."""
    ctx = context()
    return [load_scenario(design, ctx.book).to_json() for design in build_preset(key, ctx)]


@engine_call(progress="simulating...", kind="compare-sim")
def simulate_cached(designs: list[str], n_requests: int, seed: int = 0, *, progress=None):
    """Simulated latency-bounded throughput of every design (engine.studies.compare.simulate_bounds), computed once per
    inputs for all sessions, with a progress bar."""
    ctx = context()
    return simulate_bounds([load_scenario(design, ctx.book) for design in designs], ctx, n_requests, seed, progress)
