"""The session's scenarios shared between pages: the Design page's current design and the pinned ones.

Pages read these instead of each other's widgets: the Design page sets the current scenario after it
validates, its "Pin" button appends to the pins, and Compare / Report read both. Pins are stored as
scenario JSON (plain data), so they survive reruns and can be written into a report unchanged.
"""

from __future__ import annotations

from typing import Optional

import streamlit as st

from engine.presets import DEFAULT_SCENARIO
from engine.scenario import Scenario, ScenarioError, load_scenario
from engine.io.urlstate import decode

_CURRENT = "kp_current"
_PINS = "kp_pins"


def set_current(scenario: Scenario) -> None:
    st.session_state[_CURRENT] = scenario.to_json()


def current_scenario(book) -> Scenario:
    """The Design page's last valid scenario in this session, else the link's (?s=), else the default."""
    text = st.session_state.get(_CURRENT)
    if text:
        return load_scenario(text, book)
    token = st.query_params.get("s")
    if token:
        try:
            return load_scenario(decode(token), book)
        except ScenarioError:
            pass  # the page that owns the link reports it; here fall back to the default
    return load_scenario(DEFAULT_SCENARIO, book)


def link_problem(book) -> Optional[str]:
    """Why this session's starting scenario could not come from the link (?s=), for a page that starts from
    current_scenario to show; None when the session has a current design, there is no link, or it loads."""
    token = st.query_params.get("s")
    if st.session_state.get(_CURRENT) or not token:
        return None
    try:
        load_scenario(decode(token), book)
    except ScenarioError as e:
        return str(e)
    return None


def pins() -> list[str]:
    """Pinned scenarios as JSON texts, oldest first."""
    return list(st.session_state.get(_PINS, []))


def pin(scenario: Scenario) -> int:
    """Pin a scenario (a second pin of the same name gets a numbered name); returns the number of pins."""
    have = pins()
    names = {load_scenario(t).name for t in have}
    name, k = scenario.name, 2
    while name in names:
        name, k = f"{scenario.name} ({k})", k + 1
    have.append(scenario.model_copy(update={"name": name}).to_json())
    st.session_state[_PINS] = have
    return len(have)


def unpin(index: int) -> None:
    have = pins()
    if 0 <= index < len(have):
        del have[index]
    st.session_state[_PINS] = have


def clear_pins() -> None:
    st.session_state[_PINS] = []
