"""PARIS: how many instances of each GPU partition size to deploy (PARIS/ELSA seed, Sec IV-B, Algorithm 1).

Step A (lines 6-9): MaxBatch_knee B_k of each partition size k is the smallest batch whose
utilisation reaches the threshold (0.8 in the seed); utilisation is given, or taken as
throughput (items/s) over the largest throughput of that partition; knees may also be given.
Step B (lines 10-16): partitions sorted by size take consecutive batch ranges (B_{k-1}, B_k], the
n-th smallest range going to the n-th smallest partition, and
    R_k = sum over b in range k of Dist(b) / Throughput(k, b)
with Throughput in queries/s: R_k is the number of instances of k needed per query/s offered
(the Figure 8 example: 20 queries of batch 1 at 40 queries/s need 0.5 instances).
Step C (lines 17-26): C = total GPCs / sum_k (GPC_k R_k), N_k = C R_k.

Two choices the pseudo-code leaves open, made explicit here and reported in the result's notes:
- the last (largest) partition's range extends to the largest batch of Dist, so every query
  size has a partition (Algorithm 1 would drop batches above B_K);
- a knee not above the previous partition's leaves that partition an empty range (R_k = 0)
  rather than letting ranges overlap.
Rounding (not in the seed, which deploys whole instances): see `round_instances`.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from engine.errors import error_message, error_path, KneepointError
from engine.profiles.knee import reaches_knee
from engine.catalog import UnknownNameError
from engine.profiles import ProfileError

#: Algorithm 1 line 8: MaxBatch_knee is where utilisation reaches 80 % (rpc_figures.csv, PARIS seed Sec IV-B)
THRESHOLD = 0.8
#: Sec V: the default log-normal batch sizes range over 1..32 (rpc_figures.csv, PARIS seed Sec V)
MAX_BATCH = 32


class ParisError(KneepointError):
    """PARIS input that cannot be used; the message names the field and the bad value."""


class ParisInput(BaseModel):
    """What Algorithm 1 reads: Dist[b], Util_k[b] (or the knees), Throughput_{k,b}, GPC[k], total GPCs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    dist: dict[int, float] = Field(description="batch-size PDF {batch: probability}; normalised to sum 1")
    throughput: dict[str, dict[int, float]] = Field(description="{partition: {batch: throughput}}")
    throughput_unit: Literal["queries/s", "items/s"] = Field(
        "queries/s", description="Algorithm 1 divides by queries/s; items/s are divided by the batch")
    utilization: Optional[dict[str, dict[int, float]]] = Field(None, description="{partition: {batch: 0..1}}")
    knees: Optional[dict[str, int]] = Field(None, description="{partition: MaxBatch_knee}, instead of utilization")
    gpcs: dict[str, int] = Field(description="{partition: GPCs (compute slices) of one instance}")
    total_gpcs: int = Field(ge=1, description="GPCs available to the partitions (GPCs per GPU x GPUs)")
    threshold: float = Field(THRESHOLD, gt=0, le=1, description="utilisation that defines the knee")

    @field_validator("dist")
    @classmethod
    def _pdf(cls, v: dict[int, float]) -> dict[int, float]:
        if not v:
            raise ValueError("the batch-size distribution is empty; give {batch: probability}")
        for b, p in v.items():
            if b < 1:
                raise ValueError(f"batch sizes start at 1, got {b}")
            if not (math.isfinite(p) and p >= 0):
                raise ValueError(f"probability of batch {b} must be a number >= 0, got {p}")
        total = sum(v.values())
        if total <= 0:
            raise ValueError("the probabilities sum to 0; give at least one positive probability")
        return {b: p / total for b, p in sorted(v.items())}

    @field_validator("throughput")
    @classmethod
    def _throughput(cls, v: dict[str, dict[int, float]]) -> dict[str, dict[int, float]]:
        if not v:
            raise ValueError("no partitions: give {partition: {batch: throughput}}")
        for k, row in v.items():
            if not row:
                raise ValueError(f"{k} has no throughput values")
            for b, t in row.items():
                if b < 1 or not (math.isfinite(t) and t > 0):
                    raise ValueError(f"{k} batch {b}: throughput must be positive at a batch >= 1, got {t}")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> "ParisInput":
        parts = set(self.throughput)
        if set(self.gpcs) != parts:
            missing, extra = sorted(parts - set(self.gpcs)), sorted(set(self.gpcs) - parts)
            raise ValueError("gpcs must name exactly the partitions of throughput"
                             + (f"; missing {', '.join(missing)}" if missing else "")
                             + (f"; no throughput for {', '.join(extra)}" if extra else ""))
        for k, g in self.gpcs.items():
            if g < 1:
                raise ValueError(f"gpcs[{k}] must be >= 1, got {g}")
        if self.knees is not None and self.utilization is not None:
            raise ValueError("give utilization or knees, not both")
        for name, table in (("knees", self.knees), ("utilization", self.utilization)):
            if table is None:
                continue
            if set(table) != parts:
                raise ValueError(f"{name} must name exactly the partitions of throughput "
                                 f"({', '.join(sorted(parts))}), got {', '.join(sorted(table))}")
        for k, b in (self.knees or {}).items():
            if b < 1:
                raise ValueError(f"knees[{k}] must be a batch >= 1, got {b}")
        for k, row in (self.utilization or {}).items():
            if not row:
                raise ValueError(f"utilization[{k}] is empty")
            for b, u in row.items():
                if not 0 <= u <= 1:
                    raise ValueError(f"utilization[{k}][{b}] must be in 0..1, got {u}")
        return self


class ParisResult(BaseModel):
    """Algorithm 1's answer: knees, batch ranges, ratios R_k, instances N_k and their rounding."""

    model_config = ConfigDict(frozen=True)

    order: list[str]  # partitions, smallest first
    knees: dict[str, int]
    knee_source: Literal["given", "utilization", "throughput"]
    ranges: dict[str, Optional[tuple[int, int]]]  # inclusive batch range, None when empty
    ratio: dict[str, float]  # R_k: instances per query/s offered
    scale: float  # C = total GPCs / sum_k GPC_k R_k
    instances: dict[str, float]  # N_k = C R_k
    instances_rounded: dict[str, int]
    gpcs_used: int
    total_gpcs: int
    notes: list[str]


def load_paris_input(data: dict | ParisInput) -> ParisInput:
    """Validate PARIS input (e.g. parsed JSON); ParisError names the field and the bad value."""
    if isinstance(data, ParisInput):
        return data
    if not isinstance(data, dict):
        raise ParisError(f"PARIS input is a JSON object, got {type(data).__name__}")
    try:
        return ParisInput.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        path, msg = error_path(err), error_message(err)
        got = err.get("input")
        shown = "" if isinstance(got, dict) or not path else f" (got {got!r})"
        raise ParisError(f"{path}: {msg}{shown}" if path else msg) from None


def knee_from_table(table: dict[int, float], threshold: float) -> Optional[int]:
    """Smallest batch whose value reaches `threshold` (Algorithm 1 line 8), None if none does."""
    return next((batch for batch in sorted(table) if reaches_knee(table[batch], threshold)), None)


def items_per_s(inp: ParisInput, k: str) -> dict[int, float]:
    """Throughput of partition k in items/s (queries/s x batch when given in queries/s)."""
    row = inp.throughput[k]
    return dict(row) if inp.throughput_unit == "items/s" else {b: t * b for b, t in row.items()}


def queries_per_s(inp: ParisInput, k: str) -> dict[int, float]:
    """Throughput_{k,b} of Algorithm 1 in queries/s (items/s over the batch when given in items/s)."""
    row = inp.throughput[k]
    return dict(row) if inp.throughput_unit == "queries/s" else {b: t / b for b, t in row.items()}


def step_a_knees(inp: ParisInput, order: list[str]) -> tuple[dict[str, int], str, list[str]]:
    """MaxBatch_knee per partition (Algorithm 1 step A) and where it came from."""
    notes: list[str] = []
    if inp.knees is not None:
        return dict(inp.knees), "given", notes
    source = "utilization" if inp.utilization is not None else "throughput"
    knees = {}
    for k in order:
        if inp.utilization is not None:
            util = inp.utilization[k]
        else:
            items = items_per_s(inp, k)
            top = max(items.values())
            util = {b: t / top for b, t in items.items()}
        b = knee_from_table(util, inp.threshold)
        if b is None:
            b = max(util)
            notes.append(f"{k}: utilisation never reaches {inp.threshold:g}; its knee is its largest batch {b}")
        knees[k] = b
    return knees, source, notes


def step_b_ranges(inp: ParisInput, order: list[str], knees: dict[str, int]
                  ) -> tuple[dict[str, Optional[tuple[int, int]]], list[str]]:
    """Batch ranges (B_{k-1}, B_k], smallest partition first; the last reaches the largest batch."""
    notes: list[str] = []
    ranges: dict[str, Optional[tuple[int, int]]] = {}
    top = max(inp.dist)
    prev = 0
    for i, k in enumerate(order):
        hi = knees[k]
        if i == len(order) - 1 and hi < top:
            if max(hi, prev) < top:
                notes.append(f"{k} (the largest partition) also takes batches {max(hi, prev) + 1}..{top}, "
                             f"above its knee {hi}")
            hi = top
        if hi <= prev:
            ranges[k] = None
            notes.append(f"{k}: knee {knees[k]} is not above the previous partition's range end {prev}; "
                         "its range is empty")
            continue
        ranges[k] = (prev + 1, hi)
        prev = hi
    return ranges, notes


def step_b_ratio(inp: ParisInput, order: list[str], ranges: dict[str, Optional[tuple[int, int]]]) -> dict[str, float]:
    """R_k = sum of Dist(b) / Throughput_{k,b} (queries/s) over partition k's range (lines 11-16)."""
    ratio = {}
    for k in order:
        r = 0.0
        rng = ranges[k]
        if rng is not None:
            tput = queries_per_s(inp, k)
            for b in range(rng[0], rng[1] + 1):
                p = inp.dist.get(b, 0.0)
                if p == 0:
                    continue
                if b not in tput:
                    raise ParisError(f"throughput.{k}: no value for batch {b}, which is in its range "
                                     f"{rng[0]}..{rng[1]} (Dist({b}) = {p:.4g}); give every batch of the range")
                r += p / tput[b]
        ratio[k] = r
    return ratio


def round_instances(instances: dict[str, float], gpcs: dict[str, int], total_gpcs: int) -> dict[str, int]:
    """Whole instances from N_k, never using more than `total_gpcs`.

    Largest remainder on GPCs: every partition gets floor(N_k); then each partition with N_k > 0
    but no instance gets one, largest N_k first, while the GPCs left allow it; then, while some
    partition with N_k > 0 still fits in the GPCs left, the one with the largest shortfall
    (N_k - n_k) x GPC_k gets one more (ties: smaller partition, then name). The budget is
    thus filled as far as whole instances allow. The N_k must fit the budget (sum N_k GPC_k <=
    total_gpcs, as PARIS's do).
    """
    need = sum(v * gpcs[k] for k, v in instances.items())
    if need > total_gpcs * (1 + 1e-9):
        raise ParisError(f"the instances need {need:.4g} GPCs, more than total_gpcs = {total_gpcs}")
    n = {k: int(math.floor(v + 1e-9)) for k, v in instances.items()}
    left = total_gpcs - sum(n[k] * gpcs[k] for k in n)
    for k in sorted((k for k, v in instances.items() if v > 0 and n[k] == 0), key=lambda k: (-instances[k], k)):
        if gpcs[k] <= left:
            n[k], left = 1, left - gpcs[k]
    while True:
        fits = [k for k, v in instances.items() if v > 0 and gpcs[k] <= left]
        if not fits:
            return n
        k = max(fits, key=lambda k: ((instances[k] - n[k]) * gpcs[k], -gpcs[k], k))
        n[k] += 1
        left -= gpcs[k]


def paris(data: dict | ParisInput) -> ParisResult:
    """Algorithm 1 of the PARIS/ELSA seed (Sec IV-B) on validated input (a dict is validated first)."""
    inp = load_paris_input(data)
    order = sorted(inp.throughput, key=lambda k: (inp.gpcs[k], k))
    knees, source, notes = step_a_knees(inp, order)
    ranges, more = step_b_ranges(inp, order, knees)
    notes += more
    ratio = step_b_ratio(inp, order, ranges)
    sum_r = sum(inp.gpcs[k] * ratio[k] for k in order)  # lines 18-21
    scale = inp.total_gpcs / sum_r  # line 22; sum_r > 0 since Dist has mass and every batch has a range
    instances = {k: scale * ratio[k] for k in order}  # lines 23-25
    rounded = round_instances(instances, inp.gpcs, inp.total_gpcs)
    used = sum(rounded[k] * inp.gpcs[k] for k in order)
    return ParisResult(order=order, knees={k: knees[k] for k in order}, knee_source=source, ranges=ranges,
                       ratio=ratio, scale=scale, instances=instances, instances_rounded=rounded, gpcs_used=used,
                       total_gpcs=inp.total_gpcs, notes=notes)


# --------------------------------------------------------------------------- inputs from elsewhere


def lognormal_pdf(mu: float, sigma: float, max_batch: int = MAX_BATCH) -> dict[int, float]:
    """Batch-size PDF of a log-normal query size truncated to 1..max_batch (PARIS seed Sec V).

    P(b) is the log-normal mass of [b - 1/2, b + 1/2) (from 1/2 for b = 1), renormalised over
    1..max_batch: the discretisation the analytic engine and the simulator use
    (engine.analytic.lengths.query_size_pmf). mu and sigma are the mean and standard deviation of
    ln(size); sizes are items per query.
    """

    if not (math.isfinite(mu) and math.isfinite(sigma) and sigma > 0):
        raise ParisError(f"log-normal: sigma must be positive and mu finite, got mu={mu}, sigma={sigma}")
    if isinstance(max_batch, bool) or not isinstance(max_batch, int) or max_batch < 1:
        raise ParisError(f"log-normal: max_batch must be a whole number >= 1, got {max_batch!r}")
    nd = NormalDist(mu, sigma)
    edges = [0.5] + [b + 0.5 for b in range(1, max_batch + 1)]
    cdf = [nd.cdf(math.log(x)) for x in edges]
    mass = [hi - lo for lo, hi in zip(cdf, cdf[1:])]
    total = sum(mass)
    if total <= 0:
        raise ParisError(f"log-normal mu={mu}, sigma={sigma} puts no mass on 1..{max_batch}")
    return {b: m / total for b, m in zip(range(1, max_batch + 1), mass)}


def paris_input_from_book(book, model: str, sku: str, partitions: list[str], dist: dict[int, float],
                          total_gpcs: int, threshold: float = THRESHOLD, precision: Optional[str] = None,
                          input_len: Optional[float] = None) -> ParisInput:
    """PARIS input for a model on MIG partitions of one GPU, from the profile store's service-time model.

    Throughput_{k,b} = 1 / mean service time of a batch of b (queries/s; b / mean is items/s) and
    Util_k(b) = the book's utilisation (items/s over the curve's saturated items/s), for b =
    1..max(dist); batches a partition's curve or memory cannot answer are left out (PARIS then
    names them if they fall in that partition's range). GPCs are the profiles' compute slices.
    """
    gpu = book.gpu(sku)
    if not partitions:
        raise ParisError("partitions: give at least one MIG profile")
    batches = range(1, max(int(b) for b in dist) + 1)
    tput: dict[str, dict[int, float]] = {}
    util: dict[str, dict[int, float]] = {}
    gpcs: dict[str, int] = {}
    for k in partitions:
        try:
            gpcs[k] = gpu.profile(k).compute_slices
        except UnknownNameError as e:
            raise ParisError(f"partitions: {e}") from None
        tput[k], util[k] = {}, {}
        for b in batches:
            try:
                p = book.predict(model, sku, k, b, input_len=input_len, precision=precision)
            except ProfileError:
                if b == 1:
                    raise
                break  # beyond the curve or the memory: larger batches cannot be answered either
            tput[k][b] = 1.0 / p.mean_s
            util[k][b] = p.utilization
    return load_paris_input({"dist": dist, "throughput": tput, "throughput_unit": "queries/s",
                             "utilization": util, "gpcs": gpcs, "total_gpcs": total_gpcs,
                             "threshold": threshold})
