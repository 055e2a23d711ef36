"""Cached engine calls for the Search page (keyed by the space's JSON and the data version)."""

from __future__ import annotations

import streamlit as st

from engine.search import expand, parse_space, search
from ui.design_state import context_at
from ui.session import get_book, get_store


@st.cache_data(max_entries=32, show_spinner=False)
def _shape(space_json: str, version: tuple) -> tuple[int, tuple[int, ...]]:
    grid = expand(parse_space(space_json), get_book())
    return grid.size, tuple(len(axis) for axis in grid.axes)


def space_shape(space_json: str) -> tuple[int, tuple[int, ...]]:
    """(designs, alternatives per axis) of a space; SearchError names what is wrong. Cached: expanding every
    maximal layout validates each one, about 0.1 s that a rerun should not repeat."""
    return _shape(space_json, get_store().version())


@st.cache_data(max_entries=8, show_spinner=False)
def _search(space_json: str, confirm_top: int, version: tuple, _progress=None):
    # one process: forking a Streamlit server (threads, sockets) is not safe
    return search(space_json, context_at(version), workers=1, progress=_progress, confirm_top=confirm_top,
                  sim_requests=20_000)


def search_cached(space_json: str, confirm_top: int, progress=None):
    return _search(space_json, confirm_top, get_store().version(), _progress=progress)
