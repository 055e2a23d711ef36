"""Cached engine calls for the Partitioning page (ui.compute.engine_call: keyed by the base scenario's JSON and the
data version)."""

from __future__ import annotations

from engine.studies.partitioning import partitioning_study, simulate_study
from engine.scenario import load_scenario
from ui.compute import engine_call
from ui.design_state import context


@engine_call(entries=32, spinner="Planning every partitioning policy...")
def study_cached(base_json: str, max_gpcs, seed: int):
    ctx = context()
    return partitioning_study(load_scenario(base_json, ctx.book), ctx, max_gpcs=max_gpcs, seed=seed)


@engine_call(progress="simulating...", kind="partition-sim")
def sim_cached(base_json: str, max_gpcs, seed: int, n_requests: int, alpha: float, *, progress=None):
    """engine.studies.partitioning.simulate_study of the cached study, computed once per inputs for all sessions, with
    a progress bar."""
    return simulate_study(study_cached(base_json, max_gpcs, seed), context(), n_requests=n_requests, seed=seed,
                          alpha=alpha, progress=progress)
