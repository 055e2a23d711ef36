"""Assemble a scenario's stages: RPC path and host CPU, preprocessing, GPU partitions (DESIGN.md section 5).

Host CPU budget: the free cores (HostSpec.free_cores) serve the RPC
path (server SerDes, stack, CPU copies, kernel launches and completion
polling, engine.stages.rpc) and, when preprocessing runs on the CPU, the
preprocessing pool. With `preprocessing.cores` unset the two share the free
cores as one pool, so a saturated CPU starves the slices; with it set, the
preprocessing pool is that many cores and RPC gets the rest. DPU and GPU
decode are their own stages whose host-side driver work is charged to the
RPC/host pool. A query of q items costs q preprocessing items.
"""

from typing import Annotated, Optional

from pydantic import BaseModel, BeforeValidator, ConfigDict, PrivateAttr

from engine.accelerator_side import GpuSide
from engine.analytic.accelerators import backend_of
from engine.analytic.design import Design, prepare, with_host, with_overhead, with_sm_decode
from engine.analytic.rates import gpu_capacity_rps
from engine.policy_rules import rule_for
from engine.profiles import ProfileBook
from engine.rows import as_records, missing
from engine.seed.papers import paper_results
from engine.scenario import Scenario, load_scenario
from engine.stages import StageCost
from engine.stages.librosa import FIT_CLIP_S, FIT_ID, FIT_SCENARIO, LibrosaFit, fit_librosa
from engine.stages.preprocess import CostTable, decode_partitions, preprocess_stage, sm_decode_charges
from engine.stages.rpc import components_for, rpc_path, rpc_serial_executor, rpc_stage
from engine.vocab import CpuAudioPipeline, PreprocessDevice


MAX_MEMO = 200_000  # shared stage costs a context keeps (a 23k-design sweep makes about 30k)

#: a store table as rows ({column: value}, None for NULL; engine.rows); a DataFrame given is turned into rows
Rows = Annotated[list, BeforeValidator(as_records)]


class Context(BaseModel):
    """The data an evaluation reads: the profile book and the store's other tables (as rows: no pandas)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    book: ProfileBook
    preprocessing_points: Rows
    prices_power: Rows
    gpus: Rows
    _memo: dict = PrivateAttr(default_factory=dict)  # stage costs are pure in their inputs: compute once
    _costs: Optional[CostTable] = PrivateAttr(None)  # preprocessing lookups, pure in the table

    def cost_table(self) -> CostTable:
        if self._costs is None:
            self._costs = CostTable(self.preprocessing_points)
        return self._costs

    def fresh(self) -> "Context":
        """The same data (profile book, tables, their lookups) with nothing about any design remembered."""
        c = Context(book=self.book, preprocessing_points=self.preprocessing_points, prices_power=self.prices_power,
                    gpus=self.gpus)
        c._costs = self.cost_table()
        return c

    def memo(self, key: tuple, make):
        memo = self.__pydantic_private__["_memo"]  # direct: pydantic's __getattr__ costs ~1-3 us a call
        if key not in memo:
            value = make()
            if len(memo) >= MAX_MEMO:  # a long-lived server: forget the oldest, stay bounded
                del memo[next(iter(memo))]
            memo[key] = value
            return value
        return memo[key]

    @classmethod
    def from_store(cls, store, book: ProfileBook | None = None) -> "Context":
        """The store's tables; pass `book` to reuse a ProfileBook already built from the same store."""
        return cls(book=book or ProfileBook.from_store(store),
                   preprocessing_points=store.records("preprocessing_points"),
                   prices_power=store.records("prices_power"), gpus=store.records("gpus"))


def _scaled(stage: StageCost, q: float, name: str | None = None) -> StageCost:
    """A per-item stage as seen by a request of q items (q items in sequence on one server)."""
    if q == 1 and name is None:
        return stage
    return StageCost(name=name or stage.name, service_s=stage.service_s * q, fixed_s=stage.fixed_s,
                     servers=stage.servers, scv=stage.scv, capacity_rps=stage.capacity_rps / q,
                     host_cpu_s=stage.host_cpu_s * q,
                     breakdown_s={k: v * (q if k != "pcie" else 1) for k, v in stage.breakdown_s.items()}
                     if not stage.fixed_s else {}, notes=stage.notes)


def build_design(scenario: Scenario, ctx: Context) -> Design:
    """The rate-independent design of a validated scenario.

    The GPU side depends only on the model, GPU, batching and workload shape, and the host side only on
    those plus host, preprocessing and RPC path: both are memoised in the context, so a sweep over a
    design space pays for each distinct part once.
    """
    scenario = backend_of(scenario).adapted(scenario)  # e.g. an FPGA completes as its board does, not as GPUs spin
    accel = scenario.gpu if scenario.fpga is None else scenario.fpga
    gpu_key = ("gpu", scenario.model, scenario.precision, accel.model_dump_json(), scenario.batching,
               scenario.workload.query_size, scenario.workload.input_len, scenario.workload.sla.percentile)
    design0 = ctx.memo(gpu_key, lambda: prepare(scenario, ctx.book))
    rpc_json = scenario.rpc.model_dump_json()
    full_key = ("design", gpu_key, scenario.host, scenario.preprocessing, rpc_json)
    stages, overhead, notes, gpu = ctx.memo(full_key, lambda: _shared_host_side(scenario, ctx, design0, gpu_key,
                                                                               rpc_json))
    return with_host(design0, scenario, stages, overhead, notes, gpu=gpu)


def librosa_fit(ctx: Context) -> LibrosaFit:
    """PREBA's Librosa CPU audio cost (engine.stages.librosa), fitted once per context: the published cores of
    paper_results row FIT_ID over the clips/s this engine gives FIT_SCENARIO's GPUs without preprocessing (its
    GPU capacity, as the preprocessing study's Fig 8 view reads it)."""
    def make() -> LibrosaFit:
        design = build_design(load_scenario(FIT_SCENARIO, ctx.book), ctx)  # no preprocessing: no recursion
        clips = gpu_capacity_rps(design.gpu, design.q_mean, design.q_pmf, design.scheduler) * design.q_mean
        figure = paper_results()[FIT_ID]
        return fit_librosa(figure.value, clips, f"PREBA {figure.where} ({figure.value:g} {figure.unit})", FIT_CLIP_S)
    return ctx.memo(("librosa-fit",), make)


def _shared_host_side(scenario: Scenario, ctx: Context, design0: Design, gpu_key: tuple, rpc_json: str):
    """The host side, shared by every design whose GPU side gives the same batch terms."""
    q, b, t1 = ctx.memo(("batch terms", gpu_key), lambda: _batch_terms(scenario, design0))  # pure in the GPU side
    # only GPU decode depends on the layout, and only on which profiles every GPU has, not where they sit
    decode_on = (_decode_instances(scenario) if scenario.preprocessing.device == PreprocessDevice.GPU else ())
    # the host side depends on the GPU side only through these few numbers, so designs share it widely
    accelerator = backend_of(scenario).link(scenario, ctx.book).name
    host_key = ("host", scenario.model, accelerator, q, b, t1, design0.gpu.input_len, decode_on,
                scenario.host, scenario.preprocessing, rpc_json)
    stages, overhead, notes, per_item = ctx.memo(host_key, lambda: _host_side(scenario, ctx, design0, q, b, t1,
                                                                              decode_on))
    charges = _sm_decode(scenario, ctx, design0, decode_on)  # decode on a slice's SMs is its inference time too
    if per_item > 0:  # a run-to-completion executor: each item's server-side host work is its batch's time too
        charges = {p.name: charges.get(p.name, 0.0) + per_item for p in design0.gpu.partitions}
    gpu = ctx.memo(("gpu+", gpu_key, overhead, tuple(sorted(charges.items()))),
                   lambda: _sharing_answers(ctx, with_sm_decode(with_overhead(design0.gpu, overhead), charges)))
    return stages, overhead, notes, gpu


def _sharing_answers(ctx: Context, gpu: GpuSide) -> GpuSide:
    """The side, remembering its answers (its state at each rate...) with the first side of the same physics this
    context saw (GpuSide.same_physics): a search's MIG layouts of different profiles with the same tables (e.g.
    1g.10gb and 1g.20gb for a small model) then work each rate out once, as twins (engine.search.space) do."""
    seen = ctx.memo(("gpu physics", gpu.physics()), list)  # the sides of this key so far, first of each physics
    first = next((side for side in seen if gpu.same_physics(side)), None)
    if first is None:
        seen.append(gpu)
    else:
        gpu.share_answers_of(first)
    return gpu


def _sm_decode(scenario: Scenario, ctx: Context, design0: Design, decode_on: tuple) -> dict[str, float]:
    """{partition: SM seconds per item} of GPU preprocessing that runs on the partitions' own SMs."""
    if not decode_on or scenario.fpga is not None:
        return {}
    row = ctx.memo(("model", scenario.model), lambda: _model_row(ctx.book, scenario.model))
    audio_s = design0.gpu.input_len if row.get("preprocess") == "audio" else None
    parts = decode_partitions(ctx.book.catalog.gpu(scenario.gpu.sku), decode_on)
    return ctx.memo(("sm-decode", scenario.preprocessing, scenario.model, scenario.gpu.sku, decode_on, audio_s),
                    lambda: sm_decode_charges(scenario.preprocessing, row, ctx.cost_table(), parts, audio_s))


def _decode_instances(scenario: Scenario) -> tuple[str, ...]:
    """The instances of every GPU (profile names; 'full' for a GPU without MIG layout), sorted."""
    g = scenario.gpu
    if g is None:
        return ()
    if g.layouts:
        per = g.layouts
    elif g.layout:
        per = [g.layout] * g.count
    else:
        per = [["full"]] * g.count
    return tuple(sorted(e.split("@")[0] for lay in per for e in lay))


def _batch_terms(scenario: Scenario, design0: Design) -> tuple[float, int, float]:
    """(items per query, requests per batch near capacity, mean batch time there in s, to 3 figures).

    Per-batch host work (launches, completion spin) is shared by a batch's requests: it is priced at
    Batch_max, the batch size near capacity, where the CPU budget matters; rounding lets layouts with
    near-equal batch times share one RPC-path computation.
    """
    q = design0.q_mean
    parts = design0.gpu.partitions
    batched = rule_for(scenario.batching.policy).batches
    b = max(1, round(sum(p.max_batch for p in parts) / len(parts) / q)) if batched else 1
    t1 = _round3(float(sum(p.service(min(b * q, p.max_batch)) for p in parts) / len(parts)))
    return q, b, t1


#: host CPU consumers beside the RPC stage's own (HostCpuUse.cores keys)
PREPROCESSING, PREPROCESSING_DRIVER = "preprocessing", "preprocessing driver"


def _host_side(scenario: Scenario, ctx: Context, design0: Design, q: float, b: int, t1: float, decode_on: tuple):
    """(host stages, per-batch GPU overhead, notes, per-item GPU overhead) of a scenario."""
    book = ctx.book
    link = backend_of(scenario).link(scenario, book)
    model_row = ctx.memo(("model", scenario.model), lambda: _model_row(book, scenario.model))
    free = scenario.host.free_cores
    model_like = ctx.memo(("model_like", scenario.model, link.kernels),
                          lambda: _ModelLike(model_row, link.kernels))
    path = ctx.memo(("path", scenario.rpc.model_dump_json(), scenario.model, link.kernels, t1, link.pcie_gen, b),
                    lambda: rpc_path(scenario.rpc, model_like, t1, link.pcie_gen, batch=b))
    notes: list[str] = []  # the GPU side's notes travel with it (with_host)

    pre_spec = scenario.preprocessing
    audio_s = design0.gpu.input_len if model_row.get("preprocess") == "audio" else None
    cpu_pool_shared = pre_spec.device == PreprocessDevice.CPU and pre_spec.cores is None
    pre_cores = free if cpu_pool_shared else min(pre_spec.cores or 0, free)
    librosa = (librosa_fit(ctx) if pre_spec.device == PreprocessDevice.CPU and audio_s is not None
               and pre_spec.cpu_audio_pipeline == CpuAudioPipeline.LIBROSA and not pre_spec.ms_per_item else None)
    pre = ctx.memo(("pre", pre_spec, scenario.model, pre_cores, free, audio_s, link.name, decode_on),
                   lambda: preprocess_stage(pre_spec, model_row, ctx.cost_table(),
                                            max(pre_cores, 1e-9) if pre_cores else free, audio_s=audio_s,
                                            pcie_gen=link.pcie_gen, partitions=[] if link.decode_gpu is None
                                            else decode_partitions(link.decode_gpu, decode_on), librosa=librosa))
    pre = _scaled(pre, q)
    stages: list[StageCost] = []
    if cpu_pool_shared and pre.service_s > 0:
        # one pool of free cores does RPC work and preprocessing: per request the CPU time of both
        rpc = ctx.memo(("rpc", scenario.rpc.model_dump_json(), scenario.model, link.kernels, t1, link.pcie_gen, free,
                        b),
                       lambda: rpc_stage(scenario.rpc, model_like, t1, link.pcie_gen, cores=free, batch=b))
        cpu_s = rpc.host_cpu_s + pre.host_cpu_s
        stages.append(StageCost(
            name="host_cpu", service_s=rpc.service_s + pre.service_s, fixed_s=rpc.fixed_s, servers=free,
            scv=pre.scv, capacity_rps=min(free / cpu_s, path.capacity_rps),  # cores, or the link / SmartNIC cap
            host_cpu_s=cpu_s, breakdown_s={**rpc.breakdown_s, "preprocess_cpu": pre.service_s},
            host_cpu_parts_s={**rpc.host_cpu_consumers(), PREPROCESSING: pre.host_cpu_s},
            notes=rpc.notes + pre.notes))
    else:
        # a shared pool whose preprocessing costs nothing (a text model) leaves every free core to RPC
        pre_pool = pre_cores if pre_spec.device == PreprocessDevice.CPU and not cpu_pool_shared else 0
        rpc_cores = max(free - pre_pool, 1e-9)
        if rpc_cores < 1:
            notes.append("no host cores left for the RPC path after preprocessing")
        rpc = ctx.memo(("rpc", scenario.rpc.model_dump_json(), scenario.model, link.kernels, t1, link.pcie_gen,
                        rpc_cores, b),
                       lambda: rpc_stage(scenario.rpc, model_like, t1, link.pcie_gen, cores=max(rpc_cores, 1e-9),
                                         batch=b))
        if pre.host_cpu_s and pre_spec.device != PreprocessDevice.CPU:  # DPU/GPU driver work shares RPC cores
            cpu_s = rpc.host_cpu_s + pre.host_cpu_s
            rpc = rpc.model_copy(update={"capacity_rps": min(path.capacity_rps, rpc_cores / cpu_s),
                                         "host_cpu_s": cpu_s, "host_cpu_parts_s": {
                                             **rpc.host_cpu_consumers(), PREPROCESSING_DRIVER: pre.host_cpu_s}})
        stages.append(rpc)
        if pre.service_s > 0 or pre.fixed_s > 0:
            stages.append(pre)
    overhead, per_item = path.gpu_overhead_s, 0.0
    if scenario.fpga is not None:  # an FPGA request is one MMIO command; redirecting it costs ~0 (EIF Sec V-C)
        overhead = 0.0
        notes.append("FPGA: no orchestration overhead on the accelerator (one MMIO command per request, EIF Sec V-C)")
    elif components_for(scenario.rpc).serial_executor:
        stages, per_request, per_batch = _serial_executor(scenario, model_like, link.pcie_gen, stages)
        overhead, per_item = overhead + per_batch, per_request / q
        notes.append(f"serial executor (rpc.components.serial_executor): each batch's server-side RPC work "
                     f"({per_request * 1e6:.1f} us per request + {per_batch * 1e6:.1f} us per batch) runs in series "
                     f"with its GPU work")
    return tuple(stages), overhead, tuple(notes) + tuple(n for s in stages for n in s.notes), per_item


def _serial_executor(scenario: Scenario, model_like, pcie_gen: int, stages: list[StageCost]):
    """(host stages, s per request, s per batch) when one executor runs each batch's server-side RPC work in series
    with its GPU work (engine.stages.rpc.serial_executor_s): that work and the completion latency leave the RPC
    stage's queue and latency for the GPU stage's (its breakdown loses them from server proc, then data movement,
    and completion); the host cores it burns still cap the RPC stage."""
    per_request, per_batch = rpc_serial_executor(scenario.rpc, model_like, pcie_gen)
    out = []
    for st in stages:
        if st.name in ("rpc", "host_cpu"):
            parts = dict(st.breakdown_s)
            moved = st.service_s - parts.get("preprocess_cpu", 0.0)
            done = parts.pop("completion", 0.0)
            left = moved
            for key in ("server_proc", "data_movement"):
                take = min(left, parts.get(key, 0.0))
                parts[key], left = parts.get(key, 0.0) - take, left - take
            st = StageCost(name=st.name, service_s=st.service_s - moved, fixed_s=max(0.0, st.fixed_s - done),
                           servers=st.servers, scv=st.scv, capacity_rps=st.capacity_rps, host_cpu_s=st.host_cpu_s,
                           breakdown_s=parts if left <= 1e-12 else {}, host_cpu_parts_s=st.host_cpu_parts_s,
                           notes=st.notes)
        out.append(st)
    return out, per_request, per_batch


def _round3(x: float) -> float:
    return float(f"{x:.3g}")


def _model_row(book: ProfileBook, model: str) -> dict:
    """The models.csv row ({column: value}, None for NULL; a model with points but no entry gets neutral defaults
    and no preprocessing)."""
    row = book.model_row(model)
    if row is not None:
        return row
    return {"preprocess": "none", "request_bytes": 4096, "response_bytes": 1024, "kernel_count": None}


class _ModelLike:
    """The attributes engine.stages.rpc reads from a models.csv row (`kernels` overrides the kernel count)."""

    def __init__(self, row: dict, kernels: int | None = None):
        self.request_bytes = float(row.get("request_bytes", 4096))
        self.response_bytes = float(row.get("response_bytes", 1024))
        kc = row.get("kernel_count") if kernels is None else kernels
        self.kernel_count = None if missing(kc) else int(kc)


