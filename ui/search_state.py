"""Cached engine calls for the Search page (keyed by the space's JSON and the data version)."""

from __future__ import annotations

import streamlit as st

from engine.executors import make_executor
from engine.search import expand, parse_space, search
from ui.compute import run_with_progress
from ui.design_state import context_at
from ui.session import get_book, get_store, hosting

SIM_REQUESTS = 20_000  # per simulator check of a top design: tails within a few percent in about a second


@st.cache_data(max_entries=32, show_spinner=False)
def _shape(space_json: str, version: tuple) -> tuple[int, tuple[int, ...]]:
    grid = expand(parse_space(space_json), get_book())
    return grid.size, tuple(len(axis) for axis in grid.axes)


def space_shape(space_json: str) -> tuple[int, tuple[int, ...]]:
    """(designs, alternatives per axis) of a space; SearchError names what is wrong. Cached: expanding every
    maximal layout validates each one, about 0.1 s that a rerun should not repeat."""
    return _shape(space_json, get_store().version())


def search_cached(space_json: str, confirm_top: int, executor: str = "local"):
    """engine.search.search over the space, computed once per inputs for all sessions, with a progress bar.
    local: one process, since forking a Streamlit server (threads, sockets) is not safe; ray: the cluster of
    KNEEPOINT_RAY_ADDRESS (or a Ray started here). Either gives the same answer, so the executor is not part
    of the key."""
    version = get_store().version()
    address = hosting().ray_address if executor == "ray" else None
    return run_with_progress(
        "search", (space_json, confirm_top, version),
        lambda progress: search(space_json, context_at(version), workers=1, progress=progress,
                                confirm_top=confirm_top, sim_requests=SIM_REQUESTS,
                                executor=make_executor(executor, workers=1, address=address)), "searching...")
