"""The Scenario: one validated contract for pages, CLI, simulator and reports (schema kneepoint.scenario/1).

A scenario is plain data: model, GPU (MIG layout, GPU% shares, or the whole
GPU) or FPGA boards (EIF, engine.fpga), host, preprocessing, RPC path, batching, scheduler, workload and cost.
`load_scenario(data, book)` validates it once against the catalogue and the
profile store (those checks are engine.validate's); every error names the field path and the bad value, e.g.
`gpu.layout[2]: '5g.20gb' is not a profile of A100-SXM4-40GB; valid: ...`.
Defaults make `{"model": "resnet50", "gpu": {"sku": "A100-SXM4-40GB"}}` valid.
Times are milliseconds in the contract (what people type) and seconds inside the engine.
"""

from __future__ import annotations

import json
import math
from statistics import NormalDist
from typing import Annotated, Literal, Optional

from pydantic import (AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator, ValidationError)
from engine.errors import error_message, excerpt, ScenarioError
from engine.naming import derived_name
from engine.stages.rpc import components_for, RpcComponents
from engine.validate import check_model, validate
from engine.vocab import (BatchingPolicy, Completion, CopyMethod, InputLenKind, Orchestration, PreprocessDevice,
                          QuerySizeKind, RpcPreset, SchedulerPolicy, ServiceHost, ServiceKind, TraceUnit, WorkloadKind)

SCHEMA_ID = "kneepoint.scenario/1"

# Limits, declared once. Every float in the contract is finite (NaN and Infinity, which JSON parsers accept, are
# refused) and bounded, so that nothing absurd reaches round(), math.exp or a queueing formula downstream.
#: longest time in milliseconds (SLA, queue delay, per-item or per-request costs): an hour, beyond any serving path
MAX_MS = 3_600_000.0
#: largest price of one item (server, GPU, card, NIC) in USD: a billion, far above any real part
MAX_USD = 1e9
#: longest period or interval in seconds (diurnal cycle, noise interval): a year
MAX_SECONDS = 31_536_000.0
#: largest |location| of a log-normal in log units: exp(20) is 4.9e8 items or seconds, beyond any query or input
MAX_LOG_LOCATION = 20.0
#: largest scale (sigma) of a log-normal: exp(20 + 5 x 6) stays finite even at six standard deviations
MAX_LOG_SCALE = 5.0
#: largest ELSA weight (alpha, beta): they scale one latency estimate against another, 1000x is already extreme
MAX_WEIGHT = 1000.0
#: largest input length (audio seconds or tokens) and largest image size in megapixels
MAX_INPUT_LENGTH = 1e6
MAX_MEGAPIXELS = 1000.0
#: largest electricity price in USD per kWh: a hundred times any grid tariff
MAX_USD_PER_KWH = 100.0
#: largest number in rpc.components (us, ns, bytes, Gbps): no RPC path cost comes near a billion of its unit
MAX_COMPONENT_VALUE = 1e9
#: most arrival timestamps a scenario carries inline: it travels in links (zlib-compressed), pages' state and
#: saved scenarios, so a trace is a sample of traffic, not a day of it (the default upload row limit is the same)
MAX_TRACE_TIMESTAMPS = 50_000
#: latest timestamp (in trace_unit): Unix-epoch microseconds (about 1.8e15 today) fit, float64 still resolves 0.5
MAX_TIMESTAMP = 4e15
#: highest arrival rate in requests/s (the contract's rate, sweeps, simulated loads): ten million
MAX_RATE_RPS = 1e7
#: most GPU% shares on one GPU: CUDA MPS serves a few dozen clients per GPU, 64 leaves room
MAX_SHARES = 64
#: most entries in a list the contract sizes per partition or per query size (service.mean_ms, query-size table)
MAX_LIST_ITEMS = 4096
#: most FPGA boards, accelerators per board and threads per accelerator: far above EIF's 8 x 6 per board
MAX_FPGA_BOARDS, MAX_FPGA_UNITS = 64, 1024
#: most CPU cores on one host (host.cpu_cores and every core count)
MAX_CORES = 1024
NAME_MAX = 120  # characters in a scenario's name
#: smallest value of a positive number (times, rates, sizes, weights): below it reciprocals and products overflow
#: or vanish (1 / 1e-300 ms is no rate at all) and a diurnal or polling interval would cut a run into billions
MIN_POSITIVE = 1e-9
#: least probability a log-normal query-size distribution must put on 1..max_size items: with less there is
#: nothing left to renormalise and every downstream mean is NaN
MIN_LOGNORMAL_MASS = 1e-9


def _not_vanishing(value: float) -> float:
    if 0 < value < MIN_POSITIVE:  # zero and below are the field's own gt=0 to name
        raise ValueError(f"must be at least {MIN_POSITIVE:g}: smaller values vanish in the model's arithmetic")
    return value


#: the contract's positive float: finite (as every float here), > 0 (a field's own gt=0 says so first), and at least
#: MIN_POSITIVE, so that no time, rate or size is a denormal whose reciprocal overflows
Positive = Annotated[float, AfterValidator(_not_vanishing)]


class _Spec(BaseModel):
    # allow_inf_nan=False: NaN and +-Infinity are refused in every float field of every part (lists included)
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


# --------------------------------------------------------------------------- parts

class GpuSpec(_Spec):
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


class FpgaSpec(_Spec):
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


class HostSpec(_Spec):
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


class PreprocessingSpec(_Spec):
    device: PreprocessDevice = PreprocessDevice.CPU
    cores: Optional[int] = Field(None, ge=1, le=MAX_CORES,
                                 description="CPU cores for preprocessing (default: all free cores)")
    units: int = Field(8, ge=1, le=64, description="DPU compute units (CUs); 8 is one card (engine.stages.preprocess)")
    ms_per_item: Optional[Positive] = Field(None, gt=0, le=MAX_MS, description="override: CPU ms per item per core")
    dpu_cu_latency_ms: Optional[Positive] = Field(None, gt=0, le=MAX_MS, description="override: latency of one item on a CU")
    dpu_ii_ms: Optional[Positive] = Field(None, gt=0, le=MAX_MS, description="override: initiation interval of a CU")
    image_megapixels: Positive = Field(0.37, gt=0, le=MAX_MEGAPIXELS,
                                    description="input JPEG size (ImageNet mean about 0.37 MP)")


class RpcSpec(_Spec):
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
            raise _PathError(f"rpc.components.{err['loc'][0]}", err.get("input"),
                             f"{err['msg']} (got {excerpt(err.get('input'))})") from None
        for name in self.components:  # as parsed (a number may arrive as text): finite and within the limit
            value = getattr(built, name)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and not (
                    math.isfinite(value) and abs(value) <= MAX_COMPONENT_VALUE):
                raise _PathError(f"rpc.components.{name}", value, f"must be a finite number within "
                                 f"+-{MAX_COMPONENT_VALUE:g}, got {excerpt(self.components[name])}")
        return self


class BatchingSpec(_Spec):
    policy: BatchingPolicy = BatchingPolicy.FIXED
    max_batch: Optional[int] = Field(None, ge=1, le=4096, description="Batch_max (default: the knee)")
    max_queue_delay_ms: Optional[float] = Field(None, ge=0, le=MAX_MS,
                                                description="Time_queue (default: Time_knee / partitions)")


class SchedulerSpec(_Spec):
    policy: SchedulerPolicy = SchedulerPolicy.FIFS
    alpha: Positive = Field(1.0, gt=0, le=MAX_WEIGHT)
    beta: Positive = Field(1.0, gt=0, le=MAX_WEIGHT)


#: what a scenario that still names a trace file is told: a scenario arrives from links and pages, so it never
#: names a file on the server; the person who has the trace hands its content over
TRACE_FILE_REFUSED = ("trace_csv is not accepted: a scenario never names a file on the server; upload the trace "
                      "on the Design page (workload 'trace'), or give it to the CLI as `simulate --trace FILE`, "
                      "which put its timestamps inline in workload.arrival.timestamps")


class ArrivalSpec(_Spec):
    """How requests arrive. The analytic engine reads the rate (Poisson); the simulator every kind.

    A trace is carried inline as `timestamps` (at most MAX_TRACE_TIMESTAMPS, finite, >= 0, sorted here);
    it plays at its own mean rate unless a simulation is given a rate, which scales it."""

    kind: WorkloadKind = WorkloadKind.POISSON
    rate_rps: Positive = Field(1000.0, gt=0, le=MAX_RATE_RPS, description="requests per second")
    samples_per_query: int = Field(8, ge=1, le=4096, description="multi-stream: items per query")
    period_s: Positive = Field(60.0, gt=0, le=MAX_SECONDS, description="diurnal: period of the daily cycle (compressed)")
    amplitude: float = Field(0.5, ge=0, le=1, description="diurnal: peak rate = rate x (1 + amplitude)")
    noise_cv: float = Field(0.1, ge=0, le=2, description="diurnal: cv of the multiplicative Gaussian noise")
    noise_interval_s: Positive = Field(1.0, gt=0, le=MAX_SECONDS, description="diurnal: one noise factor per interval")
    timestamps: Optional[list[Annotated[float, Field(ge=0, le=MAX_TIMESTAMP)]]] = Field(
        None, max_length=MAX_TRACE_TIMESTAMPS,
        description="trace: arrival timestamps in trace_unit (from an upload or `simulate --trace`)")
    trace_unit: TraceUnit = "s"

    @model_validator(mode="before")
    @classmethod
    def _no_trace_file(cls, data):
        if isinstance(data, dict) and "trace_csv" in data:
            if data["trace_csv"] is not None:
                raise _PathError("workload.arrival.trace_csv", None, TRACE_FILE_REFUSED)
            data = {k: v for k, v in data.items() if k != "trace_csv"}  # null: written by earlier versions
        return data

    @field_validator("timestamps")
    @classmethod
    def _sorted(cls, v: Optional[list[float]]) -> Optional[list[float]]:
        return None if v is None else sorted(v)

    @model_validator(mode="after")
    def _trace_has_timestamps(self) -> "ArrivalSpec":
        if self.kind == WorkloadKind.TRACE and (self.timestamps is None or len(self.timestamps) < 2
                                                  or self.timestamps[-1] <= self.timestamps[0]):
            raise _PathError("workload.arrival.timestamps", None,
                             "kind 'trace' needs at least two distinct arrival timestamps: upload a trace on the "
                             "Design page or give the CLI `simulate --trace FILE`")
        return self


class QuerySizeSpec(_Spec):
    kind: QuerySizeKind = "fixed"
    size: int = Field(1, ge=1, le=4096, description="items per query (fixed)")
    mu: float = Field(1.0, ge=-MAX_LOG_LOCATION, le=MAX_LOG_LOCATION, description="log-normal location (PARIS section V)")
    sigma: Positive = Field(1.0, gt=0, le=MAX_LOG_SCALE, description="log-normal scale")
    max_size: int = Field(32, ge=1, le=4096, description="truncation: sizes are 1..max_size")
    table: Optional[tuple[tuple[int, Annotated[float, Field(ge=0, le=MAX_USD)]], ...]] = Field(
        None, max_length=MAX_LIST_ITEMS,
        description="table: (items per query, probability) pairs, or {size: probability}; normalised")

    @field_validator("table", mode="before")
    @classmethod
    def _pairs(cls, v):
        if isinstance(v, dict):  # {size: probability}, e.g. from JSON with string keys
            try:
                return tuple(sorted((int(k), float(p)) for k, p in v.items()))
            except (TypeError, ValueError, OverflowError):
                raise ValueError("table: sizes must be integers and probabilities numbers") from None
        return v

    @model_validator(mode="after")
    def _table_ok(self) -> "QuerySizeSpec":
        if self.kind == "table":
            if not self.table:
                raise ValueError("kind 'table' needs table: (items per query, probability) pairs")
            sizes = [k for k, _ in self.table]
            if len(set(sizes)) != len(sizes):
                raise ValueError(f"table lists a query size twice: {sorted(sizes)}")
            bad = [k for k in sizes if not 1 <= k <= 4096]
            if bad:
                raise ValueError(f"table: query sizes must be 1..4096 items, got {bad}")
            if any(not p >= 0 for _, p in self.table) or not sum(p for _, p in self.table) > 0:
                raise ValueError("table: probabilities must be >= 0 and not all 0")
        return self

    @model_validator(mode="after")
    def _lognormal_in_range(self) -> "QuerySizeSpec":
        # sizes are the log-normal's mass on 1..max_size, renormalised (engine.analytic.lengths.query_size_pmf);
        # a distribution lying wholly outside that range leaves nothing to renormalise
        if self.kind == "lognormal":
            normal = NormalDist(self.mu, self.sigma)
            mass = normal.cdf(math.log(self.max_size + 0.5)) - normal.cdf(math.log(0.5))
            if not mass >= MIN_LOGNORMAL_MASS:
                raise ValueError(f"a log-normal with mu {self.mu:g} and sigma {self.sigma:g} (median "
                                 f"{math.exp(self.mu):.3g} items) puts no queries in 1..{self.max_size} items; "
                                 "move mu towards log(size) or widen sigma")
        return self

    @property
    def largest(self) -> int:
        """The most items a query can have."""
        if self.kind == "lognormal":
            return self.max_size
        if self.kind == "table":
            return max(k for k, p in self.table if p > 0)
        return self.size


class InputLenSpec(_Spec):
    kind: InputLenKind = "fixed"
    value: Optional[Positive] = Field(None, gt=0, le=MAX_INPUT_LENGTH,
                                   description="fixed length (audio s or tokens); default: profiled middle")
    low: Positive = Field(1.0, gt=0, le=MAX_INPUT_LENGTH)
    high: Positive = Field(25.0, gt=0, le=MAX_INPUT_LENGTH)
    mu: float = Field(1.9, ge=-MAX_LOG_LOCATION, le=MAX_LOG_LOCATION)
    sigma: Positive = Field(0.5, gt=0, le=MAX_LOG_SCALE)


class SlaSpec(_Spec):
    latency_ms: Optional[Positive] = Field(None, gt=0, le=MAX_MS,
                                        description="default: MLPerf Server bound for the model, else 100")
    percentile: float = Field(99.0, gt=0, lt=100)


class WorkloadSpec(_Spec):
    arrival: ArrivalSpec = ArrivalSpec()
    query_size: QuerySizeSpec = QuerySizeSpec()
    input_len: InputLenSpec = InputLenSpec()
    sla: SlaSpec = SlaSpec()


class CostSpec(_Spec):
    years: Positive = Field(3.0, gt=0, le=20)
    usd_per_kwh: float = Field(0.139, ge=0, le=MAX_USD_PER_KWH, description="PREBA section 6.3 default")
    pue: float = Field(1.5, ge=1, le=3)
    gpu_price_usd: Optional[float] = Field(None, ge=0, le=MAX_USD)
    server_price_usd: Optional[float] = Field(None, ge=0, le=MAX_USD)
    dpu_price_usd: Optional[float] = Field(None, ge=0, le=MAX_USD)
    fpga_price_usd: Optional[float] = Field(None, ge=0, le=MAX_USD, description="per FPGA inference board (fpga scenarios)")
    nic_price_usd: Optional[float] = Field(None, ge=0, le=MAX_USD)


class ServiceSpec(_Spec):
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

class Scenario(_Spec):
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
            raise _PathError("preprocessing.cores", cores,
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


class _PathError(ValueError):
    """Raised inside validators to report a nested field path."""

    def __init__(self, path: str, value, message: str, prefix: Optional[str] = None):
        self.path, self.value = path, value
        text = f"{prefix}; {message}" if prefix else message
        super().__init__(text)


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
    except _PathError as e:
        _model_first(data, book, ())
        raise ScenarioError(f"{e.path}: {e}") from None
    except ValidationError as e:
        first = e.errors()[0]
        _model_first(data, book, first.get("loc", ()))
        ctx_err = (first.get("ctx") or {}).get("error")
        if isinstance(ctx_err, _PathError):
            raise ScenarioError(f"{ctx_err.path}: {ctx_err}") from None
        raise ScenarioError(_format(first)) from None
    return scenario if book is None else validate(scenario, book)


def scenario_schema() -> dict:
    """JSON schema of the scenario contract."""
    return Scenario.model_json_schema(by_alias=True)
