"""The Scenario: one validated contract for pages, CLI, simulator and reports (schema kneepoint.scenario/1).

A scenario is plain data: model, GPU (MIG layout, GPU% shares, or the whole
GPU) or FPGA boards (EIF, engine.fpga), host, preprocessing, RPC path, batching, scheduler, workload and cost.
`load_scenario(data, book)` validates it once against the catalogue and the
profile store (those checks are engine.validate's); every error names the field path and the bad value, e.g.
`gpu.layout[2]: '5g.20gb' is not a profile of A100-SXM4-40GB; valid: ...`.
Defaults make `{"model": "resnet50", "gpu": {"sku": "A100-SXM4-40GB"}}` valid.
Times are milliseconds in the contract (what people type) and seconds inside the engine.
"""

import json
import math
from typing import Literal, Optional

from pydantic import ConfigDict, Field, field_validator, model_validator, ValidationError

from engine.contract import (MAX_COMPONENT_VALUE, MAX_CORES, MAX_FPGA_BOARDS, MAX_FPGA_UNITS, MAX_LIST_ITEMS,
                             MAX_MEGAPIXELS, MAX_MS, MAX_SHARES, MAX_USD, MAX_USD_PER_KWH, MAX_WEIGHT, MIN_POSITIVE,
                             NAME_MAX, PathError, Positive, Spec)
from engine.errors import error_message, excerpt, ScenarioError
from engine.naming import derived_name
from engine.stages.rpc import components_for, RpcComponents
from engine.validate import check_model, validate
from engine.vocab import (BatchingPolicy, Completion, CopyMethod, CpuAudioPipeline, Orchestration, PreprocessDevice,
                          RpcPreset, SchedulerPolicy, ServiceHost, ServiceKind)
from engine.workload_spec import WorkloadSpec

SCHEMA_ID = "kneepoint.scenario/1"


# --------------------------------------------------------------------------- parts

class GpuSpec(Spec):
    """The accelerators: `count` GPUs of one SKU, each whole, MIG-partitioned, or shared by GPU%."""

    sku: str
    count: int = Field(1, ge=1, le=64)
    layout: Optional[list[str]] = Field(None, description="MIG profiles (optionally profile@start), same on every GPU")
    layouts: Optional[list[list[str]]] = Field(None, description="one MIG layout per GPU")
    shares: Optional[list[float]] = Field(None, max_length=MAX_SHARES, description="GPU% per instance (MPS), same on every GPU")
    mig_contention: Optional[float] = Field(
        None, ge=0.1, le=1.0, description="throughput of a MIG slice with all slices of its GPU busy, relative to "
        "the slice alone (default: the GPU family's published value, data/seed/mig_contention.csv; 1.0 turns "
        "it off)")

    @model_validator(mode="after")
    def _one_partitioning(self) -> "GpuSpec":
        given = [n for n in ("layout", "layouts", "shares") if getattr(self, n) is not None]
        if len(given) > 1:
            raise ValueError(f"give one of layout, layouts or shares, not {' and '.join(given)}")
        if self.layouts is not None and len(self.layouts) != self.count:
            raise ValueError(f"layouts has {len(self.layouts)} entries for count = {self.count} GPUs")
        if self.shares is not None:
            if not self.shares or any(not 0 < s <= 100 for s in self.shares):
                raise ValueError("shares must be GPU% values in (0, 100]")
        return self

    def per_gpu_layouts(self) -> list[Optional[list[str]]]:
        """Each GPU's MIG layout, in GPU order (None: the whole GPU, or GPU% shares)."""
        return list(self.layouts) if self.layouts is not None else [self.layout] * self.count

    def declared_layouts(self) -> list[list[str]]:
        """The MIG layouts as declared: one per GPU (`layouts`), the one every GPU uses (`layout`), or none."""
        return self.layouts or ([self.layout] if self.layout is not None else [])


class FpgaSpec(Spec):
    """FPGA boards serving the model as EIF accelerators (engine.fpga): boards x accelerators x hardware threads.

    Counts default to the board's (EIF prototype: 8 accelerators x 6 threads); sparsity is the fraction of
    zero operands of the models sharing an accelerator (EIF Table I: 50-70 %); ms_per_request is the
    model's time on a dedicated accelerator (default: a batch-1 point stored with the board as sku).
    """

    board: str = Field("intel-pac-a10", description="FPGA board (engine.fpga.model.BOARDS)")
    boards: int = Field(1, ge=1, le=MAX_FPGA_BOARDS)
    accelerators_per_board: Optional[int] = Field(None, ge=1, le=MAX_FPGA_UNITS, description="default: the board's maximum")
    threads_per_accelerator: Optional[int] = Field(None, ge=1, le=MAX_FPGA_UNITS,
                                                   description="default: the board's maximum")
    sparsity: float = Field(0.6, ge=0, lt=1, description="fraction of zero operands (EIF Table I middle level)")
    ms_per_request: Optional[Positive] = Field(None, gt=0, le=MAX_MS, description="per-request time on a dedicated accelerator")
    model_threads: Optional[int] = Field(None, ge=1, le=MAX_FPGA_BOARDS * MAX_FPGA_UNITS * MAX_FPGA_UNITS,
                                         description="threads serving this model (default: all tenants)")


class HostSpec(Spec):
    cpu_cores: int = Field(32, ge=1, le=MAX_CORES, description="host CPU cores")
    cpu_reserved_cores: int = Field(2, ge=0, le=MAX_CORES, description="cores kept for the OS and other work")

    @model_validator(mode="after")
    def _some_left(self) -> "HostSpec":
        if self.cpu_reserved_cores >= self.cpu_cores:
            raise ValueError(f"cpu_reserved_cores ({self.cpu_reserved_cores}) must be below cpu_cores "
                             f"({self.cpu_cores})")
        return self

    @property
    def free_cores(self) -> int:
        """Cores left for serving, shared by CPU preprocessing and the RPC path: cpu_cores - cpu_reserved_cores."""
        return self.cpu_cores - self.cpu_reserved_cores


class PreprocessingSpec(Spec):
    device: PreprocessDevice = PreprocessDevice.CPU
    cores: Optional[int] = Field(None, ge=1, le=MAX_CORES,
                                 description="CPU cores for preprocessing (default: all free cores)")
    units: int = Field(8, ge=1, le=64, description="DPU compute units (CUs); 8 is one card (engine.stages.dpu)")
    ms_per_item: Optional[Positive] = Field(None, gt=0, le=MAX_MS, description="override: CPU ms per item per core")
    cpu_audio_pipeline: CpuAudioPipeline = Field(
        CpuAudioPipeline.PUBLISHED, description="audio on the CPU: 'published' (decode and mel rows of "
        "preprocessing_points) or 'librosa' (PREBA's Librosa baseline, Sec 5, per-core cost fitted on its Fig 8)")
    dpu_cu_latency_ms: Optional[Positive] = Field(None, gt=0, le=MAX_MS, description="override: latency of one item on a CU")
    dpu_ii_ms: Optional[Positive] = Field(None, gt=0, le=MAX_MS, description="override: initiation interval of a CU")
    image_megapixels: Positive = Field(0.37, gt=0, le=MAX_MEGAPIXELS,
                                    description="input JPEG size (ImageNet mean about 0.37 MP)")


class RpcSpec(Spec):
    preset: RpcPreset = RpcPreset.GRPC
    link_gbps: Positive = Field(100.0, gt=0, le=3200)
    copy_method: Optional[CopyMethod] = None
    orchestration: Optional[Orchestration] = None
    completion: Optional[Completion] = None
    polling_interval_us: Optional[Positive] = Field(None, gt=0, le=MAX_MS * 1e3,
                                                 description="event-polling interval (completion = polling)")
    components: dict[str, float | int | str | bool] = Field(
        default_factory=dict, description="any other RPC path parameter by name (engine.stages.rpc.RpcComponents)")

    @field_validator("components")
    @classmethod
    def _known_components(cls, v: dict) -> dict:
        for name in v:
            if name not in RpcComponents.model_fields:
                raise ValueError(f"{excerpt(name)} is not an RPC path component; valid: "
                                 f"{', '.join(RpcComponents.model_fields)}")
        return v

    @model_validator(mode="after")
    def _components_valid(self) -> "RpcSpec":
        try:
            built = components_for(self)
        except ValidationError as e:
            err = e.errors()[0]
            raise PathError(f"rpc.components.{err['loc'][0]}", err.get("input"),
                             f"{err['msg']} (got {excerpt(err.get('input'))})") from None
        for name in self.components:  # as parsed (a number may arrive as text): finite and within the limit
            value = getattr(built, name)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and not (
                    math.isfinite(value) and abs(value) <= MAX_COMPONENT_VALUE):
                raise PathError(f"rpc.components.{name}", value, f"must be a finite number within "
                                 f"+-{MAX_COMPONENT_VALUE:g}, got {excerpt(self.components[name])}")
        return self


class BatchingSpec(Spec):
    policy: BatchingPolicy = BatchingPolicy.FIXED
    max_batch: Optional[int] = Field(None, ge=1, le=4096, description="Batch_max (default: the knee)")
    max_queue_delay_ms: Optional[float] = Field(None, ge=0, le=MAX_MS,
                                                description="Time_queue (default: Time_knee / partitions)")


class SchedulerSpec(Spec):
    policy: SchedulerPolicy = SchedulerPolicy.FIFS
    alpha: Positive = Field(1.0, gt=0, le=MAX_WEIGHT)
    beta: Positive = Field(1.0, gt=0, le=MAX_WEIGHT)


class CostSpec(Spec):
    years: Positive = Field(3.0, gt=0, le=20)
    usd_per_kwh: float = Field(0.139, ge=0, le=MAX_USD_PER_KWH, description="PREBA section 6.3 default")
    pue: float = Field(1.5, ge=1, le=3)
    gpu_price_usd: Optional[float] = Field(None, ge=0, le=MAX_USD)
    server_price_usd: Optional[float] = Field(None, ge=0, le=MAX_USD)
    dpu_price_usd: Optional[float] = Field(None, ge=0, le=MAX_USD)
    fpga_price_usd: Optional[float] = Field(None, ge=0, le=MAX_USD, description="per FPGA inference board (fpga scenarios)")
    nic_price_usd: Optional[float] = Field(None, ge=0, le=MAX_USD)


class ServiceSpec(Spec):
    """A synthetic GPU service-time distribution that replaces the profiled model (for validation
    against queueing theory; engine.sim.service documents how it is sampled)."""

    kind: ServiceKind = ServiceKind.EXPONENTIAL
    mean_ms: float | list[float] = Field(description="mean of a one-item batch, one value or one per partition")
    scv: float = Field(1.0, ge=0, le=100, description="lognormal only: squared coefficient of variation")
    batch_slope: float = Field(0.0, ge=0, le=MAX_WEIGHT, description="mean(b) = mean_ms x (1 + batch_slope x (b - 1))")
    host: ServiceHost = Field("model", description="'none' drops the host stages")

    @field_validator("mean_ms")
    @classmethod
    def _positive(cls, v):
        vals = v if isinstance(v, list) else [v]
        if not vals or len(vals) > MAX_LIST_ITEMS or any(not MIN_POSITIVE <= x <= MAX_MS for x in vals):
            raise ValueError(f"must be in [{MIN_POSITIVE:g}, {MAX_MS:g}] ms (one value or one per partition), "
                             f"got {excerpt(v)}")
        return v


# --------------------------------------------------------------------------- scenario

class Scenario(Spec):
    """One design and its workload. Validate with load_scenario() (needs the catalogue)."""

    schema_: Literal["kneepoint.scenario/1"] = Field(SCHEMA_ID, alias="schema")
    name: Optional[str] = Field(None, min_length=1, max_length=NAME_MAX,
                                description="the design's name; without one, derived from the design (derived_name)")
    model: str
    precision: Optional[str] = None
    gpu: Optional[GpuSpec] = Field(None, description="the GPUs; give exactly one of gpu or fpga")
    fpga: Optional[FpgaSpec] = Field(None, description="FPGA boards (EIF) instead of GPUs")
    host: HostSpec = HostSpec()
    preprocessing: PreprocessingSpec = PreprocessingSpec()
    rpc: RpcSpec = RpcSpec()
    batching: BatchingSpec = BatchingSpec()
    scheduler: SchedulerSpec = SchedulerSpec()
    workload: WorkloadSpec = WorkloadSpec()
    cost: CostSpec = CostSpec()
    service: Optional[ServiceSpec] = Field(None, description="simulator only: a synthetic service distribution")

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    @model_validator(mode="after")
    def _one_backend(self) -> "Scenario":
        if (self.gpu is None) == (self.fpga is None):
            raise ValueError(f"give exactly one of gpu or fpga (got {'both' if self.gpu else 'neither'})")
        return self

    @model_validator(mode="after")
    def _preprocessing_leaves_rpc_cores(self) -> "Scenario":
        # the CPU preprocessing pool and the RPC path split the free cores (engine.analytic.pipeline): a pool of
        # every free core leaves the RPC path none, and the design's capacity would read 0 with bottleneck 'rpc'
        cores = self.preprocessing.cores
        free = self.host.free_cores
        if self.preprocessing.device == PreprocessDevice.CPU and cores is not None and cores >= free:
            raise PathError("preprocessing.cores", cores,
                             f"{cores} leaves no core for the RPC path: the host has {free} free cores "
                             f"(host.cpu_cores {self.host.cpu_cores} - host.cpu_reserved_cores "
                             f"{self.host.cpu_reserved_cores}); give at most {free - 1}, or leave it unset to "
                             "share the free cores")
        return self

    @model_validator(mode="after")
    def _named(self) -> "Scenario":
        """A scenario given no name is named after its design (derived_name): set once, after the checks above (so
        the design it names is whole), while it is validated (the model is frozen afterwards)."""
        if self.name is None:
            self.__dict__["name"] = self.derived_name()
        return self

    def accelerator_label(self) -> str:
        """The accelerators in words, e.g. '2 x A100-SXM4-80GB' or '1 x intel-pac-a10 FPGA'."""
        if self.fpga is not None:
            return f"{self.fpga.boards} x {self.fpga.board} FPGA"
        return f"{self.gpu.count} x {self.gpu.sku}"

    def derived_name(self) -> str:
        """The name the design has until someone types one (engine.naming.derived_name)."""
        return derived_name(self)

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json", by_alias=True), indent=2)


def require_gpu(scenario: Scenario, feature: str) -> GpuSpec:
    """The scenario's GpuSpec, or a ScenarioError saying that `feature` is GPU-only (fpga scenarios)."""
    if scenario.gpu is None:
        raise ScenarioError(f"gpu: {feature} needs GPUs, but this scenario runs on "
                            f"{scenario.accelerator_label()} (fpga)")
    return scenario.gpu


def _format(err: dict) -> str:
    loc = err.get("loc", ())
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    msg = error_message(err)
    if path:
        return f"{path}: {msg} (got {excerpt(err.get('input'))})" if "input" in err and not isinstance(
            err.get("input"), dict) else f"{path}: {msg}"
    return msg


def _model_first(data: dict, book, first_loc: tuple) -> None:
    """An unknown model is reported before any error but one in schema or name (the fields before it), as when
    the profile store was consulted while the fields were validated."""
    if book is not None and tuple(first_loc[:1]) not in (("schema",), ("name",)):
        check_model(data.get("model"), book)


def load_scenario(data: dict | str | Scenario, book=None) -> Scenario:
    """Validate a scenario (dict, JSON text or Scenario) against the catalogue; raise ScenarioError."""
    if isinstance(data, Scenario):
        data = data.model_dump(mode="json", by_alias=True)
    if isinstance(data, (str, bytes)):
        try:
            data = json.loads(data)
        except json.JSONDecodeError as e:
            raise ScenarioError(f"the scenario is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    if not isinstance(data, dict):
        raise ScenarioError(f"a scenario is a JSON object, got {type(data).__name__}")
    try:
        scenario = Scenario.model_validate(data)
    except PathError as e:
        _model_first(data, book, ())
        raise ScenarioError(f"{e.path}: {e}") from None
    except ValidationError as e:
        first = e.errors()[0]
        _model_first(data, book, first.get("loc", ()))
        ctx_err = (first.get("ctx") or {}).get("error")
        if isinstance(ctx_err, PathError):
            raise ScenarioError(f"{ctx_err.path}: {ctx_err}") from None
        raise ScenarioError(_format(first)) from None
    return scenario if book is None else validate(scenario, book)


def scenario_schema() -> dict:
    """JSON schema of the scenario contract."""
    return Scenario.model_json_schema(by_alias=True)
