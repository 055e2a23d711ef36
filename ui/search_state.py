"""Cached engine calls for the Search page (keyed by the space's JSON and the data version)."""

from __future__ import annotations

import streamlit as st

from engine.search import search
from ui.design_state import _ctx
from ui.session import get_store


@st.cache_data(max_entries=8, show_spinner=False)
def _search(space_json: str, confirm_top: int, version: tuple, _progress=None):
    # one process: forking a Streamlit server (threads, sockets) is not safe
    return search(space_json, _ctx(version), workers=1, progress=_progress, confirm_top=confirm_top,
                  sim_requests=20_000)


def search_cached(space_json: str, confirm_top: int, progress=None):
    return _search(space_json, confirm_top, get_store().version(), _progress=progress)
