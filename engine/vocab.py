"""The scenario's vocabulary: every fixed set of names a Scenario field takes, in one leaf module.

StrEnums for the choices code branches on (devices, presets, policies, workload and service kinds) and
Literal aliases for the smaller sets the contract only checks. This module imports nothing of the engine, so
every package (the Scenario, the stages, the backends, the simulator) may use it without an import cycle.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal


class PreprocessDevice(StrEnum):
    CPU = "cpu"
    DPU = "dpu"
    GPU = "gpu"
    NONE = "none"


class RpcPreset(StrEnum):
    GRPC = "grpc"
    GRPC_BYPASS = "grpc-bypass"
    LYNX_SNIC = "lynx-snic"
    SPLITRPC_PNIC = "splitrpc-pnic"
    SPLITRPC_SNIC = "splitrpc-snic"
    LOCAL = "local"


class BatchingPolicy(StrEnum):
    NONE = "none"
    FIXED = "fixed"
    PREBA = "preba"
    WORK_CONSERVING = "work-conserving"


class SchedulerPolicy(StrEnum):
    FIFS = "fifs"
    ELSA = "elsa"
    ROUND_ROBIN = "round-robin"
    JSQ = "jsq"


class WorkloadKind(StrEnum):
    """Arrival processes (engine.sim.workload describes each)."""

    POISSON = "poisson"
    MLPERF_SERVER = "mlperf-server"
    OFFLINE = "offline"
    SINGLE_STREAM = "single-stream"
    MULTI_STREAM = "multi-stream"
    DIURNAL = "diurnal"
    TRACE = "trace"


class ServiceKind(StrEnum):
    DETERMINISTIC = "deterministic"
    EXPONENTIAL = "exponential"
    LOGNORMAL = "lognormal"


#: the RPC path's choices (engine.stages.rpc): network stack, host-to-device copy, who launches, how completion is seen
Stack = Literal["kernel", "bypass", "smartnic", "none"]
CopyMethod = Literal["cudamemcpy", "gpu-dma", "direct"]
Orchestration = Literal["cpu", "cpu-graphs", "gpu"]
Completion = Literal["blocking", "callback", "polling", "spin"]

#: the unit of a trace's arrival timestamps
TraceUnit = Literal["s", "ms", "us"]
#: items per query: one size, a log-normal, or a table of (size, probability)
QuerySizeKind = Literal["fixed", "lognormal", "table"]
#: input length (audio seconds or tokens) of variable-length models
InputLenKind = Literal["fixed", "uniform", "lognormal"]
#: a synthetic service distribution keeps the model's host stages or drops them
ServiceHost = Literal["model", "none"]
