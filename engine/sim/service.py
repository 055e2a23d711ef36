"""Batch service times on the GPU partitions: the profiled model the analytic engine uses, or a
synthetic distribution for validation against queueing theory.

Profiled (default): a batch of b items on partition p takes Partition.service(b) on average (the
design's table, which includes the RPC path's per-batch GPU overhead), times a log-normal jitter
factor of mean 1 whose spread reproduces the curve's tail-to-mean ratio at the SLA percentile (the
published tail where there is one, else engine.profiles.tails' cv of 5 %). Variable-length models
(audio seconds, tokens) price a batch at its longest input: with a Context, the curves at every
profiled length are read and interpolated linearly in length (clamped to the profiled range);
without one, the design's table at its effective length is used for every batch. Batches larger
than a curve are priced at its last batch, as Partition.service does.

Synthetic (`ServiceSpec`): per partition, the mean of a batch of one item (`mean_ms`, one value or
one per partition), growing as mean x (1 + batch_slope x (b - 1)) with the batch; the
distribution is deterministic, exponential, or log-normal with the given scv. `host = "none"`
drops the host stages so the GPU side alone is an M/G/c queue.
"""

from __future__ import annotations

import bisect
import math
from typing import Optional

import numpy as np

from engine.scenario import ServiceKind, ServiceSpec  # noqa: F401  (part of this module's interface)
from engine.sim.errors import SimError
from engine.analytic.gpu import lognormal_sigma_for_ratio, length_rows


def _sigma_for_ratio(ratio: float, z: float) -> float:
    """Log-normal sigma whose p-quantile over the mean is `ratio` (engine.analytic.gpu.lognormal_sigma_for_ratio)."""
    return lognormal_sigma_for_ratio(ratio, z)


class GpuService:
    """Mean (ELSA's lookup table) and sampled batch service times per partition."""

    def __init__(self, design, n_draws: int, rng: np.random.Generator, spec: Optional[ServiceSpec] = None,
                 ctx=None):
        parts = design.gpu.partitions
        self.n = len(parts)
        self.spec = spec
        self.lengths: Optional[list[float]] = None
        self.notes: list[str] = []
        if spec is not None:
            means = spec.mean_ms if isinstance(spec.mean_ms, list) else [spec.mean_ms] * self.n
            if len(means) != self.n:
                raise SimError(f"service.mean_ms: {len(means)} values for {self.n} partitions")
            top = max(p.max_batch for p in parts)
            self.tables = [[m / 1e3 * (1 + spec.batch_slope * b) for b in range(top)] for m in means]
            if spec.kind == ServiceKind.EXPONENTIAL:
                self.draws = rng.standard_exponential(n_draws).tolist()
            elif spec.kind == ServiceKind.LOGNORMAL and spec.scv > 0:
                s2 = math.log1p(spec.scv)
                self.draws = np.exp(math.sqrt(s2) * rng.standard_normal(n_draws) - s2 / 2).tolist()
            else:
                self.draws = None
            self.sigma = [0.0] * self.n
        else:
            from statistics import NormalDist

            z = NormalDist().inv_cdf(design.sla_percentile)
            self.tables = [p.mean_s.tolist() for p in parts]
            # a variable-length model's tail_s also holds the spread of its batches' longest inputs, which the
            # lengths drawn here reproduce: its jitter alone is the design's jitter_sigma
            self.sigma = [p.jitter_sigma if p.jitter_sigma is not None
                          else _sigma_for_ratio(float(np.median(p.tail_s / p.mean_s)), z) for p in parts]
            self.draws = rng.standard_normal(n_draws).tolist()
            if ctx is not None and design.gpu.input_len is not None:
                self._length_tables(design, ctx)
        self.capacity = [max((b + 1) / t for b, t in enumerate(tab)) for tab in self.tables]

    def _length_tables(self, design, ctx) -> None:
        """Curves at every profiled input length, per partition (variable-length models): the same rows the
        analytic engine takes its expectation over (engine.analytic.gpu.length_rows)."""
        sc, book = design.scenario, ctx.book
        src = book._source(sc.model, sc.gpu.sku, design.gpu.partitions[0].name, sc.precision, None, False)
        lengths = book.lengths(sc.model, *src)
        over = design.gpu_overhead_s
        cache: dict[str, list[list[float]]] = {}
        for p in design.gpu.partitions:
            if p.name not in cache:
                cache[p.name] = [(row + over).tolist() for row in length_rows(book, sc, p.name, lengths)]
        self.lengths = list(lengths)
        self.by_length = [cache[p.name] for p in design.gpu.partitions]
        self.notes.append(f"batch service priced at its longest input, interpolated over profiled lengths "
                          f"{', '.join(f'{x:g}' for x in lengths)}")

    def mean(self, p: int, items: int, length: Optional[float] = None) -> float:
        """Mean service time (s) of a batch of `items` on partition p (longest input `length`)."""
        if self.lengths is None or length is None:
            tab = self.tables[p]
            return tab[min(items, len(tab)) - 1]
        ls, rows = self.lengths, self.by_length[p]
        if length <= ls[0]:
            row = rows[0]
            return row[min(items, len(row)) - 1]
        if length >= ls[-1]:
            row = rows[-1]
            return row[min(items, len(row)) - 1]
        i = bisect.bisect_right(ls, length) - 1
        lo, hi = rows[i], rows[i + 1]
        w = (length - ls[i]) / (ls[i + 1] - ls[i])
        return lo[min(items, len(lo)) - 1] * (1 - w) + hi[min(items, len(hi)) - 1] * w

    def sample(self, p: int, items: int, length: Optional[float], k: int) -> float:
        """Service time of batch number k (its own random draw) on partition p."""
        m = self.mean(p, items, length)
        d = self.draws
        if d is None:
            return m
        if self.spec is not None:
            return m * d[k]
        s = self.sigma[p]
        return m * math.exp(s * d[k] - s * s / 2)
