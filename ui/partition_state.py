"""Cached engine calls for the Partitioning page (keyed by the base scenario's JSON and the data version)."""

from __future__ import annotations

import streamlit as st

from engine.studies.partitioning import partition_study, simulate_study
from engine.scenario import load_scenario
from ui.compute import run_with_progress
from ui.design_state import context_at
from ui.session import get_store


@st.cache_data(max_entries=32, show_spinner="Planning every partitioning policy...")
def _study(base_json: str, max_gpcs, seed: int, version: tuple):
    ctx = context_at(version)
    return partition_study(load_scenario(base_json, ctx.book), ctx, max_gpcs=max_gpcs, seed=seed)


def study_cached(base_json: str, max_gpcs, seed: int):
    return _study(base_json, max_gpcs, seed, get_store().version())


def sim_cached(base_json: str, max_gpcs, seed: int, n_requests: int, alpha: float):
    """engine.studies.partitioning.simulate_study of the cached study, computed once per inputs for all sessions, with
    a progress bar."""
    version = get_store().version()

    def compute(progress):
        study = _study(base_json, max_gpcs, seed, version)
        return simulate_study(study, context_at(version), n_requests=n_requests, seed=seed, alpha=alpha,
                              progress=progress)

    return run_with_progress("partition-sim", (base_json, max_gpcs, seed, n_requests, alpha, version), compute,
                             "simulating...")
