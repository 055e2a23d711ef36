"""validate(scenario, book): the checks of a scenario that need the data it names, after its shape is valid.

The Scenario model (engine.scenario) checks what the contract alone can say: types, ranges, one backend, the
RPC path's components. What needs the profile store and the catalogue is checked here, once, where a scenario
is loaded with a book (engine.scenario.load_scenario): the model has a latency profile, the GPU SKU and every
MIG profile and layout exist (or the FPGA board holds the counts asked of it), and the precision is profiled.
Every error is a ScenarioError that names the field path and the bad value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.catalog import LayoutError, UnknownNameError, validate_layout
from engine.errors import ScenarioError, excerpt
from engine.fpga.backend import FpgaSpecError, check as check_fpga

if TYPE_CHECKING:  # the types only: engine.scenario calls validate() from load_scenario
    from engine.profiles import ProfileBook
    from engine.scenario import Scenario


def validate(scenario: Scenario, book: ProfileBook) -> Scenario:
    """The scenario, checked against the profile store and the catalogue of `book`; raises ScenarioError."""
    check_model(scenario.model, book)
    if scenario.fpga is not None:
        try:
            check_fpga(scenario, book)
        except FpgaSpecError as e:
            raise ScenarioError(f"{e.path}: {e}") from None
    else:
        _check_gpus(scenario, book)
    _check_precision(scenario, book)
    return scenario


def check_model(model: object, book: ProfileBook) -> None:
    """A model name (text) that has no latency profile in `book` is refused. load_scenario also asks this of a
    scenario that fails its own validation, since the model field comes before every field but schema and name."""
    if isinstance(model, str) and model not in book.model_names:
        raise ScenarioError(f"model: {excerpt(model)} has no latency profile; valid: "
                            f"{', '.join(sorted(book.model_names))} (got {excerpt(model)})")


def _check_gpus(scenario: Scenario, book: ProfileBook) -> None:
    """The SKU is in the catalogue, and every MIG layout names its profiles and fits the GPU."""
    spec = scenario.gpu
    try:
        gpu = book.catalog.gpu(spec.sku)
    except UnknownNameError as e:
        raise ScenarioError(f"gpu.sku: {e}") from None
    layouts = spec.declared_layouts()
    for gpu_index, layout in enumerate(layouts):
        where = f"gpu.layouts[{gpu_index}]" if spec.layouts else "gpu.layout"
        for position, entry in enumerate(layout):
            try:
                gpu.profile(entry.split("@")[0])
            except UnknownNameError as e:
                reason = str(e).split("; ", 1)[-1] if "valid" in str(e) else str(e)
                raise ScenarioError(f"{where}[{position}]: {excerpt(entry)} is not a profile of {gpu.sku}; "
                                    f"{reason}") from None
        try:
            validate_layout(gpu, layout)
        except LayoutError as e:
            raise ScenarioError(f"{where}: {e}") from None


def _check_precision(scenario: Scenario, book: ProfileBook) -> None:
    if scenario.precision is not None:
        have = book.precisions(scenario.model)
        if scenario.precision not in have:
            raise ScenarioError(f"precision: valid for {scenario.model}: {', '.join(have)}")
