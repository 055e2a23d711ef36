"""State of the Preprocessing, RPC and Cost pages: where each starts, its link, and its cached engine call.

Each page starts from the link's scenario (?s=) or else the Design page's current one, lets the user change a
few fields, and writes the scenario it shows back to ?s=, so a copied link reproduces the view. The scenario
a page started from is kept under '<page>_base' (not a widget key, so it survives reruns); Reset goes back to
the Design page's current scenario. Engine calls are cached by ui.compute.engine_call.
"""

from __future__ import annotations

from typing import Callable, Optional

import streamlit as st

from engine.scenario import Scenario, ScenarioError, load_scenario
from engine.io.urlstate import encode
from engine.studies.cost import CostStudy, cost_defaults, cost_study
from engine.studies.preprocessing import PreprocessingStudy, preprocessing_study
from engine.studies.rpc import RpcStudy, rpc_study
from ui.compute import engine_call
from ui.design_state import context
from ui.scenarios import current_scenario, scenario_reader
from ui.text import md
from ui.viewlink import drop_link, read_link, write_link

ToWidgets = Callable[[Scenario], dict]


def _base_key(page: str) -> str:
    return f"{page}_base"


def _apply(page: str, scenario: Scenario, to_widgets: ToWidgets) -> None:
    st.session_state[_base_key(page)] = scenario.to_json()
    for key, value in to_widgets(scenario).items():
        st.session_state[key] = value


def start(page: str, book, to_widgets: ToWidgets, marker: str) -> Scenario:
    """The scenario the page's widgets edit. On the page's first run in a session (its `marker` widget has no
    state yet) the widgets are set from the link's scenario, else the Design page's. A scenario without GPUs
    is returned as it is, widgets untouched: the page says it is about GPU servers."""
    if marker not in st.session_state or _base_key(page) not in st.session_state:
        scenario = read_link("s", scenario_reader(book), "scenario") or current_scenario(book)
        if getattr(scenario, "gpu", None) is None:
            return scenario
        _apply(page, scenario, to_widgets)
    return load_scenario(st.session_state[_base_key(page)], book)


def reset(page: str, book, to_widgets: ToWidgets) -> None:
    """Button callback (runs before the widgets exist, so their values can be set): the Design page's scenario."""
    drop_link("s")
    _apply(page, current_scenario(book), to_widgets)


def publish(scenario: Scenario) -> None:
    """Put the scenario the page shows into the URL."""
    write_link("s", encode(scenario))


def validate(data: dict, book) -> Optional[Scenario]:
    """The widgets' scenario, or None after an st.error naming the field and value."""
    try:
        return load_scenario(data, book)
    except ScenarioError as e:
        st.error(f"These inputs are not valid: {md(e)}")
        return None


# --------------------------------------------------------------------------- cached engine calls

@engine_call(entries=128)
def preprocessing_cached(scenario: Scenario) -> PreprocessingStudy:
    return preprocessing_study(scenario, context())


@engine_call(entries=128)
def rpc_cached(scenario: Scenario) -> RpcStudy:
    return rpc_study(scenario, context())


@engine_call(entries=128)
def cost_cached(scenario: Scenario) -> CostStudy:
    return cost_study(scenario, context())


@engine_call(entries=64)
def defaults_cached(scenario: Scenario) -> dict:
    """engine.studies.cost.cost_defaults (price and power defaults with their sources) for the scenario's hardware."""
    return cost_defaults(scenario, context())
