"""Selectboxes whose options change while their key stays (pinned designs, a GPU's layouts).

A browser sends a selectbox's chosen label; after the options change it can still send a label from the old
list, and Streamlit then hands the page that label (a string) instead of one of the options. Calling
keep_choice before the widget is drawn puts a valid option back.
"""

from __future__ import annotations

from typing import Any, Sequence

import streamlit as st


def keep_choice(key: str, options: Sequence[Any], fallback: Any) -> None:
    """Before the widget `key` is drawn: if its value is not one of `options`, set it to `fallback`."""
    if key in st.session_state and st.session_state[key] not in options:
        st.session_state[key] = fallback
