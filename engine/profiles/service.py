"""Service time of a model on a GPU partition: measured, published or derived (DESIGN.md section 5).

`ProfileBook` is built once from the store's tables and answers, as pure
computation over them:
- `curve(...)`: the latency curve of a (model, GPU, partition), from its own
  points where they exist, else derived with the slice law from a reference
  partition of the same GPU ('full', else the largest partition with points),
  else, only when asked, from another GPU (labelled cross-GPU);
- `predict(...)`: mean and tail latency, throughput and utilisation of a batch,
  with provenance, the reference and the fit error for derived answers;
- `knee(...)`: Batch_knee and Time_knee by either rule;
- `memory_limit(...)`: the largest batch whose weights + activations fit.

The book reads plain rows (engine.profiles.points), never pandas; `points` and `models` build the tables as
DataFrames for the pages and reports that want them. Its answer models are in engine.profiles.answers, how
they are read off the curves in engine.profiles.batch_answers, its derived and estimated curves in
engine.profiles.derived.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Optional, Union

from engine.catalog import Catalog, Gpu, UnknownNameError
from engine.estimator.estimate import Estimator
from engine.estimator.hardware import HardwareError, partition_sms
from engine.estimator.loo import expected_errors
from engine.profiles import batch_answers
from engine.profiles.answers import Knee, Prediction, batch_provenance
from engine.profiles.curves import Curve, CurveKey, curve_from_points
from engine.profiles.derived import ESTIMATED, estimated_curve, scaled_curve
from engine.profiles.points import (PointRows, ProfileError, at_length, lengths_of, model_value, models_by_name,
                                    only, pick)
from engine.rows import as_records, frame
from engine.seed.records import TABLES
from engine.vocab import KneeRule

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ESTIMATED", "ESTIMATE_LENGTHS", "Knee", "Prediction", "ProfileBook", "ProfileError", "batch_provenance"]

#: input lengths an estimated curve of a variable-length model is computed at, where no other GPU has a profile
ESTIMATE_LENGTHS = {"tokens": (32.0, 64.0, 128.0, 256.0, 384.0, 512.0), "s": (1.0, 2.0, 4.0, 7.0, 10.0, 16.0, 20.0)}

MB_PER_GIB = 1073.741824

#: an Estimator, or what builds it on first use (it reads DataFrames: a book that never estimates never builds it)
EstimatorSource = Union[Estimator, Callable[[], Estimator], None]


def _columns(table: str) -> list[str]:
    return list(TABLES[table][0].model_fields)


class ProfileBook:
    """Latency curves of every model on every partition, from the store's tables."""

    def __init__(self, points, models, catalog: Catalog, estimator: EstimatorSource = None,
                 estimator_models: Optional[frozenset[str]] = None):
        """`points`, `models`: the latency_points and models tables as rows ({column: value} dicts) or DataFrames;
        `estimator`: an Estimator or a function that builds one, with `estimator_models` the models it has cost
        tables for (read from the Estimator itself when it is one)."""
        self._points = PointRows(as_records(points))
        self._models = models_by_name(as_records(models))
        self._frames: dict[str, pd.DataFrame] = {}
        self.catalog = catalog
        self._estimator = estimator
        if isinstance(estimator, Estimator):
            estimator_models = estimator.model_names
        self._estimator_models: frozenset[str] = estimator_models or frozenset()
        # the book is immutable, so curves, knees and input kinds are computed once
        self._curves: dict[tuple, Curve] = {}
        self._knees: dict[tuple, "Knee"] = {}
        self._sources: dict[tuple, tuple[str, str, str, str]] = {}  # _source's answers, by its arguments
        self._fixed: dict[str, bool] = {}
        self._limits: dict[tuple, Optional[int]] = {}
        self._derived: dict[tuple, object] = {}  # derived(): answers worked out from the book's curves
        self.model_names: frozenset[str] = self._points.model_names | self._estimator_models

    @classmethod
    def from_store(cls, store) -> "ProfileBook":
        """The store's tables, read once as rows; the estimator is built when a curve first needs it.

        From a rows snapshot (`rows_in_memory`), the estimator's tables (model_costs, ~3,800 rows, and gpu_specs)
        are decoded only then: until then the book knows just which models have cost tables
        (`store.cost_models()`), so a book that never estimates never reads them. From a Store they are read now,
        as every other table: the estimator may first be built in a forked worker or another process (a search's,
        a rate sweep's), where the Store's DuckDB connection must not be used."""
        points, catalog = store.latency_records(), store.catalog()
        if getattr(store, "rows_in_memory", False):
            def cost_rows() -> tuple[list[dict], list[dict]]:
                return store.records("model_costs"), store.records("gpu_specs")
        else:
            read = store.records("model_costs"), store.records("gpu_specs")

            def cost_rows() -> tuple[list[dict], list[dict]]:
                return read

        def estimator() -> Estimator:
            costs, specs = cost_rows()
            return Estimator(frame(costs, _columns("model_costs")), frame(specs, _columns("gpu_specs")), catalog,
                             frame(points, _columns("latency_points")), loo_error=expected_errors())
        return cls(points, store.records("models"), catalog, estimator, frozenset(store.cost_models()))

    @property
    def points(self) -> pd.DataFrame:
        """The latency points as a DataFrame (built on first use, for pages and reports)."""
        if "points" not in self._frames:
            self._frames["points"] = frame(self._points.records, self._points.columns or _columns("latency_points"))
        return self._frames["points"]

    @property
    def models(self) -> pd.DataFrame:
        """The models table as a DataFrame indexed by name (built on first use, for pages and reports)."""
        if "models" not in self._frames:
            self._frames["models"] = frame(list(self._models.values()), _columns("models")).set_index("name")
        return self._frames["models"]

    @property
    def estimator(self) -> Optional[Estimator]:
        if self._estimator is not None and not isinstance(self._estimator, Estimator):
            self._estimator = self._estimator()
        return self._estimator

    def model_row(self, model: str) -> Optional[dict]:
        """The models table's row of `model` ({column: value}, None for NULL), None where it has none."""
        return self._models.get(model)

    def model_value(self, model: str, column: str, default=None):
        """One column of `model`'s row in the models table; `default` where it has no row or the value is NULL."""
        return model_value(self._models, model, column, default)

    def precisions(self, model: str) -> list[str]:
        """The precisions `model` has latency points at, on any GPU, sorted."""
        return self._points.precisions(model)

    def can_estimate(self, model: str, sku: str) -> bool:
        """Whether the estimator has a cost table for `model` and peak specs for `sku`."""
        return model in self._estimator_models and self.estimator is not None and sku in self.estimator.specs

    # -- partitions ------------------------------------------------------------

    def gpu(self, sku: str) -> Gpu:
        try:
            return self.catalog.gpu(sku)
        except UnknownNameError as e:
            raise ProfileError(str(e)) from None

    def partitions(self, sku: str) -> list[str]:
        gpu = self.gpu(sku)
        return ["full"] + [p.name for p in gpu.profiles]

    def sm_count(self, sku: str, partition: str) -> float:
        """SMs of a partition: 'full', a MIG profile, 'mps:N' (N% of the whole GPU) or 'PROFILE/mps:N'
        (N% of a MIG slice: MPS inside a MIG instance)."""
        gpu = self.gpu(sku)
        try:
            return partition_sms(gpu, partition)[0]
        except HardwareError as e:
            raise ProfileError(str(e)) from None

    def memory_mb(self, sku: str, partition: str) -> float:
        gpu = self.gpu(sku)
        base = partition.rpartition("mps:")[0].rstrip("/") if "mps:" in partition else partition
        if base in ("full", ""):
            return gpu.memory_gb * MB_PER_GIB  # "80GB" boards carry 80 GiB
        return gpu.profile(base).memory_gib * MB_PER_GIB

    def memory_limit(self, model: str, sku: str, partition: str, input_len: Optional[float] = None) -> Optional[int]:
        """Largest batch with weights + batch x activation memory within the partition (None if unknown).

        Activation memory is per sample at the model's reference input, whatever `input_len` is: the
        limit is not scaled with the input length. Remembered (the book is immutable; a search asks ~350 times).
        """
        key = (model, sku, partition, input_len)
        if key not in self._limits:
            self._limits[key] = self._memory_limit(model, sku, partition, input_len)
        return self._limits[key]

    def _memory_limit(self, model: str, sku: str, partition: str, input_len: Optional[float]) -> Optional[int]:
        m = self._models.get(model)
        if m is None:
            if self.can_estimate(model, sku):
                return self.estimator.memory_max_batch(model, sku, partition, "fp16", input_len)
            return None
        free = self.memory_mb(sku, partition) - float(m["weights_mb"])
        if free <= 0:
            return 0
        return int(free // float(m["activation_mb_per_sample"]))

    # -- curves ------------------------------------------------------------------

    def profiled_lengths(self, model: str, sku: str, partition: str, precision: Optional[str]) -> list[float]:
        """The input lengths profiled in the series a (model, GPU, partition, precision) curve is read from, sorted
        (empty for fixed-size inputs)."""
        return self.lengths(model, *self._source(model, sku, partition, precision, None, False))

    def lengths(self, model: str, sku: str, partition: str, precision: str, framework: str) -> list[float]:
        if framework == ESTIMATED:
            return self._estimate_lengths(model)
        return lengths_of(only(self._points.series(model, sku, partition), precision, framework))

    def _measured(self, model, sku, partition, precision, framework, input_len) -> Curve:
        rows = only(self._points.series(model, sku, partition), precision, framework)
        lengths = lengths_of(rows)
        rows = at_length(rows, input_len)
        if not rows:
            what = "input_len is needed for this variable-length model" if input_len is None else \
                f"no points at input_len {input_len:g}"
            raise ProfileError(f"{model} on {sku} {partition}: {what}; profiled lengths: "
                               f"{', '.join(f'{x:g}' for x in lengths) or 'none'}")
        key = CurveKey(model=model, sku=sku, partition=partition, precision=precision, framework=framework,
                       input_len=input_len)
        return curve_from_points(key, rows)

    def _reference_partition(self, model: str, sku: str) -> Optional[str]:
        have = self._points.partitions(model, sku)
        if "full" in have:
            return "full"
        mig = [p for p in have if "mps:" not in p]
        if mig:
            return max(mig, key=lambda p: self.sm_count(sku, p))
        return None

    def _estimate_lengths(self, model: str) -> list[float]:
        """Lengths an estimated curve is computed at: those profiled on any GPU, else a grid in the input's unit."""
        have = self._points.model_lengths(model)
        if have:
            return have
        unit = str(self.model_value(model, "input_unit", "")) if model in self._models else ""
        ref = self.estimator.table(model).ref_len
        return list(ESTIMATE_LENGTHS.get(unit, (ref,) if ref else ()))

    def _source(self, model: str, sku: str, partition: str, precision: Optional[str], framework: Optional[str],
                cross_gpu: bool) -> tuple[str, str, str, str]:
        """Where the curve comes from: (sku, partition, precision, framework) of its own or reference points,
        or of an estimate (framework ESTIMATED) where no points of the model exist on this GPU (remembered: asked
        for every curve and knee)."""
        key = (model, sku, partition, precision, framework, cross_gpu)
        if key not in self._sources:
            self._sources[key] = self._find_source(model, sku, partition, precision, framework, cross_gpu)
        return self._sources[key]

    def _find_source(self, model: str, sku: str, partition: str, precision: Optional[str], framework: Optional[str],
                     cross_gpu: bool) -> tuple[str, str, str, str]:
        """_source, worked out."""
        self.sm_count(sku, partition)  # validates the partition
        if model not in self.model_names:
            raise ProfileError(f"no latency points or cost table for model {model!r}; models: "
                               f"{', '.join(sorted(self.model_names))}")
        estimated = (sku, partition, precision or "fp16", ESTIMATED)
        if framework == ESTIMATED:
            return estimated
        if model not in self._points.model_names:
            return estimated
        src_sku, src_part = sku, partition
        if not self._points.series(model, sku, partition):
            src_part = self._reference_partition(model, sku)
            if src_part is None:
                elsewhere = self._points.skus(model)
                if not cross_gpu and self.can_estimate(model, sku):
                    return estimated
                if not cross_gpu:
                    raise ProfileError(f"no points for {model} on {sku}; points exist on {', '.join(elsewhere)}. "
                                       "Ask for a cross-GPU derivation to scale another GPU's curve by SM count.")
                src_sku = max(elsewhere, key=lambda x: self.gpu(x).sm_count)
                src_part = self._reference_partition(model, src_sku)
        prec, fw = pick(self._points.series(model, src_sku, src_part), precision, framework,
                        f"{model} on {src_sku} {src_part}")
        return src_sku, src_part, prec, fw

    def curve(self, model: str, sku: str, partition: str = "full", precision: Optional[str] = None,
              framework: Optional[str] = None, input_len: Optional[float] = None,
              cross_gpu: bool = False) -> Curve:
        """The latency curve of one series at one profiled input length (None for fixed inputs)."""
        key = (model, sku, partition, precision, framework, input_len, cross_gpu)
        if key not in self._curves:
            self._curves[key] = self._curve(model, sku, partition, precision, framework, input_len, cross_gpu)
        return self._curves[key]

    def _curve(self, model, sku, partition, precision, framework, input_len, cross_gpu) -> Curve:
        ref_sku, ref_part, prec, fw = self._source(model, sku, partition, precision, framework, cross_gpu)
        if (precision, framework) != (prec, fw):  # the curve of the precision and framework picked: one curve, not two
            return self.curve(model, sku, partition, prec, fw, input_len, cross_gpu)
        key = CurveKey(model=model, sku=sku, partition=partition, precision=prec, framework=fw, input_len=input_len)
        if fw == ESTIMATED:
            return estimated_curve(self.estimator, key, self.memory_limit(model, sku, partition, input_len))
        if input_len is not None and input_len not in self.lengths(model, ref_sku, ref_part, prec, fw):
            raise ProfileError(f"{model} was not profiled at input length {input_len:g} on {ref_sku} {ref_part}; "
                               f"lengths: {', '.join(f'{l:g}' for l in self.lengths(model, ref_sku, ref_part, prec, fw))}")
        ref = self._measured(model, ref_sku, ref_part, prec, fw, input_len)
        if (ref_sku, ref_part) == (sku, partition):
            return ref
        s = self.sm_count(sku, partition) / self.sm_count(ref_sku, ref_part)
        return scaled_curve(ref, key, s, self.memory_limit(model, sku, partition, input_len),
                            lambda: self.memory_mb(sku, partition), cross_gpu=ref_sku != sku)

    def derived(self, key: tuple, make):
        """make(), remembered under `key` for the life of this (immutable) book: what callers work out from its
        curves alone (e.g. a partition's service tables, engine.analytic.gpu), once per key instead of once per
        design. make()'s answer is shared: it must not be changed."""
        if key not in self._derived:
            self._derived[key] = make()
        return self._derived[key]

    # -- answers (engine.profiles.batch_answers) -----------------------------------

    def is_fixed_input(self, model: str) -> bool:
        if model not in self._fixed:
            self._fixed[model] = self._is_fixed_input(model)
        return self._fixed[model]

    def _is_fixed_input(self, model: str) -> bool:
        if model not in self._points.model_names:
            if model not in self.model_names:
                return True  # an unknown model: the curve lookup names it and lists the known ones
            if model in self._models:
                return str(self._models[model]["input_kind"]) != "variable"
            return self.estimator is None or self.estimator.table(model).ref_len is None
        return self._points.fixed_input(model)

    def predict(self, model: str, sku: str, partition: str, batch: int, input_len: Optional[float] = None,
                precision: Optional[str] = None, framework: Optional[str] = None,
                cross_gpu: bool = False) -> Prediction:
        """Mean/tail latency, throughput and utilisation of one batch, with provenance."""
        return batch_answers.predict(self, model, sku, partition, batch, input_len, precision, framework, cross_gpu)

    def batch_time(self, model: str, sku: str, partition: str, lengths, **kw) -> float:
        """Mean service time (s) of a batch of variable-length inputs: it costs as its longest member."""
        lengths = list(lengths)
        if not lengths:
            raise ProfileError("a batch needs at least one input")
        return self.predict(model, sku, partition, len(lengths), input_len=max(lengths), **kw).mean_s

    def knee(self, model: str, sku: str, partition: str, rule: KneeRule | str = KneeRule.UTILIZATION,
             threshold: float = 0.8, percentile: int = 95, input_len: Optional[float] = None,
             precision: Optional[str] = None, framework: Optional[str] = None, cross_gpu: bool = False) -> Knee:
        """Batch_knee and Time_knee of one curve by the named rule (see engine.profiles.knee); remembered."""
        key = (model, sku, partition, str(rule), threshold, percentile, input_len, precision, framework, cross_gpu)
        if key not in self._knees:
            self._knees[key] = batch_answers.knee(self, model, sku, partition, rule, threshold, percentile,
                                                  input_len, precision, framework, cross_gpu)
        return self._knees[key]
