"""The engine's vocabulary: every fixed set of names a Scenario field takes, and the other StrEnums (knee rules,
cost bases, partitioning policies, the seed rows' kinds), in one leaf module.

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


class CpuAudioPipeline(StrEnum):
    """Which CPU audio pipeline prices CPU preprocessing of audio (engine.stages.preprocess): the published decode
    and mel rows of preprocessing_points, or PREBA's Librosa baseline (PREBA Sec 5; engine.analytic.librosa_fit)."""
    PUBLISHED = "published"
    LIBROSA = "librosa"


#: the preprocessing devices a server can have; NONE is PREBA's ideal (inputs arrive preprocessed), which nothing
#: deploys: a reference line beside them, not a candidate, unless someone asks for it
DEPLOYABLE_PREPROCESSING = (PreprocessDevice.CPU, PreprocessDevice.DPU, PreprocessDevice.GPU)


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


# the profiles, the cost and partitioning pages, and the seed rows

class KneeRule(StrEnum):
    UTILIZATION = "utilization"
    CURVE = "curve"


class SlaLimitKind(StrEnum):
    """What holds a design's SLA-bounded throughput down (engine.results.SlaLimit)."""

    LATENCY_FLOOR = "latency floor"  # the path's latency without load is (nearly) the SLA already
    SATURATION = "saturation"  # the SLA holds until queueing at the bottleneck stage takes it


class CostBasis(StrEnum):
    """The throughput a design is priced at: one basis for every design that is compared."""

    SLA_BOUNDED = "sla-bounded"  # the largest load whose SLA-percentile latency meets the SLA (the default)
    CAPACITY = "capacity"  # the bottleneck's saturation throughput: PREBA 6.3's like-for-like basis
    OFFERED = "offered-load"  # the scenario's arrival rate, up to capacity


class PartitionPolicy(StrEnum):
    GPU1 = "gpu1"
    GPU2 = "gpu2"
    GPU3 = "gpu3"
    GPU4 = "gpu4"
    GPU7 = "gpu7"
    GPU_MAX = "gpu-max"
    RANDOM = "random"
    PARIS = "paris"


class Provenance(StrEnum):
    """Where a number came from (DESIGN.md section 4)."""

    MEASURED = "measured"  # timed by this project's profilers
    PUBLISHED = "published"  # copied from a cited publication or vendor table
    DERIVED = "derived"  # computed here from other rows (the row says how)


class OpClass(StrEnum):
    """What bounds an operator on a GPU: the estimator fits one efficiency per class (issue 13)."""

    CONV = "conv"  # dense or grouped convolution: tensor-core GEMM
    DEPTHWISE = "depthwise"  # one group per channel: little reuse, near memory-bound
    MATMUL = "matmul"  # linear / GEMM with weights (incl. recurrent gates)
    ATTENTION = "attention"  # activation x activation batched matmul (QK^T, AV): no weights
    MEMORY = "memory"  # elementwise, norm, pool, softmax, embedding lookup, copies


class Domain(StrEnum):
    VISION = "vision"
    SPEECH = "speech"
    NLP = "nlp"


class InputKind(StrEnum):
    FIXED = "fixed"  # one input size (an image at 224x224)
    VARIABLE = "variable"  # cost depends on input length (audio seconds, tokens)


class LoadKind(StrEnum):
    """What a load-latency sweep varies (Triton perf_analyzer's two load modes)."""

    CONCURRENCY = "concurrency"  # outstanding requests kept in flight
    REQUEST_RATE = "request_rate"  # requests per second offered


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
