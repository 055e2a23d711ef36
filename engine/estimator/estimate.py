"""Latency curves for any model with a cost table on any GPU partition: the calibrated roofline (issue 13).

`Estimator` holds the cost tables (data/seed/model_costs.csv, plus uploaded ONNX models), the GPU specs
and the latency points it calibrates on. It fits once, on first use (engine.estimator.calibrate), and
answers `estimate(...)`: mean latency at each batch, with the family whose efficiencies it used and the
error to expect (the leave-one-out table, engine.estimator.loo).
"""

import math
from typing import TYPE_CHECKING, Optional, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

from engine.catalog import Catalog, UnknownNameError
from engine.errors import KneepointError
from engine.estimator.calibrate import Calibration, calibrate_cached, harness_key
from engine.estimator.hardware import HardwareError, PartitionSpec, partition_spec
from engine.estimator.loo import expected_errors
from engine.estimator.roofline import OpTable, batch_latency_s, op_table

if TYPE_CHECKING:
    import pandas as pd

#: the batches an estimated curve answers at, up to the partition's memory limit
DEFAULT_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
#: the estimate's expected error where no leave-one-out figure applies: the goal of issue 13 (median |error|
#: of batch-1 latency out of sample); the leave-one-out table replaces it (engine.estimator.loo)
DEFAULT_REL_ERROR = 0.25
MB = 1e6


class EstimateError(KneepointError):
    """A model, GPU, partition or precision the estimator cannot answer for; the message says what exists."""


class Estimate(BaseModel):
    """An estimated latency-vs-batch curve and how it was made."""

    model_config = ConfigDict(frozen=True)

    model: str
    sku: str
    partition: str
    precision: str
    input_len: Optional[float]
    batches: tuple[int, ...]
    mean_s: tuple[float, ...]
    family: str  # the GPU's architecture
    calibrated_on: str  # the family whose efficiencies were used (differs from `family` where none was fitted)
    harness: str
    expected_rel_error: float  # the median |relative error| the leave-one-out table finds for such estimates
    memory_max_batch: Optional[int]

    @property
    def throughput(self) -> tuple[float, ...]:
        return tuple(b / t for b, t in zip(self.batches, self.mean_s))

    @property
    def note(self) -> str:
        borrowed = "" if self.calibrated_on == self.family else \
            f"; no {self.family} curve to calibrate on, so {self.calibrated_on}'s efficiencies are used"
        return (f"estimated from {self.model}'s operator costs and {self.sku}'s peak rates (roofline calibrated on "
                f"the store's curves{borrowed}); expect about ±{self.expected_rel_error:.0%}")


class Estimator:
    """Cost tables, GPU specs and calibration points; answers estimated curves."""

    def __init__(self, costs: "pd.DataFrame", specs: "pd.DataFrame", catalog: Catalog, points: "pd.DataFrame",
                 loo_error: Optional[dict] = None, calibration: Optional[Calibration] = None):
        self.costs = costs
        self.specs = {str(r["sku"]): r for r in specs.to_dict("records")}
        self.catalog = catalog
        self.points = points
        self.loo_error = loo_error or {}
        self._tables: dict[str, OpTable] = {}
        self._calibration = calibration
        self.model_names: frozenset[str] = frozenset(costs["model"]) if len(costs) else frozenset()

    @classmethod
    def from_store(cls, store, catalog: Optional[Catalog] = None,
                   points: Optional["pd.DataFrame"] = None) -> "Estimator":
        """The store's cost tables and specs; `catalog` and `points` (store.catalog(), store.latency_points()) where
        the caller has read them already (ProfileBook.from_store), so a start-up reads each once."""
        return cls(store.table("model_costs"), store.table("gpu_specs"),
                   store.catalog() if catalog is None else catalog,
                   store.latency_points() if points is None else points, loo_error=expected_errors())

    def with_model(self, name: str, rows: Sequence) -> "Estimator":
        """This estimator plus one more model (an uploaded ONNX graph's cost rows); the calibration is shared."""
        import pandas as pd  # heavy (~0.3 s to import): loaded where a DataFrame is made, not by `evaluate`
        extra = pd.DataFrame([r.model_dump() if hasattr(r, "model_dump") else dict(r) for r in rows])
        costs = pd.concat([self.costs[self.costs["model"] != name], extra], ignore_index=True)
        new = Estimator(costs, pd.DataFrame(list(self.specs.values())), self.catalog, self.points, self.loo_error,
                        self._calibration)
        return new

    # -- inputs ------------------------------------------------------------------------------------------

    def table(self, model: str) -> OpTable:
        if model not in self._tables:
            rows = self.costs[self.costs["model"] == model]
            if not len(rows):
                raise EstimateError(f"no cost table for model {model!r}; models with one: "
                                    f"{', '.join(sorted(self.model_names)) or 'none'}")
            self._tables[model] = op_table(model, rows.to_dict("records"))
        return self._tables[model]

    def spec(self, sku: str, partition: str, precision: str) -> PartitionSpec:
        try:
            gpu = self.catalog.gpu(sku)
        except UnknownNameError as e:
            raise EstimateError(str(e)) from None
        if sku not in self.specs:
            raise EstimateError(f"no peak specs for {sku} in gpu_specs.csv; GPUs with specs: "
                                f"{', '.join(sorted(self.specs))}")
        try:
            return partition_spec(gpu, self.specs[sku], partition, precision)
        except HardwareError as e:
            raise EstimateError(str(e)) from None

    @property
    def calibration(self) -> Calibration:
        if self._calibration is None:
            self._calibration = calibrate_cached(*self.calibration_inputs(self.points))
        return self._calibration

    def calibration_inputs(self, points: "pd.DataFrame"):
        """(points with their harness, cost tables, partition specs) for engine.estimator.calibrate."""
        pts = points[points["model"].isin(self.model_names) & points["sku"].isin(self.specs)].copy()
        pts = pts[pts["precision"].isin(("fp16", "amp", "int8", "bf16", "tf32", "fp32"))]
        pts["harness"] = [harness_key(s, f) for s, f in zip(pts["source"], pts["framework"])]
        tables = {m: self.table(m) for m in sorted(set(pts["model"]))}
        specs = {}
        for s, p, q in set(zip(pts["sku"], pts["partition"], pts["precision"])):
            try:
                specs[(s, p, q)] = self.spec(s, p, q)
            except EstimateError:
                continue  # a partition name the catalogue lacks: the point is not calibrated on
        return pts, tables, specs

    # -- answers -----------------------------------------------------------------------------------------

    def memory_max_batch(self, model: str, sku: str, partition: str, precision: str,
                         input_len: Optional[float] = None) -> Optional[int]:
        """Largest batch whose weights and two live activations per operator fit the partition's memory."""
        ops, spec = self.table(model), self.spec(sku, partition, precision)
        gpu = self.catalog.gpu(sku)
        mem = gpu.memory_gb * 1073.741824 * MB if partition.split("/")[0] in ("full",) or \
            partition.startswith("mps:") else gpu.profile(partition.split("/")[0]).memory_gib * 1073.741824 * MB
        r = 1.0 if ops.ref_len is None or input_len is None else input_len / ops.ref_len
        per_item = float(np.max(ops.in_elems * r ** ops.in_len_power + ops.out_elems * r ** ops.out_len_power))
        free = mem - float(ops.weight_elems.sum()) * spec.bytes_per_elem
        if free <= 0:
            return 0
        return int(free // max(per_item * spec.bytes_per_elem, 1.0))

    def estimate(self, model: str, sku: str, partition: str = "full", precision: str = "fp16",
                 batches: Optional[Sequence[int]] = None, input_len: Optional[float] = None,
                 harness: Optional[str] = None) -> Estimate:
        """Estimated mean latency (s) of `model` at each batch on `partition` of `sku` at `precision`."""
        ops, spec = self.table(model), self.spec(sku, partition, precision)
        if ops.ref_len is not None and input_len is None:
            input_len = ops.ref_len
        if input_len is not None and not (math.isfinite(input_len) and input_len > 0):
            raise EstimateError(f"input length must be a positive number, got {input_len}")
        top = self.memory_max_batch(model, sku, partition, precision, input_len)
        if top is not None and top < 1:
            raise EstimateError(f"{model} does not fit in {partition} of {sku} at {precision}")
        if batches is None:
            batches = [b for b in DEFAULT_BATCHES if top is None or b <= top] or [1]
        batches = sorted({int(b) for b in batches})
        if batches[0] < 1:
            raise EstimateError(f"batch sizes must be >= 1, got {batches[0]}")
        cal = self.calibration
        eff, used = cal.efficiency(spec.family)
        har = cal.harness(harness)
        means = tuple(batch_latency_s(ops, spec, eff, har, b, input_len) for b in batches)
        err = self.loo_error.get(spec.family, self.loo_error.get("all", DEFAULT_REL_ERROR))
        return Estimate(model=model, sku=sku, partition=partition, precision=precision, input_len=input_len,
                        batches=tuple(batches), mean_s=means, family=spec.family, calibrated_on=used,
                        harness=harness if harness in cal.harnesses else "median harness",
                        expected_rel_error=float(err), memory_max_batch=top)
