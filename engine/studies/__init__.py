"""What the Preprocessing, RPC and Cost pages show, computed by the analytic engine (no Streamlit here).

Each module has one entry point, `<page>_view(scenario, ctx)`, that returns a frozen result model the page
renders with its engine.charts module. This package's helpers derive validated variants of a scenario.
"""

from __future__ import annotations

import copy

from engine.scenario import Scenario, ScenarioError, load_scenario
from engine.analytic.pipeline import _model_row  # one definition of the fallback, not a copy


def variant(scenario: Scenario, book, changes: dict) -> Scenario:
    """`scenario` with fields replaced by dotted path (e.g. {"preprocessing.device": "dpu"}), validated again."""
    data = copy.deepcopy(scenario.model_dump(mode="json", by_alias=True))
    for path, value in changes.items():
        *head, last = path.split(".")
        node = data
        for key in head:
            node = node.setdefault(key, {})
        node[last] = value
    return load_scenario(data, book)


def require_gpu(scenario: Scenario) -> None:
    """These views model GPU servers; a scenario without GPUs (e.g. an FPGA backend) is refused plainly."""
    if getattr(scenario, "gpu", None) is None:
        raise ScenarioError(f"scenario {scenario.name!r} has no GPUs: this view models GPU inference servers")


def model_row(book, model: str) -> dict:
    """The models.csv row exactly as the analytic engine prices it (defaults for a model without a row)."""
    return _model_row(book, model)
