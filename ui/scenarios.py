"""The session's scenarios shared between pages: the Design page's current design and the pinned ones.

Pages read these instead of each other's widgets: the Design page sets the current scenario after it
validates, its "Pin" button appends to the pins, and Compare / Report read both. Pins are stored as
scenario JSON (plain data), so they survive reruns and can be written into a report unchanged.
"""

from __future__ import annotations

from typing import Callable, Optional

import streamlit as st

from engine.presets import DEFAULT_SCENARIO
from engine.scenario import Scenario, ScenarioError, load_scenario
from engine.io.urlstate import decode
from ui.viewlink import read_link

_CURRENT = "kp_current"
_PINS = "kp_pins"
#: the preset whose designs the pins hold because Compare opened on it for a session with nothing pinned: a sample,
#: which the session's first own pin replaces (None once the pins are the user's)
_SAMPLE = "kp_pins_sample"


def set_current(scenario: Scenario) -> None:
    st.session_state[_CURRENT] = scenario.to_json()


def scenario_reader(book) -> Callable[[str], Scenario]:
    """Reads a link's scenario token (?s=) for ui.viewlink.read_link; ScenarioError names what is wrong."""
    return lambda token: load_scenario(decode(token), book)


def current_scenario(book) -> Scenario:
    """The Design page's last valid scenario in this session, else the link's (?s=), else the default."""
    text = st.session_state.get(_CURRENT)
    if text:
        return load_scenario(text, book)
    token = st.query_params.get("s")
    if token:
        try:
            return scenario_reader(book)(token)
        except ScenarioError:
            pass  # the page that owns the link reports it (link_checked); here fall back to the default
    return load_scenario(DEFAULT_SCENARIO, book)


def link_checked(book) -> None:
    """For a page that starts from current_scenario: name a link (?s=) it could not start from. Nothing when the
    session has a current design (the link is not used), there is no link, or it loads."""
    if not st.session_state.get(_CURRENT):
        read_link("s", scenario_reader(book), "scenario")


def pins() -> list[str]:
    """Pinned scenarios as JSON texts, oldest first."""
    return list(st.session_state.get(_PINS, []))


def show_sample(designs: list[Scenario], preset: str) -> None:
    """Fill an empty session's pins with a preset's designs (`preset` names it), as a sample the first pin() of
    the user's own replaces."""
    clear_pins()
    for design in designs:
        pin(design)
    st.session_state[_SAMPLE] = preset


def sample() -> Optional[str]:
    """The preset the pins hold as a sample (show_sample), or None when they are the user's."""
    return st.session_state.get(_SAMPLE)


def pin(scenario: Scenario) -> int:
    """Pin a scenario (a second pin of the same name gets a numbered name); returns the number of pins. The first
    pin after a sample (show_sample) replaces it."""
    if st.session_state.pop(_SAMPLE, None):
        st.session_state[_PINS] = []
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
    st.session_state.pop(_SAMPLE, None)
