"""Discrete-event simulator (DESIGN.md section 5): per partition and batcher, simpy processes where they
interact (closed loops; engine.sim.gpu) and plain event loops of the same steps elsewhere (engine.sim.loops);
numpy arrays for workloads, host stages and records. Entry points: simulate(), simulate_design(), sweep()."""

from engine.sim.errors import SimError
from engine.sim.result import SimRecords, SimResult
from engine.sim.run import simulate, simulate_design
from engine.sim.service import ServiceSpec
from engine.sim.workload import SimWorkload
from engine.vocab import ServiceKind, WorkloadKind

__all__ = ["SimError", "SimRecords", "SimResult", "ServiceKind", "ServiceSpec", "SimWorkload", "WorkloadKind",
           "simulate", "simulate_design"]
