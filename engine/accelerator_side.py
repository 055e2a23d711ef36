"""The accelerator side of a design, whatever the backend: its servers (Partition) and how they batch (GpuSide).

A GPU backend (engine.analytic.gpu) cuts GPUs into whole, MIG or GPU% partitions; the FPGA backend
(engine.fpga.backend) makes one Partition per hardware thread. Both hand the analytic engine and the simulator
the same GpuSide. This module imports only the vocabulary, so every backend may build on it.
"""

import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
from pydantic import BaseModel, ConfigDict, PrivateAttr

from engine.vocab import BatchingPolicy

MAX_ANSWERS = 4096  # rate points one GPU side remembers (a sweep or bisection uses about 100)


class Partition(BaseModel):
    """One GPU instance serving the model, with its service-time table (s) over batches 1..max_batch."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    gpu_index: int
    name: str  # 'full', a MIG profile, or 'mps:N'
    label: str  # e.g. 'GPU0 3g.20gb@4'
    provenance: str
    max_batch: int  # Batch_max in items (knee, or the policy's cap), within the curve and memory
    knee_batch: int
    knee_time_s: float
    mean_s: np.ndarray  # index b-1 -> mean batch service time (s), b = 1..curve max
    tail_s: np.ndarray  # same, at the scenario's SLA percentile
    # log-sd of the run-to-run jitter of a batch at a given input length (the simulator's draw); None: derive it
    # from tail_s / mean_s, which for a fixed-size model hold nothing else (engine.sim.service)
    jitter_sigma: Optional[float] = None
    # PREBA with length buckets on a variable-length model (engine.analytic.preba_buckets.backlog_cost_ratios): backlogs
    # n >= max_batch, the cost of the batch cut from n waiting over the random-member batch's, and its spread;
    # None for every other policy and for fixed-size models
    backlog_cost: Optional[np.ndarray] = None
    # tables derived from this (immutable) partition's curves, e.g. the log-normal sigma of each batch size:
    # worked out once per partition instead of at every rate of a sweep (engine.analytic.rates)
    _derived: dict = PrivateAttr(default_factory=dict)

    def model_copy(self, *, update: Optional[dict] = None, deep: bool = False) -> "Partition":
        """A copy; one with changes remembers nothing of this partition's. pydantic's copy would share the
        `_derived` dict, so a copy with other service times (an RPC overhead, a serial executor's per-item work,
        MIG contention) would read this partition's batch tables, whichever of the two was asked first."""
        copy = super().model_copy(update=update, deep=deep)
        if update:
            copy.__pydantic_private__["_derived"] = {}
        return copy

    def derived(self, key: tuple, make):
        """make(), remembered under `key` for the life of this partition (a few keys: batch caps x percentiles)."""
        memo = self.__pydantic_private__["_derived"]  # direct: pydantic's __getattr__ costs ~3 us a call
        if key not in memo:
            memo[key] = make()
        return memo[key]

    def service(self, b: float) -> float:
        """Mean service time (s) of a batch of b items, linear between integer batches."""
        means = self.mean_s
        top = len(means)
        b = min(max(b, 1.0), top)
        whole = int(math.floor(b))
        if whole >= top:
            return float(means[-1])
        fraction = b - whole
        if getattr(means, "dtype", None) == np.float64:  # the same arithmetic on Python floats: item() skips numpy's scalar objects
            return float(means.item(whole - 1) * (1 - fraction) + means.item(whole) * fraction)
        return float(means[whole - 1] * (1 - fraction) + means[whole] * fraction)

    def tail(self, b: float) -> float:
        b = int(round(min(max(b, 1.0), len(self.tail_s))))
        return float(self.tail_s[b - 1])


class GpuSide(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    partitions: tuple[Partition, ...]
    policy: BatchingPolicy
    time_queue_s: float  # Time_queue (0 when batches never wait for a timeout)
    knee_rule: str
    input_len: Optional[float]
    notes: tuple[str, ...]
    # answers of pure functions of this (immutable) side, e.g. its state at a rate: a sweep's designs
    # share one GpuSide across preprocessing devices and hosts, so each rate is worked out once
    _answers: dict = PrivateAttr(default_factory=dict)

    def model_copy(self, *, update: Optional[dict] = None, deep: bool = False) -> "GpuSide":
        """A copy; one with changes beyond its notes remembers nothing of this side's (pydantic's copy would share
        the `_answers` dict, and with it the state at each rate of other partitions)."""
        copy = super().model_copy(update=update, deep=deep)
        if update and set(update) - {"notes"}:
            copy.__pydantic_private__["_answers"] = {}
        return copy

    def remember(self, key: tuple, make):
        answers = self.__pydantic_private__["_answers"]  # direct: pydantic's __getattr__ costs ~3 us a call
        if key not in answers:
            if len(answers) >= MAX_ANSWERS:  # a long-lived server: forget the oldest, stay bounded
                del answers[next(iter(answers))]
            answers[key] = make()
        return answers[key]

    def physics(self) -> tuple:
        """A cheap key of what the answers this side remembers are pure functions of: the policy, Time_queue, the
        input length and, per partition in order, which of the side's profiles it is (the first position of its
        name: partitions of one name are grouped), Batch_max, jitter, and its tables' types, shapes and last
        entries; not labels, GPU positions, provenance or notes. Sides with equal keys and equal tables
        (same_physics) give the same answers bit for bit, so they may share them (share_answers_of)."""
        first: dict[str, int] = {}
        return self.policy, self.time_queue_s, self.input_len, tuple(
            (first.setdefault(p.name, k), p.max_batch, p.jitter_sigma) + tuple(
                None if table is None else (table.dtype.str, table.shape, table.ravel()[-1:].tobytes())
                for table in (p.mean_s, p.tail_s, p.backlog_cost))
            for k, p in enumerate(self.partitions))

    def same_physics(self, other: "GpuSide") -> bool:
        """Whether `other` has this side's physics: an equal key and equal tables, entry by entry."""
        def same(a, b) -> bool:
            return (a is None) == (b is None) and (a is None or np.array_equal(a, b))

        return self.physics() == other.physics() and all(
            same(p.mean_s, q.mean_s) and same(p.tail_s, q.tail_s) and same(p.backlog_cost, q.backlog_cost)
            for p, q in zip(self.partitions, other.partitions))

    def share_answers_of(self, other: "GpuSide") -> None:
        """Remember answers with `other`, a side of the same physics (e.g. MIG layouts whose different profiles
        have the same tables): what either works out, the other reads."""
        if not self.same_physics(other):
            raise ValueError("only sides of the same physics share their answers")
        self.__pydantic_private__["_answers"] = other.__pydantic_private__["_answers"]

    def answers_key(self) -> int:
        """Which answers this side gives: the id of the table it remembers them in, shared by the sides of the same
        physics (share_answers_of); equal keys, equal answers (while the sides live)."""
        return id(self.__pydantic_private__["_answers"])

    def remember_many(self, keys: list[tuple], make) -> None:
        """Remember the answers of the keys not yet remembered: make(indices into keys) gives them in one call
        (e.g. the side's state at every rate of a scan, worked out as one array)."""
        answers = self.__pydantic_private__["_answers"]
        todo = [i for i, key in enumerate(keys) if key not in answers]
        if todo:
            for i, answer in zip(todo, make(todo)):
                if len(answers) >= MAX_ANSWERS:
                    del answers[next(iter(answers))]
                answers[keys[i]] = answer

    def with_partitions(self, partitions: tuple[Partition, ...]) -> "GpuSide":
        """The same side with other partitions (and none of this side's remembered answers)."""
        return GpuSide(partitions=partitions, policy=self.policy, time_queue_s=self.time_queue_s,
                       knee_rule=self.knee_rule, input_len=self.input_len, notes=self.notes)


@dataclass(frozen=True)
class Link:
    """What the host side needs of the accelerator: its name in memo keys, the PCIe generation of its host link,
    the catalogue GPU whose decoders GPU preprocessing may use (None: no GPU decoders), and the kernel launches
    the RPC path prices per request (None: the model's own count)."""

    name: str
    pcie_gen: int
    decode_gpu: Any
    kernels: Optional[int]
