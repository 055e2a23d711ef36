"""The accelerator seam: which backend builds the accelerator side of a design.

A scenario names its accelerators in exactly one field, named after its backend (`gpu` or `fpga`). The
analytic engine asks that backend, and only it, for what differs between accelerators:

- `side(scenario, book)`: the servers and their batching (an engine.accelerator_side.GpuSide);
- `adapted(scenario)`: the scenario as this accelerator runs it (an FPGA board completes requests its own way);
- `link(scenario, book)`: what the host side needs of it (an engine.accelerator_side.Link).

A third backend is one module with an object like GPU (engine.analytic.gpu) or FPGA (engine.fpga.backend), its
spec field on the Scenario, its checks against the catalogue in engine.validate, and one entry in BACKENDS.
"""

from __future__ import annotations

from typing import Protocol

from engine.accelerator_side import GpuSide, Link
from engine.analytic.gpu import GPU
from engine.fpga.backend import FPGA
from engine.profiles import ProfileBook
from engine.scenario import Scenario


class Accelerator(Protocol):
    name: str

    def side(self, scenario: Scenario, book: ProfileBook) -> GpuSide: ...

    def adapted(self, scenario: Scenario) -> Scenario: ...

    def link(self, scenario: Scenario, book: ProfileBook) -> Link: ...


#: backend name (the Scenario field that selects it) -> the backend
BACKENDS: dict[str, Accelerator] = {"gpu": GPU, "fpga": FPGA}


def backend_of(scenario: Scenario) -> Accelerator:
    """The backend of the one accelerator field the scenario sets (the Scenario allows exactly one)."""
    return next(backend for name, backend in BACKENDS.items() if getattr(scenario, name) is not None)
