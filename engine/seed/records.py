"""Row types of the profile store: one frozen pydantic model per seed table.

Every row carries its provenance (`source`, and `kind` for numbers that can be
measured, published or derived). The store validates each CSV row against these
models before anything is written, so a bad row stops the build with the file,
line and field named.

Units are in the column names (`_ms`, `_mb`, `_w`, `_usd`, ...): the seed tables
keep published numbers in the units they were published in (milliseconds), and
the engine converts to seconds where it computes.
"""

from typing import Optional

from pydantic import Field, field_validator, model_validator

from engine.errors import excerpt
from engine.seed.cost_records import GpuSpecRow, OpCostRow
from engine.seed import row as _row
from engine.seed.row import _Row
from engine.vocab import Domain, InputKind, LoadKind, Provenance


PRECISIONS = ("fp32", "tf32", "fp16", "amp", "int8", "bf16")

# Limits on every row, seed or imported: a value past one is a unit slip, a typo or a hostile file, never a
# measurement. Non-finite numbers (NaN, inf) are refused in every float field (allow_inf_nan=False below).
#: the longest latency or time, ms: one hour; no inference request takes longer (3.6e6 us read as ms would)
MAX_LATENCY_MS = 3_600_000.0
#: the highest throughput, items/s: a billion, ~50,000x the fastest seed row (17,364 items/s)
MAX_THROUGHPUT = 1e9
#: the largest batch (items per batch or per request): the seed's largest is 512
MAX_BATCH = 1_048_576
#: the highest load level: concurrent requests or requests per second
MAX_LOAD = 1e7
#: the largest input size: audio seconds, tokens, or megapixels
MAX_INPUT_SIZE = 1e7
#: how far a throughput may exceed what its batch and shortest latency allow (batch x 1000 / latency_ms, times
#: the concurrency for a concurrency sweep): curated seed rows reach 1.25x (published tables round, and copies
#: overlap compute); 3x leaves room for two overlapping streams, while a unit slip (us as ms) is 1000x
THROUGHPUT_TOLERANCE = 3.0
#: the longest text cell (declared with the base row, engine.seed.row; importers read it from here)
MAX_TEXT_CHARS = _row.MAX_TEXT_CHARS
PERCENTILES = ("p50_ms", "p90_ms", "p95_ms", "p99_ms")


def _check_precision(v: str) -> str:
    if v not in PRECISIONS:
        raise ValueError(f"{excerpt(v)} is not a precision; valid: {', '.join(PRECISIONS)}")
    return v


def _check_percentiles(row) -> None:
    """Given percentiles rise: p50 <= p90 <= p95 <= p99 (the mean may sit anywhere: a skewed tail moves it)."""
    given = [(name, getattr(row, name)) for name in PERCENTILES if getattr(row, name) is not None]
    for (low, low_v), (high, high_v) in zip(given, given[1:]):
        if low_v > high_v:
            raise ValueError(f"{low} {low_v:g} is above {high} {high_v:g}; percentiles must rise "
                             "(p50 <= p90 <= p95 <= p99)")


def _check_throughput(throughput: float, batch: int, latencies: list, in_flight: float, what: str) -> None:
    """Throughput within THROUGHPUT_TOLERANCE of `in_flight` batches of `batch` items per shortest latency."""
    given = [v for v in latencies if v is not None]
    if not given:
        return
    shortest = min(given)
    most = batch * in_flight * 1000.0 / shortest
    if throughput > most * THROUGHPUT_TOLERANCE:
        raise ValueError(f"throughput {throughput:g} items/s is over {THROUGHPUT_TOLERANCE:g}x what {what} "
                         f"and the shortest latency {shortest:g} ms allow ({most:,.6g} items/s); check the units")


class GpuRow(_Row):
    """A GPU SKU: the facts the catalogue needs (MIG off and on)."""

    sku: str = Field(min_length=2)
    mig_capable: bool
    sm_count: int = Field(gt=0, description="SMs with MIG off")
    memory_gb: float = Field(gt=0, description="memory in GB (marketing size)")
    memory_slots: int = Field(ge=0, description="MIG memory slices (0 if not MIG-capable)")
    compute_slices: int = Field(ge=0, description="MIG compute slices (0 if not MIG-capable)")
    tdp_w: float = Field(gt=0)
    idle_w: Optional[float] = Field(default=None, ge=0)
    pcie_gen: int = Field(ge=3, le=6)
    note: str = ""

    @model_validator(mode="after")
    def _mig_slices(self) -> "GpuRow":
        if self.mig_capable and (self.memory_slots <= 0 or self.compute_slices <= 0):
            raise ValueError("a MIG-capable GPU needs memory_slots and compute_slices > 0")
        if not self.mig_capable and (self.memory_slots or self.compute_slices):
            raise ValueError("a GPU without MIG must have memory_slots = compute_slices = 0")
        return self


class MigProfileRow(_Row):
    """A GPU-instance profile (`nvidia-smi mig -lgip`)."""

    sku: str
    profile: str = Field(pattern=r"^\d+g\.\d+gb(\+me)?$")
    gi_profile_id: int = Field(ge=0)
    compute_slices: int = Field(ge=1, le=8)
    memory_slices: int = Field(ge=1, le=8)
    sm_count: int = Field(gt=0)
    memory_gib: float = Field(gt=0)
    nvdec: int = Field(ge=0)
    jpeg: int = Field(ge=0)
    ofa: int = Field(ge=0)
    copy_engines: int = Field(ge=0)
    max_instances: int = Field(ge=1)
    note: str = ""


class MigPlacementRow(_Row):
    """One valid (profile, start memory slot) pair (`nvidia-smi mig -lgipp`)."""

    sku: str
    profile: str
    start: int = Field(ge=0, le=7)
    size: int = Field(ge=1, le=8, description="memory slots occupied")


class ModelRow(_Row):
    """A DNN model served by the system."""

    name: str = Field(min_length=2)
    domain: Domain
    input_kind: InputKind
    input_unit: str = Field(default="", description="unit of input_len for variable inputs: 's' (audio) or 'tokens'")
    request_bytes: int = Field(gt=0)
    response_bytes: int = Field(gt=0)
    kernel_count: Optional[int] = Field(default=None, gt=0)
    params_m: Optional[float] = Field(default=None, gt=0, description="parameters, millions")
    weights_mb: float = Field(gt=0, description="weights at the serving precision, MB")
    activation_mb_per_sample: float = Field(gt=0, description="peak activation memory per batch item, MB")
    preprocess: str = Field(default="none", description="preprocessing pipeline name: image | audio | none")
    note: str = ""

    @model_validator(mode="after")
    def _variable_needs_unit(self) -> "ModelRow":
        if self.input_kind == InputKind.VARIABLE and self.input_unit not in ("s", "tokens"):
            raise ValueError("a variable-length model needs input_unit 's' or 'tokens'")
        return self


class LatencyPointRow(_Row):
    """Latency and throughput of one (model, GPU, partition, precision, batch, input length)."""

    model: str
    sku: str
    partition: str = Field(description="'full', a MIG profile such as '1g.5gb', or 'mps:25'")
    precision: str = Field(description="fp32 | tf32 | fp16 | amp | int8")
    framework: str
    batch: int = Field(ge=1, le=MAX_BATCH)
    input_len: Optional[float] = Field(default=None, gt=0, le=MAX_INPUT_SIZE,
                                       description="audio s or tokens; empty for fixed inputs")
    mean_ms: float = Field(gt=0, le=MAX_LATENCY_MS)
    p50_ms: Optional[float] = Field(default=None, gt=0, le=MAX_LATENCY_MS)
    p90_ms: Optional[float] = Field(default=None, gt=0, le=MAX_LATENCY_MS)
    p95_ms: Optional[float] = Field(default=None, gt=0, le=MAX_LATENCY_MS)
    p99_ms: Optional[float] = Field(default=None, gt=0, le=MAX_LATENCY_MS)
    throughput: float = Field(gt=0, le=MAX_THROUGHPUT, description="items per second")
    kind: Provenance
    measured_on: str = Field(default="", description="date and host for measured rows")
    note: str = ""

    @field_validator("precision")
    @classmethod
    def _precision(cls, v: str) -> str:
        return _check_precision(v)

    @model_validator(mode="after")
    def _consistent(self) -> "LatencyPointRow":
        _check_percentiles(self)
        _check_throughput(self.throughput, self.batch, [self.mean_ms, *(getattr(self, p) for p in PERCENTILES)],
                          1, f"batch {self.batch}")
        return self


class LoadPointRow(_Row):
    """One load level of a load-latency sweep at a fixed client batch size (Triton perf_analyzer).

    All times are per request, in ms (perf_analyzer reports microseconds; importers convert).
    The breakdown is perf_analyzer's: client send, network + server send/receive, server queue,
    server compute input / infer / output, client receive.
    """

    model: str
    sku: str = Field(description="GPU SKU, or 'CPU'")
    partition: str = Field(description="'full', a MIG profile such as '1g.5gb', or 'mps:25'")
    precision: str
    framework: str
    batch: int = Field(ge=1, le=MAX_BATCH, description="client batch size (items per request)")
    load_kind: LoadKind
    load: float = Field(gt=0, le=MAX_LOAD, description="concurrent requests, or requests per second")
    throughput: float = Field(gt=0, le=MAX_THROUGHPUT, description="inferences (items) per second")
    client_send_ms: Optional[float] = Field(default=None, ge=0, le=MAX_LATENCY_MS)
    network_ms: Optional[float] = Field(default=None, ge=0, le=MAX_LATENCY_MS, description="network + server send/recv")
    server_queue_ms: Optional[float] = Field(default=None, ge=0, le=MAX_LATENCY_MS)
    compute_input_ms: Optional[float] = Field(default=None, ge=0, le=MAX_LATENCY_MS)
    compute_infer_ms: Optional[float] = Field(default=None, ge=0, le=MAX_LATENCY_MS)
    compute_output_ms: Optional[float] = Field(default=None, ge=0, le=MAX_LATENCY_MS)
    client_recv_ms: Optional[float] = Field(default=None, ge=0, le=MAX_LATENCY_MS)
    p50_ms: Optional[float] = Field(default=None, gt=0, le=MAX_LATENCY_MS)
    p90_ms: Optional[float] = Field(default=None, gt=0, le=MAX_LATENCY_MS)
    p95_ms: Optional[float] = Field(default=None, gt=0, le=MAX_LATENCY_MS)
    p99_ms: Optional[float] = Field(default=None, gt=0, le=MAX_LATENCY_MS)
    avg_ms: Optional[float] = Field(default=None, gt=0, le=MAX_LATENCY_MS, description="mean end-to-end latency")
    kind: Provenance
    measured_on: str = Field(default="", description="date and host for measured rows")
    note: str = ""

    @field_validator("precision")
    @classmethod
    def _precision(cls, v: str) -> str:
        return _check_precision(v)

    @model_validator(mode="after")
    def _consistent(self) -> "LoadPointRow":
        _check_percentiles(self)
        if self.load_kind == LoadKind.CONCURRENCY:  # Little's law: at most `load` requests in flight
            _check_throughput(self.throughput, self.batch, [self.avg_ms, *(getattr(self, p) for p in PERCENTILES)],
                              self.load, f"batch {self.batch} at concurrency {self.load:g}")
        elif self.throughput > self.batch * self.load * THROUGHPUT_TOLERANCE:  # served at most what was offered
            raise ValueError(f"throughput {self.throughput:g} items/s is over {THROUGHPUT_TOLERANCE:g}x the offered "
                             f"{self.load:g} requests/s of batch {self.batch}; check the units")
        return self


class PreprocessingPointRow(_Row):
    """Cost of preprocessing one item on one device."""

    pipeline: str = Field(description="image | audio")
    step: str = Field(description="what is timed, e.g. 'jpeg_decode', 'decode+resize+crop+normalise', 'mel'")
    device: str = Field(description="cpu | gpu | dpu")
    implementation: str
    input_desc: str
    input_size: float = Field(gt=0, le=MAX_INPUT_SIZE, description="megapixels (image) or seconds (audio)")
    ms_per_item: float = Field(gt=0, le=MAX_LATENCY_MS,
                               description="per item on one core (cpu) or one device (gpu/dpu)")
    kind: Provenance
    measured_on: str = ""
    note: str = ""


class RpcFigureRow(_Row):
    """A published RPC, network or interconnect figure."""

    category: str
    item: str
    setting: str
    metric: str
    value: float
    unit: str
    note: str = ""


class PricePowerRow(_Row):
    """A price, power or electricity figure used by the cost model."""

    item: str
    kind: str = Field(description="tdp_w | idle_w | price_usd | usd_per_gpu_hour | usd_per_kwh")
    value: float = Field(ge=0)
    unit: str
    context: str = ""
    reliability: str = ""
    note: str = ""


#: seed table name -> (row model, primary-key columns). The store builds one
#: table per entry, from data/seed/<name>.csv.
TABLES: dict[str, tuple[type[_Row], tuple[str, ...]]] = {
    "gpus": (GpuRow, ("sku",)),
    "mig_profiles": (MigProfileRow, ("sku", "profile")),
    "mig_placements": (MigPlacementRow, ("sku", "profile", "start")),
    "models": (ModelRow, ("name",)),
    "latency_points": (
        LatencyPointRow,
        ("model", "sku", "partition", "precision", "framework", "batch", "input_len"),
    ),
    "load_points": (
        LoadPointRow,
        ("model", "sku", "partition", "precision", "framework", "batch", "load_kind", "load"),
    ),
    "preprocessing_points": (PreprocessingPointRow, ()),
    "rpc_figures": (RpcFigureRow, ()),
    "prices_power": (PricePowerRow, ()),
}


# the estimator's tables (their row types live in engine.seed.cost_records)
TABLES["model_costs"] = (OpCostRow, ("model", "op"))
TABLES["gpu_specs"] = (GpuSpecRow, ("sku",))
