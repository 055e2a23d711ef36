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
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict

from engine.catalog import Catalog, Gpu, UnknownNameError
from engine.profiles.curves import Curve, CurveKey, curve_from_points
from engine.profiles.interp import OutOfRange
from engine.profiles.knee import knee_curve, knee_utilization, utilization
from engine.vocab import KneeRule
from engine.profiles.slicelaw import extrapolation_uncertainty, fit_slice_law, is_saturated
from engine.errors import KneepointError
from engine.estimator.estimate import EstimateError, Estimator
from engine.estimator.hardware import HardwareError, partition_sms

#: the framework name of an estimated curve (engine.estimator): no serving stack timed it
ESTIMATED = "estimate"
#: input lengths an estimated curve of a variable-length model is computed at, where no other GPU has a profile
ESTIMATE_LENGTHS = {"tokens": (32.0, 64.0, 128.0, 256.0, 384.0, 512.0), "s": (1.0, 2.0, 4.0, 7.0, 10.0, 16.0, 20.0)}

PRECISION_PREFERENCE = ("fp16", "amp", "int8", "bf16", "tf32", "fp32")
MB_PER_GIB = 1073.741824


class ProfileError(KneepointError):
    """A profile question that has no answer; the message says why and what exists."""


class Prediction(BaseModel):
    model_config = ConfigDict(frozen=True)

    model: str
    sku: str
    partition: str
    precision: str
    framework: str
    batch: int
    input_len: Optional[float]
    mean_s: float
    tail_s: dict[int, float]
    tail_source: str
    throughput: float  # items/s, batches back to back
    utilization: float  # throughput / saturated throughput of this curve, 0..1
    provenance: str  # measured | published | derived | derived-extrapolated | estimated
    reference: Optional[str]  # 'sku partition precision framework' of the reference curve
    sm_ratio: Optional[float]
    fit_rms_rel_error: Optional[float]
    cross_gpu: bool
    memory_max_batch: Optional[int]
    sources: tuple[str, ...]
    extrapolated: bool = False  # batch beyond the slice law's support (reference max batch x SM share)
    extrapolation_rel_uncertainty: Optional[float] = None
    expected_rel_error: Optional[float] = None  # estimated curves: the leave-one-out median |error|
    note: str = ""


class Knee(BaseModel):
    model_config = ConfigDict(frozen=True)

    rule: KneeRule
    batch: int
    time_s: float  # tail latency at the knee (Time_knee)
    percentile: int
    utilization: float
    threshold: Optional[float]  # utilisation rule only
    provenance: str


def _label(key: CurveKey) -> str:
    return f"{key.sku} {key.partition} {key.precision} {key.framework}"


class ProfileBook:
    """Latency curves of every model on every partition, from the store's tables."""

    def __init__(self, points: pd.DataFrame, models: pd.DataFrame, catalog: Catalog,
                 estimator: Optional[Estimator] = None):
        self.points = points
        self.estimator = estimator
        self.models = models.set_index("name") if "name" in models else models
        self.catalog = catalog
        # the book is immutable, so curves, knees and input kinds are computed once
        self._curves: dict[tuple, Curve] = {}
        self._knees: dict[tuple, "Knee"] = {}
        self._fixed: dict[str, bool] = {}
        self._limits: dict[tuple, Optional[int]] = {}
        self._by_series: Optional[dict[tuple, pd.DataFrame]] = None  # the points of each (model, sku, partition)
        self.model_names: frozenset[str] = frozenset(points["model"]) | (
            estimator.model_names if estimator is not None else frozenset())

    @classmethod
    def from_store(cls, store) -> "ProfileBook":
        points, catalog = store.latency_points(), store.catalog()  # read once, for the book and its estimator
        return cls(points, store.table("models"), catalog, Estimator.from_store(store, catalog, points))

    def can_estimate(self, model: str, sku: str) -> bool:
        """Whether the estimator has a cost table for `model` and peak specs for `sku`."""
        return self.estimator is not None and model in self.estimator.model_names and sku in self.estimator.specs

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
        if model not in self.models.index:
            if self.can_estimate(model, sku):
                return self.estimator.memory_max_batch(model, sku, partition, "fp16", input_len)
            return None
        m = self.models.loc[model]
        free = self.memory_mb(sku, partition) - float(m["weights_mb"])
        if free <= 0:
            return 0
        return int(free // float(m["activation_mb_per_sample"]))

    # -- curves ------------------------------------------------------------------

    def _series(self, model: str, sku: str, partition: str) -> pd.DataFrame:
        """The points of one (model, GPU, partition), in the table's order (grouped once: a search asks ~50 times,
        each a filter of the whole table)."""
        if self._by_series is None:
            self._by_series = dict(iter(self.points.groupby(["model", "sku", "partition"], sort=False)))
        series = self._by_series.get((model, sku, partition))
        return self.points.iloc[0:0] if series is None else series

    def _pick(self, df: pd.DataFrame, precision: Optional[str], framework: Optional[str],
              where: str) -> tuple[str, str]:
        if precision is not None:
            if precision not in set(df["precision"]):
                raise ProfileError(f"no {precision} points for {where}; precisions: "
                                   f"{', '.join(sorted(set(df['precision'])))}")
            df = df[df["precision"] == precision]
        if framework is not None:
            if framework not in set(df["framework"]):
                raise ProfileError(f"no {framework} points for {where}; frameworks: "
                                   f"{', '.join(sorted(set(df['framework'])))}")
            df = df[df["framework"] == framework]
        sizes = df.groupby(["precision", "framework"]).size().reset_index(name="n")
        sizes["pref"] = sizes["precision"].map(lambda p: PRECISION_PREFERENCE.index(p)
                                               if p in PRECISION_PREFERENCE else 99)
        sizes["single"] = sizes["n"] < 2  # a batch sweep beats a lone point (it can be interpolated and fitted)
        best = sizes.sort_values(["single", "pref", "n"], ascending=[True, True, False]).iloc[0]
        return str(best["precision"]), str(best["framework"])

    def profiled_lengths(self, model: str, sku: str, partition: str, precision: Optional[str]) -> list[float]:
        """The input lengths profiled in the series a (model, GPU, partition, precision) curve is read from, sorted
        (empty for fixed-size inputs)."""
        return self.lengths(model, *self._source(model, sku, partition, precision, None, False))

    def lengths(self, model: str, sku: str, partition: str, precision: str, framework: str) -> list[float]:
        if framework == ESTIMATED:
            return self._estimate_lengths(model)
        df = self._series(model, sku, partition)
        df = df[(df["precision"] == precision) & (df["framework"] == framework)]
        return sorted(float(v) for v in df["input_len"].dropna().unique())

    def _measured(self, model, sku, partition, precision, framework, input_len) -> Curve:
        df = self._series(model, sku, partition)
        df = df[(df["precision"] == precision) & (df["framework"] == framework)]
        lengths = sorted(float(v) for v in df["input_len"].dropna().unique())
        df = df[df["input_len"].isna()] if input_len is None else df[df["input_len"] == input_len]
        if not len(df):
            what = "input_len is needed for this variable-length model" if input_len is None else \
                f"no points at input_len {input_len:g}"
            raise ProfileError(f"{model} on {sku} {partition}: {what}; profiled lengths: "
                               f"{', '.join(f'{x:g}' for x in lengths) or 'none'}")
        key = CurveKey(model=model, sku=sku, partition=partition, precision=precision, framework=framework,
                       input_len=input_len)
        return curve_from_points(key, df)

    def _reference_partition(self, model: str, sku: str) -> Optional[str]:
        have = set(self.points.loc[(self.points["model"] == model) & (self.points["sku"] == sku), "partition"])
        if "full" in have:
            return "full"
        mig = [p for p in have if "mps:" not in p]
        if mig:
            return max(mig, key=lambda p: self.sm_count(sku, p))
        return None

    def _estimate_lengths(self, model: str) -> list[float]:
        """Lengths an estimated curve is computed at: those profiled on any GPU, else a grid in the input's unit."""
        have = sorted(float(v) for v in self.points.loc[self.points["model"] == model, "input_len"].dropna().unique())
        if have:
            return have
        unit = str(self.models.loc[model, "input_unit"]) if model in self.models.index else ""
        ref = self.estimator.table(model).ref_len
        return list(ESTIMATE_LENGTHS.get(unit, (ref,) if ref else ()))

    def _source(self, model: str, sku: str, partition: str, precision: Optional[str], framework: Optional[str],
                cross_gpu: bool) -> tuple[str, str, str, str]:
        """Where the curve comes from: (sku, partition, precision, framework) of its own or reference points,
        or of an estimate (framework ESTIMATED) where no points of the model exist on this GPU."""
        self.sm_count(sku, partition)  # validates the partition
        if model not in self.model_names:
            raise ProfileError(f"no latency points or cost table for model {model!r}; models: "
                               f"{', '.join(sorted(self.model_names))}")
        estimated = (sku, partition, precision or "fp16", ESTIMATED)
        if framework == ESTIMATED:
            return estimated
        if model not in set(self.points["model"]):
            return estimated
        src_sku, src_part = sku, partition
        if not len(self._series(model, sku, partition)):
            src_part = self._reference_partition(model, sku)
            if src_part is None:
                elsewhere = sorted(set(self.points.loc[self.points["model"] == model, "sku"]))
                if not cross_gpu and self.can_estimate(model, sku):
                    return estimated
                if not cross_gpu:
                    raise ProfileError(f"no points for {model} on {sku}; points exist on {', '.join(elsewhere)}. "
                                       "Ask for a cross-GPU derivation to scale another GPU's curve by SM count.")
                src_sku = max(elsewhere, key=lambda x: self.gpu(x).sm_count)
                src_part = self._reference_partition(model, src_sku)
        prec, fw = self._pick(self._series(model, src_sku, src_part), precision, framework,
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
        if fw == ESTIMATED:
            return self._estimated(model, sku, partition, prec, input_len)
        if input_len is not None and input_len not in self.lengths(model, ref_sku, ref_part, prec, fw):
            raise ProfileError(f"{model} was not profiled at input length {input_len:g} on {ref_sku} {ref_part}; "
                               f"lengths: {', '.join(f'{l:g}' for l in self.lengths(model, ref_sku, ref_part, prec, fw))}")
        ref = self._measured(model, ref_sku, ref_part, prec, fw, input_len)
        if (ref_sku, ref_part) == (sku, partition):
            return ref
        s = self.sm_count(sku, partition) / self.sm_count(ref_sku, ref_part)
        try:
            fit = fit_slice_law(ref.batches, ref.mean_s)
        except ValueError as e:  # e.g. a one-point reference: say which curve could not be scaled
            raise ProfileError(f"{model} on {sku} {partition} cannot be derived from {_label(ref.key)}: {e}") from None
        law_top = max(1, math.floor(s * ref.max_batch))  # the law's support: the reference's batches, scaled
        top = law_top
        limit = self.memory_limit(model, sku, partition, input_len)
        if limit is not None:
            if limit < 1:
                raise ProfileError(f"{model} does not fit in {partition} of {sku} "
                                   f"({self.memory_mb(sku, partition):.0f} MB)")
            top = min(top, limit)
        extrapolate = (limit is not None and limit > law_top and is_saturated(fit, ref.batches, ref.mean_s))
        if extrapolate:  # past saturation the law is a straight line: follow it up to the memory limit
            top = limit
        key = CurveKey(model=model, sku=sku, partition=partition, precision=prec, framework=fw, input_len=input_len)
        return Curve(key=key, provenance="derived-extrapolated" if extrapolate else "derived",
                     law_max_batch=law_top if extrapolate else None,
                     extrapolation_rel_uncertainty=extrapolation_uncertainty(fit, ref.batches, ref.mean_s)
                     if extrapolate else None,
                     batches=(1, top), mean_s=(float(fit.t_fixed_s),) * 2,
                     tails_s={}, tail_ratio={q: float(np.median(np.array(v) / np.array(ref.mean_s)))
                                             for q, v in ref.tails_s.items()},
                     sources=ref.sources, reference=ref.key, sm_ratio=s, fit=fit, cross_gpu=ref_sku != sku)

    def _estimated(self, model, sku, partition, precision, input_len) -> Curve:
        """The estimator's curve (engine.estimator), labelled 'estimated' with its expected error."""
        top = self.memory_limit(model, sku, partition, input_len)
        try:
            est = self.estimator.estimate(model, sku, partition, precision, input_len=input_len,
                                          batches=_estimate_batches(top))
        except EstimateError as e:
            raise ProfileError(str(e)) from None
        key = CurveKey(model=model, sku=sku, partition=partition, precision=precision, framework=ESTIMATED,
                       input_len=input_len)
        return Curve(key=key, provenance="estimated", batches=est.batches, mean_s=est.mean_s, tails_s={},
                     sources=("engine.estimator: per-operator roofline calibrated on the store's curves",),
                     expected_rel_error=est.expected_rel_error, note=est.note)

    # -- answers -----------------------------------------------------------------

    def _curves_for_length(self, model, sku, partition, precision, framework, input_len, cross_gpu):
        """The one or two curves bracketing `input_len` and the interpolation weight of the upper one."""
        if self.is_fixed_input(model):
            return [self.curve(model, sku, partition, precision, framework, None, cross_gpu)], 0.0, None
        src_sku, src_part, prec, fw = self._source(model, sku, partition, precision, framework, cross_gpu)
        lengths = self.lengths(model, src_sku, src_part, prec, fw)
        if input_len is None:
            input_len = lengths[len(lengths) // 2]
        if input_len < lengths[0] or input_len > lengths[-1]:
            raise ProfileError(f"input length {input_len:g} is outside the profiled lengths "
                               f"{lengths[0]:g}..{lengths[-1]:g} for {model}")
        hi = next(l for l in lengths if l >= input_len)
        lo = max(l for l in lengths if l <= input_len)
        c_lo = self.curve(model, sku, partition, prec, fw, lo, cross_gpu)
        if hi == lo:
            return [c_lo], 0.0, input_len
        c_hi = self.curve(model, sku, partition, prec, fw, hi, cross_gpu)
        return [c_lo, c_hi], (input_len - lo) / (hi - lo), input_len

    def is_fixed_input(self, model: str) -> bool:
        if model not in self._fixed:
            self._fixed[model] = self._is_fixed_input(model)
        return self._fixed[model]

    def _is_fixed_input(self, model: str) -> bool:
        if model not in set(self.points["model"]):
            if model not in self.model_names:
                return True  # an unknown model: the curve lookup names it and lists the known ones
            if model in self.models.index:
                return str(self.models.loc[model, "input_kind"]) != "variable"
            return self.estimator is None or self.estimator.table(model).ref_len is None
        return self.points.loc[self.points["model"] == model, "input_len"].isna().all()

    def predict(self, model: str, sku: str, partition: str, batch: int, input_len: Optional[float] = None,
                precision: Optional[str] = None, framework: Optional[str] = None,
                cross_gpu: bool = False) -> Prediction:
        """Mean/tail latency, throughput and utilisation of one batch, with provenance."""
        if batch < 1:
            raise ProfileError(f"batch must be >= 1, got {batch}")
        curves, w, length = self._curves_for_length(model, sku, partition, precision, framework, input_len,
                                                    cross_gpu)
        try:
            mean = _blend([c.mean(batch)[0] for c in curves], w)
            tails = {q: _blend([c.tail(batch, q)[0] for c in curves], w) for q in (50, 90, 95, 99)}
            grids = [c.grid(c.law_max_batch) for c in curves]  # utilisation is relative to the law's support
            sat = _blend([float(np.max(c.throughput(g))) for c, g in zip(curves, grids)], w)
        except OutOfRange as e:
            c = curves[0]
            raise ProfileError(f"{e} for {model} on {sku} {partition} ({c.provenance}); "
                               "extrapolation is refused") from None
        c = curves[0]
        return Prediction(
            model=model, sku=sku, partition=partition, precision=c.key.precision, framework=c.key.framework,
            batch=batch, input_len=length, mean_s=mean, tail_s=tails, tail_source=c.tail_source(99),
            throughput=batch / mean, utilization=min(1.0, (batch / mean) / sat),
            provenance=batch_provenance(c, batch),
            reference=_label(c.reference) if c.reference else None, sm_ratio=c.sm_ratio,
            fit_rms_rel_error=c.fit.rms_rel_error if c.fit else None, cross_gpu=c.cross_gpu,
            memory_max_batch=self.memory_limit(model, sku, partition, length), sources=c.sources,
            extrapolated=c.law_max_batch is not None and batch > c.law_max_batch,
            extrapolation_rel_uncertainty=c.extrapolation_rel_uncertainty,
            expected_rel_error=c.expected_rel_error, note=c.note)

    def batch_time(self, model: str, sku: str, partition: str, lengths, **kw) -> float:
        """Mean service time (s) of a batch of variable-length inputs: it costs as its longest member."""
        lengths = list(lengths)
        if not lengths:
            raise ProfileError("a batch needs at least one input")
        return self.predict(model, sku, partition, len(lengths), input_len=max(lengths), **kw).mean_s

    def knee(self, model: str, sku: str, partition: str, rule: KneeRule | str = KneeRule.UTILIZATION,
             threshold: float = 0.8, percentile: int = 95, input_len: Optional[float] = None,
             precision: Optional[str] = None, framework: Optional[str] = None, cross_gpu: bool = False) -> Knee:
        """Batch_knee and Time_knee of one curve by the named rule (see engine.profiles.knee)."""
        key = (model, sku, partition, str(rule), threshold, percentile, input_len, precision, framework, cross_gpu)
        if key not in self._knees:
            self._knees[key] = self._knee(model, sku, partition, rule, threshold, percentile, input_len, precision,
                                          framework, cross_gpu)
        return self._knees[key]

    def _knee(self, model, sku, partition, rule, threshold, percentile, input_len, precision, framework,
              cross_gpu) -> Knee:
        try:
            rule = KneeRule(rule)
        except ValueError:
            raise ProfileError(f"{rule!r} is not a knee rule; valid: {', '.join(r.value for r in KneeRule)}") from None
        curves, w, _ = self._curves_for_length(model, sku, partition, precision, framework, input_len, cross_gpu)
        c = curves[0]
        grid = c.grid(self.memory_limit(model, sku, partition, input_len))
        for cv in curves:  # the knee is a latency choice on the law's support, never on extrapolated batches
            if cv.law_max_batch is not None:
                grid = grid[grid <= cv.law_max_batch]
        for other in curves[1:]:
            grid = grid[grid <= other.max_batch]
        if c.fit is None:  # a measured knee is a measured batch size, never a largest batch whose throughput falls
            grid = np.array([b for b in c.batches if b in set(grid)
                             and not (any(cv.falling_top for cv in curves) and b == c.max_batch)])
        x = _blend([cv.throughput(grid) for cv in curves], w)
        y = _blend([cv.tail(grid, percentile) for cv in curves], w)
        i = knee_utilization(grid, x, threshold) if rule == KneeRule.UTILIZATION else knee_curve(x, y)
        return Knee(rule=rule, batch=int(grid[i]), time_s=float(y[i]), percentile=percentile,
                    utilization=float(utilization(x)[i]),
                    threshold=threshold if rule == KneeRule.UTILIZATION else None,
                    provenance=batch_provenance(c, int(grid[i])))


def _estimate_batches(top: Optional[int]) -> list[int]:
    """Every batch up to 64, then powers of two, up to the memory limit (1024 at most): the knee search and the
    batching policies read integer batches, and log-batch interpolation fills in between the powers."""
    hi = 1024 if top is None else max(1, min(top, 1024))
    dense = list(range(1, min(hi, 64) + 1))
    return dense + [b for b in (128, 256, 512, 1024) if b <= hi] + ([hi] if hi > 64 and hi not in (128, 256, 512, 1024) else [])


def batch_provenance(curve: Curve, batch: int) -> str:
    """A derived curve's answer at one batch: 'derived' on the law's support, 'derived-extrapolated' beyond."""
    if curve.law_max_batch is None:
        return curve.provenance
    return "derived-extrapolated" if batch > curve.law_max_batch else "derived"


def _blend(values, w: float):
    """Linear interpolation between the curves at the two bracketing input lengths."""
    if len(values) == 1:
        return values[0]
    return values[0] * (1 - w) + values[1] * w
