"""Cached engine calls for the Search page (keyed by the space's JSON and the data version)."""

from __future__ import annotations

import streamlit as st

from engine.executors import make_executor
from engine.search import expand, parse_space, search
from ui.design_state import context_at
from ui.session import get_book, get_store, hosting


@st.cache_data(max_entries=32, show_spinner=False)
def _shape(space_json: str, version: tuple) -> tuple[int, tuple[int, ...]]:
    grid = expand(parse_space(space_json), get_book())
    return grid.size, tuple(len(axis) for axis in grid.axes)


def space_shape(space_json: str) -> tuple[int, tuple[int, ...]]:
    """(designs, alternatives per axis) of a space; SearchError names what is wrong. Cached: expanding every
    maximal layout validates each one, about 0.1 s that a rerun should not repeat."""
    return _shape(space_json, get_store().version())


@st.cache_data(max_entries=8, show_spinner=False)
def _search(space_json: str, confirm_top: int, version: tuple, executor: str, ray_address, _progress=None):
    # local: one process, since forking a Streamlit server (threads, sockets) is not safe; ray: the cluster of
    # KNEEPOINT_RAY_ADDRESS (or a Ray started here). Either gives the same answer.
    return search(space_json, context_at(version), workers=1, progress=_progress, confirm_top=confirm_top,
                  sim_requests=20_000, executor=make_executor(executor, workers=1, address=ray_address))


def search_cached(space_json: str, confirm_top: int, progress=None, executor: str = "local"):
    address = hosting().ray_address if executor == "ray" else None
    return _search(space_json, confirm_top, get_store().version(), executor, address, _progress=progress)
