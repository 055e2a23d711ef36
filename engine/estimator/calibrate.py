"""Fit the roofline's efficiencies on the latency curves the store has (issue 13).

Per GPU family (volta, turing, ampere, hopper): the fraction of peak each operator class reaches, the
fraction of memory bandwidth, and the per-kernel floors; per serving harness (one published table's
framework and setup, e.g. DLE's TF2 BERT README): the fixed and per-item time it adds to a batch, and the
share of the fusable operators it runs as kernels of their own (engine.estimator.roofline: 0 for a
compiler that fuses them, up to 1 for an eager framework).
All are fitted together by least squares on log(predicted / published mean latency), with a weak prior
(PRIOR_SCALE, in log units) that keeps a parameter no curve constrains near a plausible value; each
curve weighs the same however many batch sizes it has. A family with no curve borrows the efficiencies
of the nearest family that has one (FAMILY_FALLBACK), and says so.
"""

import hashlib
import math
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Mapping, Optional

import numpy as np
from pydantic import BaseModel, ConfigDict

from engine.estimator.hardware import PartitionSpec
from engine.rows import missing
from engine.estimator.roofline import MATRIX_CLASSES, SMOOTH_NORM, Efficiency, Harness, OpTable
from engine.order_stats import median
from engine.vocab import OpClass

if TYPE_CHECKING:
    import pandas as pd

#: a family with no calibration curve uses the efficiencies of the first family here that has one
FAMILY_FALLBACK = {"hopper": ("ampere", "turing", "volta"), "ampere": ("hopper", "turing", "volta"),
                   "turing": ("ampere", "volta", "hopper"), "volta": ("turing", "ampere", "hopper")}
#: classes whose efficiency is fitted (memory ops are bandwidth-bound: their compute efficiency is fixed at 1)
FITTED_CLASSES = (OpClass.CONV, OpClass.DEPTHWISE, OpClass.MATMUL, OpClass.ATTENTION)
_FAM_PARAMS = len(FITTED_CLASSES) + 3  # + memory efficiency, matrix floor, vector floor
#: prior centres: half of peak, 5 us kernels, 1 ms and 10 us of harness time; PRIOR_SCALE: 1 sd = e^2
#: and an unfused share of one half (logit 0: no preference between fusing and eager)
PRIOR = {"efficiency_logit": 0.0, "floor_log": math.log(5e-6), "overhead_log": math.log(1e-3),
         "per_item_log": math.log(1e-5), "unfused_logit": 0.0}
_HAR_PARAMS = 3  # overhead, per item, unfused share
PRIOR_SCALE = 2.0
PRIOR_WEIGHT = 0.1


class CalibrationError(ValueError):
    """No curve to calibrate on."""


class Calibration(BaseModel):
    """The fitted efficiencies by family and time by harness, and how well they fit."""

    model_config = ConfigDict(frozen=True)

    families: dict[str, Efficiency]
    harnesses: dict[str, Harness]
    curves: tuple[str, ...]  # 'model @ sku' of every curve fitted on
    n_points: int
    median_abs_rel_error: float  # in-sample, over the points fitted on

    def efficiency(self, family: str) -> tuple[Efficiency, str]:
        """The family's fitted efficiencies, or the fallback's, with the family they came from."""
        for f in (family,) + FAMILY_FALLBACK.get(family, ()):
            if f in self.families:
                return self.families[f], f
        f = next(iter(self.families))
        return self.families[f], f

    def harness(self, key: Optional[str]) -> Harness:
        """A fitted harness, or the default one (a serving stack the store has never timed)."""
        if key is not None and key in self.harnesses:
            return self.harnesses[key]
        return self.default_harness

    @property
    def default_harness(self) -> Harness:
        """The median of the TensorRT harnesses (the serving stack a design would deploy), else of all."""
        h = [v for k, v in self.harnesses.items() if "tensorrt" in k.split(" | ")[0]] or list(self.harnesses.values())
        return Harness(overhead_s=median([x.overhead_s for x in h]),
                       per_item_s=median([x.per_item_s for x in h]),
                       unfused=median([x.unfused for x in h]))


def harness_key(source: str, framework: str) -> str:
    """The serving harness a published row was timed with: its framework and source table (minus the commit)."""
    doc = source.split(" :: ")[0]
    if "@" in doc and " " in doc:
        doc = doc.split(" ", 1)[1]
    return f"{framework} | {doc}"


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


class _Problem:
    """The flat arrays of every (point, operator) pair, so one evaluation is a handful of numpy calls."""

    def __init__(self, groups: list[tuple[OpTable, PartitionSpec, "pd.DataFrame"]], families: list[str],
                 harnesses: list[str]):
        self.families, self.harnesses = families, harnesses
        cls_idx = {c: i for i, c in enumerate(FITTED_CLASSES)}
        parts = {k: [] for k in ("F", "B", "peak", "bw", "matrix", "cls", "fam", "pt", "fused")}
        obs, batch, harn, weight = [], [], [], []
        for model_ops, spec, pts in groups:
            fam = families.index(spec.family)
            w = 1.0 / math.sqrt(len(pts))
            tables = [(model_ops, False)] + ([(model_ops.fusable, True)] if model_ops.fusable is not None else [])
            for _, p in pts.iterrows():
                b = float(p["batch"])
                for ops, fused in tables:
                    n = ops.n_kernels
                    matrix = np.array([c in MATRIX_CLASSES for c in ops.op_class])
                    r = 1.0 if ops.ref_len is None or missing(p["input_len"]) else float(p["input_len"]) / ops.ref_len
                    parts["F"].append(b * ops.flops * r ** ops.flops_len_power)
                    acts = b * (ops.in_elems * r ** ops.in_len_power + ops.out_elems * r ** ops.out_len_power)
                    parts["B"].append((ops.weight_elems + acts) * spec.bytes_per_elem)
                    parts["peak"].append(np.where(matrix, spec.matrix_flops, spec.vector_flops))
                    parts["bw"].append(np.full(n, spec.memory_bw))
                    parts["matrix"].append(matrix)
                    parts["cls"].append(np.array([cls_idx.get(c, -1) for c in ops.op_class]))
                    parts["fam"].append(np.full(n, fam))
                    parts["pt"].append(np.full(n, len(obs)))
                    parts["fused"].append(np.full(n, fused))
                obs.append(float(p["mean_ms"]) / 1e3)
                batch.append(b)
                harn.append(harnesses.index(p["harness"]))
                weight.append(w)
        for k, v in parts.items():
            setattr(self, k, np.concatenate(v))
        self.obs, self.batch = np.array(obs), np.array(batch)
        self.harn, self.weight = np.array(harn), np.array(weight)
        self.n_fam = len(families)

    def unpack(self, x: np.ndarray):
        fam = x[: self.n_fam * _FAM_PARAMS].reshape(self.n_fam, _FAM_PARAMS)
        har = x[self.n_fam * _FAM_PARAMS:].reshape(len(self.harnesses), _HAR_PARAMS)
        eff = _sigmoid(fam[:, : len(FITTED_CLASSES)])
        return eff, _sigmoid(fam[:, -3]), np.exp(fam[:, -2]), np.exp(fam[:, -1]), np.exp(har[:, 0]), \
            np.exp(har[:, 1]), _sigmoid(har[:, 2])

    def _terms(self, x: np.ndarray):
        eff, mem, floor_m, floor_v, over, item, unfused = self.unpack(x)
        e = np.where(self.cls >= 0, eff[self.fam, np.maximum(self.cls, 0)], 1.0)
        terms = np.stack([self.F / (self.peak * e), self.B / (self.bw * mem[self.fam]),
                          np.where(self.matrix, floor_m[self.fam], floor_v[self.fam])])
        scale = np.maximum(terms.max(axis=0), 1e-30)
        op_s = scale * ((terms / scale) ** SMOOTH_NORM).sum(axis=0) ** (1.0 / SMOOTH_NORM)
        share = np.where(self.fused, unfused[self.harn[self.pt]], 1.0)
        return terms, op_s, share, e, mem, over, item, unfused

    def predict(self, x: np.ndarray) -> np.ndarray:
        _, op_s, share, _, _, over, item, _ = self._terms(x)
        ops = np.bincount(self.pt, weights=op_s * share, minlength=len(self.obs))
        return ops + over[self.harn] + self.batch * item[self.harn]

    def jacobian(self, x: np.ndarray) -> np.ndarray:
        """d residuals / d x, in closed form: d op / d term = (term / op)^(p-1) for the p-norm, and each term is
        a power of one parameter's exp or sigmoid (a finite-difference Jacobian costs one evaluation per
        parameter, which made every fit take seconds)."""
        terms, op_s, share, e, mem, over, item, unfused = self._terms(x)
        n_pts, n_x = len(self.obs), len(x)
        pred = np.bincount(self.pt, weights=op_s * share, minlength=n_pts) + over[self.harn] \
            + self.batch * item[self.harn]
        slope = share * (terms / np.maximum(op_s, 1e-30)) ** (SMOOTH_NORM - 1)  # d (share x op) / d term
        base = self.fam * _FAM_PARAMS
        fitted = self.cls >= 0
        rows, cols, vals = [self.pt[fitted], self.pt, self.pt], [base[fitted] + self.cls[fitted],
                                                                 base + len(FITTED_CLASSES),
                                                                 base + np.where(self.matrix, _FAM_PARAMS - 2,
                                                                                 _FAM_PARAMS - 1)], \
            [(-slope[0] * terms[0] * (1 - e))[fitted], -slope[1] * terms[1] * (1 - mem[self.fam]), slope[2] * terms[2]]
        hbase = self.n_fam * _FAM_PARAMS + self.harn * _HAR_PARAMS
        fused_sum = np.bincount(self.pt, weights=np.where(self.fused, op_s, 0.0), minlength=n_pts)
        pts = np.arange(n_pts)
        u = unfused[self.harn]
        rows += [pts, pts, pts]
        cols += [hbase, hbase + 1, hbase + 2]
        vals += [over[self.harn], self.batch * item[self.harn], fused_sum * u * (1 - u)]
        flat = np.concatenate(rows) * n_x + np.concatenate(cols)
        d_pred = np.bincount(flat, weights=np.concatenate(vals), minlength=n_pts * n_x).reshape(n_pts, n_x)
        fit = d_pred * (self.weight / pred)[:, None]
        return np.vstack([fit, np.eye(n_x) * (PRIOR_WEIGHT / PRIOR_SCALE)])

    def prior(self) -> np.ndarray:
        fam = [PRIOR["efficiency_logit"]] * (len(FITTED_CLASSES) + 1) + [PRIOR["floor_log"]] * 2
        har = [PRIOR["overhead_log"], PRIOR["per_item_log"], PRIOR["unfused_logit"]]
        return np.array(fam * self.n_fam + har * len(self.harnesses))

    def residuals(self, x: np.ndarray) -> np.ndarray:
        fit = self.weight * np.log(self.predict(x) / self.obs)
        return np.concatenate([fit, PRIOR_WEIGHT * (x - self.prior()) / PRIOR_SCALE])


#: fits kept per process, by a digest of their inputs: every ProfileBook over the same data (each test, each app
#: session, each rebuild after an unrelated import) shares one fit instead of spending seconds on its own
_FITS_KEPT = 8
_fits: "OrderedDict[str, Calibration]" = OrderedDict()
_fits_lock = threading.Lock()


def _digest(points: "pd.DataFrame", tables: Mapping[str, OpTable], specs: Mapping[tuple, PartitionSpec]) -> str:
    h = hashlib.sha256()
    cols = ["model", "sku", "partition", "precision", "batch", "input_len", "mean_ms", "harness"]
    import pandas as pd  # heavy (~0.3 s to import): loaded where a DataFrame is made, not by `evaluate`
    h.update(pd.util.hash_pandas_object(points[cols].reset_index(drop=True), index=False).values.tobytes())
    for m in sorted(tables):
        t = tables[m]
        h.update(m.encode())
        for a in (t.flops, t.weight_elems, t.in_elems, t.out_elems, t.flops_len_power):
            h.update(a.tobytes())
        h.update(repr((t.op_class, t.ref_len)).encode())
        if t.fusable is not None:
            h.update(t.fusable.in_elems.tobytes() + t.fusable.out_elems.tobytes() + t.fusable.flops.tobytes())
    for k in sorted(specs):
        h.update(specs[k].model_dump_json().encode())
    return h.hexdigest()


def calibrate_cached(points: "pd.DataFrame", tables: Mapping[str, OpTable],
                     specs: Mapping[tuple, PartitionSpec]) -> Calibration:
    """`calibrate`, answered from the process's last few fits when the inputs are the same."""
    key = _digest(points, tables, specs)
    with _fits_lock:
        if key in _fits:
            _fits.move_to_end(key)
            return _fits[key]
    fit = calibrate(points, tables, specs)
    with _fits_lock:
        _fits[key] = fit
        while len(_fits) > _FITS_KEPT:
            _fits.popitem(last=False)
    return fit


def calibrate(points: "pd.DataFrame", tables: Mapping[str, OpTable], specs: Mapping[tuple, PartitionSpec]) -> Calibration:
    """Fit efficiencies and harness times on `points` (latency-point rows with a `harness` column).

    `tables`: model -> OpTable; `specs`: (sku, partition, precision) -> PartitionSpec. Points whose model has
    no cost table or whose partition has no spec are left out.
    """
    from scipy.optimize import least_squares  # scipy is slow to import; only a fit needs it

    has_spec = np.array([(s, p, q) in specs for s, p, q in zip(points["sku"], points["partition"],
                                                               points["precision"])], dtype=bool)
    keep = points[points["model"].isin(tables).to_numpy() & has_spec]
    if not len(keep):
        raise CalibrationError("no latency curve has both a cost table and GPU specs to calibrate on")
    groups = []
    for (model, sku, part, prec), pts in keep.groupby(["model", "sku", "partition", "precision"], sort=True):
        groups.append((tables[model], specs[(sku, part, prec)], pts))
    families = sorted({g[1].family for g in groups})
    harnesses = sorted(set(keep["harness"]))
    problem = _Problem(groups, families, harnesses)
    fit = least_squares(problem.residuals, problem.prior(), jac=problem.jacobian, method="trf", x_scale=1.0,
                        max_nfev=200)
    eff, mem, floor_m, floor_v, over, item, unfused = problem.unpack(fit.x)
    fams = {f: Efficiency(compute={**{c: float(eff[i, j]) for j, c in enumerate(FITTED_CLASSES)},
                                   OpClass.MEMORY: 1.0},
                          memory=float(mem[i]), matrix_floor_s=float(floor_m[i]), vector_floor_s=float(floor_v[i]))
            for i, f in enumerate(families)}
    hars = {h: Harness(overhead_s=float(over[i]), per_item_s=float(item[i]), unfused=float(unfused[i]))
            for i, h in enumerate(harnesses)}
    rel = np.abs(problem.predict(fit.x) / problem.obs - 1)
    curves = tuple(sorted({f"{m} @ {s}" for m, s in zip(keep["model"], keep["sku"])}))
    return Calibration(families=fams, harnesses=hars, curves=curves, n_points=len(problem.obs),
                       median_abs_rel_error=median(rel))
