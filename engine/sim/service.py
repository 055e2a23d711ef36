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
from array import array
from statistics import NormalDist
from typing import Optional

import numpy as np

from engine.order_stats import median
from engine.scenario import ServiceSpec
from engine.sim.errors import SimError
from engine.analytic.gpu import lognormal_sigma_for_ratio, length_rows
from engine.vocab import ServiceKind

DRAW_CHUNK = 1 << 16  # batches' draws made at a time


def _sigma_for_ratio(ratio: float, z: float) -> float:
    """Log-normal sigma whose p-quantile over the mean is `ratio` (engine.analytic.gpu.lognormal_sigma_for_ratio)."""
    return lognormal_sigma_for_ratio(ratio, z)


class GpuService:
    """Mean (ELSA's lookup table) and sampled batch service times per partition."""

    def __init__(self, design, n_draws: int, rng: np.random.Generator, spec: Optional[ServiceSpec] = None,
                 ctx=None):
        """n_draws: how many batches may run (one per request at most); each batch's random draw is picked by
        its batch number (drawn in chunks, in order, from `rng`)."""
        partitions = design.gpu.partitions
        self.n = len(partitions)
        self.spec = spec
        self.lengths: Optional[list[float]] = None  # profiled input lengths (variable-length models, with a ctx)
        self.notes: list[str] = []
        if spec is not None:
            means_ms = spec.mean_ms if isinstance(spec.mean_ms, list) else [spec.mean_ms] * self.n
            if len(means_ms) != self.n:
                raise SimError(f"service.mean_ms: {len(means_ms)} values for {self.n} partitions")
            largest = max(partition.max_batch for partition in partitions)
            # tables[p][b - 1]: mean service (s) of a batch of b items
            self.tables = [[mean_ms / 1e3 * (1 + spec.batch_slope * extra) for extra in range(largest)]
                           for mean_ms in means_ms]
            if spec.kind == ServiceKind.EXPONENTIAL:
                self._draw = rng.standard_exponential  # factors of mean 1
            elif spec.kind == ServiceKind.LOGNORMAL and spec.scv > 0:
                log_variance = math.log1p(spec.scv)
                self._draw = lambda k: np.exp(math.sqrt(log_variance) * rng.standard_normal(k) - log_variance / 2)
            else:
                self._draw = None  # deterministic
            self.sigma = [0.0] * self.n
        else:
            z = NormalDist().inv_cdf(design.sla_percentile)
            self.tables = [partition.mean_s.tolist() for partition in partitions]
            # a variable-length model's tail_s also holds the spread of its batches' longest inputs, which the
            # lengths drawn here reproduce: its jitter alone is the design's jitter_sigma
            self.sigma = [partition.jitter_sigma if partition.jitter_sigma is not None
                          else _sigma_for_ratio(median(partition.tail_s / partition.mean_s), z)
                          for partition in partitions]
            self._draw = rng.standard_normal  # standard normals, scaled per partition
            if ctx is not None and design.gpu.input_len is not None:
                self._length_tables(design, ctx)
        # each batch's draw, by batch number: drawn in chunks as batches run (the values do not depend on the
        # chunking; a batched run uses a fraction of the n_draws it may need)
        self.n_draws = n_draws
        self.draws: Optional[array] = array("d") if self._draw is not None else None  # 8 bytes a draw
        if n_draws > 0:
            self.more_draws(min(n_draws, DRAW_CHUNK))
        self.capacity = [max((items + 1) / mean_s for items, mean_s in enumerate(table)) for table in self.tables]

    def more_draws(self, count: int = DRAW_CHUNK) -> None:
        """Draw the next `count` batches' random factors (at most n_draws in all)."""
        if self.draws is None:
            return
        count = min(count, self.n_draws - len(self.draws))
        if count <= 0:
            raise SimError(f"more than {self.n_draws} batches: one draw per request was made")
        self.draws.frombytes(np.ascontiguousarray(self._draw(count), dtype=np.float64).tobytes())

    def _length_tables(self, design, ctx) -> None:
        """Curves at every profiled input length, per partition (variable-length models): the same rows the
        analytic engine takes its expectation over (engine.analytic.gpu.length_rows)."""
        scenario, book = design.scenario, ctx.book
        source = book._source(scenario.model, scenario.gpu.sku, design.gpu.partitions[0].name, scenario.precision,
                              None, False)
        lengths = book.lengths(scenario.model, *source)
        overhead_s = design.gpu_overhead_s
        by_partition_name: dict[str, list[list[float]]] = {}  # identical partitions share their rows
        for partition in design.gpu.partitions:
            if partition.name not in by_partition_name:
                by_partition_name[partition.name] = [(row + overhead_s).tolist()
                                                     for row in length_rows(book, scenario, partition.name, lengths)]
        self.lengths = list(lengths)
        self.by_length = [by_partition_name[partition.name] for partition in design.gpu.partitions]
        self.notes.append(f"batch service priced at its longest input, interpolated over profiled lengths "
                          f"{', '.join(f'{x:g}' for x in lengths)}")

    def mean(self, partition: int, items: int, length: Optional[float] = None) -> float:
        """Mean service time (s) of a batch of `items` on a partition (longest input `length`)."""
        if self.lengths is None or length is None:
            table = self.tables[partition]
            return table[min(items, len(table)) - 1]
        lengths, rows = self.lengths, self.by_length[partition]
        if length <= lengths[0]:
            row = rows[0]
            return row[min(items, len(row)) - 1]
        if length >= lengths[-1]:
            row = rows[-1]
            return row[min(items, len(row)) - 1]
        below = bisect.bisect_right(lengths, length) - 1
        shorter, longer = rows[below], rows[below + 1]
        weight = (length - lengths[below]) / (lengths[below + 1] - lengths[below])
        return shorter[min(items, len(shorter)) - 1] * (1 - weight) + longer[min(items, len(longer)) - 1] * weight

    def sample(self, partition: int, items: int, length: Optional[float], batch_number: int) -> float:
        """Service time of a batch on a partition: its mean times the batch's own random draw."""
        if self.lengths is None or length is None:  # self.mean's table lookup, inline: once per batch
            table = self.tables[partition]
            mean = table[(items if items < len(table) else len(table)) - 1]
        else:
            mean = self.mean(partition, items, length)
        draws = self.draws
        if draws is None:
            return mean
        if batch_number >= len(draws):
            self.more_draws()
        if self.spec is not None:
            return mean * draws[batch_number]
        sigma = self.sigma[partition]
        return mean * math.exp(sigma * draws[batch_number] - sigma * sigma / 2)  # log-normal factor of mean 1

    def unbatched_times(self, items: np.ndarray) -> Optional[np.ndarray]:
        """Service time of batch k = the k-th query alone (items[k] items) when it does not depend on the partition
        (every partition has the same table and jitter, fixed-length inputs): sample()'s numbers, drawn at once.
        None where the partition matters."""
        if self.lengths is not None or any(table != self.tables[0] for table in self.tables) \
                or len(set(self.sigma)) > 1:
            return None
        table = np.asarray(self.tables[0])
        mean = table[np.minimum(items, len(table)) - 1]
        if self.draws is None:
            return mean
        while len(self.draws) < len(items):
            self.more_draws()
        draws = np.frombuffer(self.draws, dtype=np.float64)[:len(items)]
        if self.spec is not None:
            return mean * draws
        sigma = self.sigma[0]
        exp, half = math.exp, sigma * sigma / 2  # math.exp, as sample() (numpy's exp may differ in the last bit)
        for at in range(0, len(mean), DRAW_CHUNK):  # in chunks: a list of floats takes 32 bytes an entry
            mean[at:at + DRAW_CHUNK] *= [exp(sigma * draw - half) for draw in draws[at:at + DRAW_CHUNK].tolist()]
        return mean

    def unit_tables(self, most_items: list[int]) -> Optional[tuple[list[list[float]], list[float], list[float]]]:
        """sample() of a profiled fixed-length model laid out for an event loop that computes it inline (a call per
        batch costs as much as the arithmetic): per partition p, the mean service of a batch of `items` items at
        index items (0 < items <= most_items[p]), the log-normal sigma and sigma * sigma / 2. The loop's
        mean * exp(sigma * draw - half) is sample()'s expression, so the same number to the bit. None where
        sample() does more (variable lengths, a synthetic or deterministic service): the loop calls it."""
        if self.lengths is not None or self.spec is not None or self.draws is None:
            return None
        means = [[0.0] + [table[(items if items < len(table) else len(table)) - 1] for items in range(1, most + 1)]
                 for table, most in zip(self.tables, most_items)]
        return means, list(self.sigma), [sigma * sigma / 2 for sigma in self.sigma]

    def sampler(self):
        """sample() as a function with the service's tables bound (the event loops call it once per batch)."""
        if self.lengths is not None:
            return self.sample
        tables, draws, sigmas, more = self.tables, self.draws, self.sigma, self.more_draws
        lengths = [len(table) for table in tables]
        if draws is None:
            def deterministic(partition: int, items: int, length, batch_number: int) -> float:
                longest = lengths[partition]
                return tables[partition][(items if items < longest else longest) - 1]
            return deterministic
        if self.spec is not None:
            def synthetic(partition: int, items: int, length, batch_number: int) -> float:
                longest = lengths[partition]
                if batch_number >= len(draws):
                    more()
                return tables[partition][(items if items < longest else longest) - 1] * draws[batch_number]
            return synthetic

        def profiled(partition: int, items: int, length, batch_number: int) -> float:
            longest = lengths[partition]
            mean = tables[partition][(items if items < longest else longest) - 1]
            if batch_number >= len(draws):
                more()
            sigma = sigmas[partition]
            return mean * math.exp(sigma * draws[batch_number] - sigma * sigma / 2)  # log-normal factor of mean 1
        return profiled
