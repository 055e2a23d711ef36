"""Hardware catalogue: GPUs, MIG profiles and placements, layout validation and enumeration.

A MIG layout is a set of GPU instances, each occupying a contiguous run of
memory slots starting at one of its profile's allowed starts (`nvidia-smi mig
-lgipp`), with the GPU's compute slices shared out (at most 7 on A100/H100/H200,
4 on A30) and each profile under its maximum instance count. These three rules
reproduce NVIDIA's table of valid combinations; the catalogue checks them and
explains which one a rejected layout breaks.
"""

from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional, Sequence

from pydantic import BaseModel, ConfigDict, Field

from engine.seed.records import GpuRow, MigPlacementRow, MigProfileRow
from engine.errors import KneepointError
from engine.seed.reader import read_csv


#: MPS clients (CUDA contexts) one GPU serves at once: 48 on Volta and later, 16 before (NVIDIA Multi-Process Service
#: documentation, "Considerations: Limitations"). Every GPU of the catalogue is Volta or later, so each takes 48.
MPS_MAX_CLIENTS = 48
MPS_SOURCE = "NVIDIA Multi-Process Service documentation, Considerations: Limitations (48 clients per GPU from Volta on)"


class LayoutError(KneepointError):
    """A MIG layout that cannot be placed; the message names the conflict."""


class UnknownNameError(KneepointError, KeyError):
    """A name that is not in the catalogue; the message lists the valid ones."""

    def __str__(self) -> str:  # KeyError quotes its argument; we want plain text
        return str(self.args[0])


class MigProfile(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    compute_slices: int
    memory_slices: int
    sm_count: int
    memory_gib: float
    nvdec: int
    jpeg: int
    ofa: int
    copy_engines: int
    max_instances: int
    starts: tuple[int, ...]
    size: int  # memory slots occupied by one instance


class Gpu(BaseModel):
    model_config = ConfigDict(frozen=True)

    sku: str
    mig_capable: bool
    sm_count: int  # MIG off
    memory_gb: float
    memory_slots: int
    compute_slices: int
    tdp_w: float
    idle_w: Optional[float]
    pcie_gen: int
    profiles: tuple[MigProfile, ...]
    source: str
    mps_max_clients: int = MPS_MAX_CLIENTS  # MPS clients this GPU serves at once (MPS_SOURCE)

    def profile(self, name: str) -> MigProfile:
        for p in self.profiles:
            if p.name == name:
                return p
        if not self.mig_capable:
            raise UnknownNameError(f"{self.sku} does not support MIG; use GPU% shares instead")
        raise UnknownNameError(
            f"{name!r} is not a profile of {self.sku}; valid: {', '.join(p.name for p in self.profiles)}")


class PlacedInstance(BaseModel):
    model_config = ConfigDict(frozen=True)

    profile: str
    start: int
    size: int

    @property
    def slots(self) -> range:
        return range(self.start, self.start + self.size)

    def label(self) -> str:
        return f"{self.profile}@{self.start}"


class MigLayout(BaseModel):
    """A valid, placed MIG layout of one GPU."""

    model_config = ConfigDict(frozen=True)

    sku: str
    instances: tuple[PlacedInstance, ...]
    compute_slices_used: int
    memory_slots_used: int

    def labels(self) -> list[str]:
        return [i.label() for i in self.instances]


class Catalog(BaseModel):
    """All GPUs known to the store, looked up by SKU."""

    model_config = ConfigDict(frozen=True)

    gpus: tuple[Gpu, ...]

    @classmethod
    def from_rows(cls, gpus: Iterable[GpuRow], profiles: Iterable[MigProfileRow],
                  placements: Iterable[MigPlacementRow]) -> "Catalog":
        starts: dict[tuple[str, str], list[int]] = {}
        sizes: dict[tuple[str, str], int] = {}
        for pl in placements:
            starts.setdefault((pl.sku, pl.profile), []).append(pl.start)
            sizes[(pl.sku, pl.profile)] = pl.size
        by_sku: dict[str, list[MigProfile]] = {}
        for p in profiles:
            key = (p.sku, p.profile)
            if key not in starts:
                raise ValueError(f"profile {p.profile} of {p.sku} has no placements")
            by_sku.setdefault(p.sku, []).append(MigProfile(
                name=p.profile, compute_slices=p.compute_slices, memory_slices=p.memory_slices,
                sm_count=p.sm_count, memory_gib=p.memory_gib, nvdec=p.nvdec, jpeg=p.jpeg, ofa=p.ofa,
                copy_engines=p.copy_engines, max_instances=p.max_instances,
                starts=tuple(sorted(starts[key])), size=sizes[key]))
        out = []
        for g in gpus:
            profs = sorted(by_sku.get(g.sku, []), key=lambda m: (m.compute_slices, m.memory_slices, m.name))
            out.append(Gpu(sku=g.sku, mig_capable=g.mig_capable, sm_count=g.sm_count, memory_gb=g.memory_gb,
                           memory_slots=g.memory_slots, compute_slices=g.compute_slices, tdp_w=g.tdp_w,
                           idle_w=g.idle_w, pcie_gen=g.pcie_gen, profiles=tuple(profs), source=g.source))
        return cls(gpus=tuple(out))

    @classmethod
    def from_records(cls, records: Callable[[str], list[dict]]) -> "Catalog":
        """The catalogue of a store's tables gpus, mig_profiles and mig_placements, `records(table)` giving each as
        {column: value} rows (a Store's or a rows snapshot's)."""
        def rows(name, model):
            return [model(**rec) for rec in records(name)]
        return cls.from_rows(rows("gpus", GpuRow), rows("mig_profiles", MigProfileRow),
                             rows("mig_placements", MigPlacementRow))

    @property
    def skus(self) -> list[str]:
        return [g.sku for g in self.gpus]

    def gpu(self, sku: str) -> Gpu:
        for g in self.gpus:
            if g.sku == sku:
                return g
        raise UnknownNameError(f"{sku!r} is not a GPU in the catalogue; valid: {', '.join(self.skus)}")


# --------------------------------------------------------------------------- validation

@dataclass
class _Board:
    """Mutable occupancy of one GPU while placing (local to a call)."""

    owner: list[Optional[str]]
    compute_free: int


def _parse_entry(entry: str | tuple[str, Optional[int]]) -> tuple[str, Optional[int]]:
    if isinstance(entry, tuple):
        return entry
    name, sep, start = entry.partition("@")
    if not sep:
        return name.strip(), None
    try:
        return name.strip(), int(start)
    except ValueError:
        raise LayoutError(f"{entry!r}: start slot must be an integer, as in '3g.20gb@4'") from None


def _span(slots: range) -> str:
    return f"slot {slots[0]}" if len(slots) == 1 else f"slots {slots[0]}-{slots[-1]}"


def _occupied_by(board: _Board, slots: range) -> str:
    owners = sorted({board.owner[s] for s in slots if board.owner[s]})
    return ", ".join(owners)


def validate_layout(gpu: Gpu, entries: Sequence[str | tuple[str, Optional[int]]]) -> MigLayout:
    """Place a list of MIG profiles (optionally 'profile@start') on one GPU.

    Returns the placed layout, or raises LayoutError naming the first conflict:
    an unknown profile, a start slot the profile cannot use, overlapping memory
    slots, too many instances of a profile, or more compute slices than the GPU has.
    Instances without a start are placed largest first, lowest start first, with
    backtracking, so a layout is rejected only if no placement exists.
    """
    if not gpu.mig_capable:
        raise LayoutError(f"{gpu.sku} does not support MIG; use GPU% shares instead")
    if not entries:
        raise LayoutError("the layout is empty: choose at least one MIG profile")
    parsed = [_parse_entry(e) for e in entries]
    profs = []
    for name, start in parsed:
        try:
            profs.append((gpu.profile(name), start))
        except UnknownNameError as e:
            raise LayoutError(str(e)) from None

    counts = Counter(p.name for p, _ in profs)
    for name, n in counts.items():
        p = gpu.profile(name)
        if n > p.max_instances:
            raise LayoutError(f"{n} x {name} requested, but {gpu.sku} allows at most {p.max_instances}")
    compute = sum(p.compute_slices for p, _ in profs)
    if compute > gpu.compute_slices:
        raise LayoutError(f"the layout needs {compute} compute slices, but {gpu.sku} has "
                          f"{gpu.compute_slices} ({' + '.join(p.name for p, _ in profs)})")

    board = _Board(owner=[None] * gpu.memory_slots, compute_free=gpu.compute_slices - compute)
    placed: list[PlacedInstance] = []
    for p, start in profs:
        if start is None:
            continue
        if start not in p.starts:
            raise LayoutError(f"{p.name} cannot start at slot {start}; valid starts: "
                              f"{', '.join(map(str, p.starts))}")
        slots = range(start, start + p.size)
        if any(board.owner[s] for s in slots):
            raise LayoutError(f"{p.name} needs {_span(slots)}, already used by "
                              f"{_occupied_by(board, slots)}")
        for s in slots:
            board.owner[s] = f"{p.name}@{start}"
        placed.append(PlacedInstance(profile=p.name, start=start, size=p.size))

    free = sorted((p for p, s in profs if s is None), key=lambda p: (-p.size, -p.compute_slices, p.name))
    failure: list[str] = []

    def place(i: int) -> bool:
        if i == len(free):
            return True
        p = free[i]
        for start in p.starts:
            slots = range(start, start + p.size)
            if any(board.owner[s] for s in slots):
                continue
            for s in slots:
                board.owner[s] = f"{p.name}@{start}"
            placed.append(PlacedInstance(profile=p.name, start=start, size=p.size))
            if place(i + 1):
                return True
            placed.pop()
            for s in slots:
                board.owner[s] = None
        if not failure:  # the first dead end is the clearest explanation
            taken = _occupied_by(board, range(gpu.memory_slots))
            failure.append(f"{p.name} cannot be placed on {gpu.sku}: every start it can use "
                           f"({', '.join(map(str, p.starts))}) overlaps {taken}")
        return False

    if not place(0):
        raise LayoutError(failure[0])
    placed.sort(key=lambda i: i.start)
    return MigLayout(sku=gpu.sku, instances=tuple(placed), compute_slices_used=compute,
                     memory_slots_used=sum(i.size for i in placed))


def addable(gpu: Gpu, entries: Sequence[str]) -> dict[str, Optional[str]]:
    """For building a layout one profile at a time: each profile of the GPU, mapped to None if the layout
    `entries` plus one more instance of it is still valid, else to the reason it is not (LayoutError text)."""
    out: dict[str, Optional[str]] = {}
    for p in gpu.profiles:
        try:
            validate_layout(gpu, [*entries, p.name])
            out[p.name] = None
        except LayoutError as e:
            out[p.name] = str(e)
    return out


# --------------------------------------------------------------------------- enumeration

def enumerate_layouts(gpu: Gpu, profiles: Optional[Iterable[str]] = None) -> list[MigLayout]:
    """All maximal placed layouts of a GPU: valid layouts to which no further instance fits.

    With `profiles`, only those profiles are used (and maximality is judged
    against them). Layouts are enumerated as left-to-right tilings of the memory
    slots, so each set of placed instances appears exactly once.
    """
    if not gpu.mig_capable:
        raise LayoutError(f"{gpu.sku} does not support MIG; use GPU% shares instead")
    allowed = list(gpu.profiles) if profiles is None else [gpu.profile(n) for n in profiles]
    by_start: dict[int, list[MigProfile]] = {}
    for p in allowed:
        for s in p.starts:
            by_start.setdefault(s, []).append(p)
    n_slots = gpu.memory_slots
    out: list[MigLayout] = []

    def fits_more(chosen: list[PlacedInstance], compute_used: int) -> bool:
        used = set()
        for i in chosen:
            used.update(i.slots)
        counts = Counter(i.profile for i in chosen)
        for p in allowed:
            if counts[p.name] >= p.max_instances or compute_used + p.compute_slices > gpu.compute_slices:
                continue
            if any(not used.intersection(range(s, s + p.size)) for s in p.starts):
                return True
        return False

    def walk(slot: int, chosen: list[PlacedInstance], compute_used: int, counts: Counter) -> Iterator[None]:
        if slot >= n_slots:
            if chosen and not fits_more(chosen, compute_used):
                out.append(MigLayout(sku=gpu.sku, instances=tuple(chosen), compute_slices_used=compute_used,
                                     memory_slots_used=sum(i.size for i in chosen)))
            return
        yield from walk(slot + 1, chosen, compute_used, counts)  # leave this slot empty
        for p in by_start.get(slot, []):
            if slot + p.size > n_slots or compute_used + p.compute_slices > gpu.compute_slices:
                continue
            if counts[p.name] >= p.max_instances:
                continue
            counts[p.name] += 1
            chosen.append(PlacedInstance(profile=p.name, start=slot, size=p.size))
            yield from walk(slot + p.size, chosen, compute_used + p.compute_slices, counts)
            chosen.pop()
            counts[p.name] -= 1

    for _ in walk(0, [], 0, Counter()):
        pass
    return out


# --------------------------------------------------------------------------- all-slices contention

#: published one-slice vs all-slices MIG measurements (issue 12 item 4), one row per (family, model)
MIG_CONTENTION_CSV = Path(__file__).resolve().parents[1] / "data" / "seed" / "mig_contention.csv"


class MigContentionRow(BaseModel):
    """One published pair: a MIG slice serving alone, and every slice of the GPU serving at once."""

    model_config = ConfigDict(frozen=True)

    source: str
    family: str  # GPU family: the SKU's first word (A100, H100, A30, H200)
    model: str  # Kneepoint's model name
    benchmark: str  # the source's benchmark name
    scenario: str
    slices: int = Field(ge=2)  # instances per GPU in the all-slices run
    one_slice_samples_per_s: float = Field(gt=0)
    all_slices_samples_per_s: float = Field(gt=0)  # the whole system: gpus x slices instances
    gpus: int = Field(ge=1)
    note: Optional[str] = None


class MigContention(BaseModel):
    """Throughput of a MIG slice with every slice of its GPU busy, relative to the slice alone (0..1]."""

    model_config = ConfigDict(frozen=True)

    factor: float
    slices: int  # busy instances per GPU the factor was measured with
    basis: str  # where the factor comes from, in words
    source: Optional[str]


def all_slices_factor(row: MigContentionRow) -> float:
    """Per-slice throughput with all slices busy over the slice alone (a fraction).

    (all_slices_samples_per_s / (gpus x slices)) / one_slice_samples_per_s, both
    samples/s from the row's source (MLPerf loadgen summaries).
    """
    return row.all_slices_samples_per_s / (row.gpus * row.slices) / row.one_slice_samples_per_s


def gpu_family(sku: str) -> str:
    """The GPU family of a SKU: its first word ('A100-SXM4-80GB' -> 'A100')."""
    return sku.split("-")[0]


@lru_cache(maxsize=4)
def contention_rows(path: Path = MIG_CONTENTION_CSV) -> tuple[MigContentionRow, ...]:
    """The published contention pairs (validated with the seed reader: a bad row names its line)."""
    return tuple(read_csv(path, MigContentionRow))


def mig_contention(sku: str, model: str, rows: Optional[Sequence[MigContentionRow]] = None) -> MigContention:
    """The all-slices factor for `model` on `sku`'s family.

    The family's row for the model where one is published; else the family's
    most conservative (smallest) published factor; a family with no published
    pair borrows the smallest factor of any family (MIG isolates SMs, L2 and
    DRAM channels the same way on A100, A30, H100 and H200; what it leaves
    shared -- PCIe, the host's launch path, the memory controller's global
    arbitration -- is the same kind of resource), and says so.
    """
    rows = contention_rows() if rows is None else rows
    if not rows:
        return MigContention(factor=1.0, slices=7, basis="no published all-slices measurement: off", source=None)
    family = gpu_family(sku)
    same = [r for r in rows if r.family == family]
    exact = [r for r in same if r.model == model]
    if exact:
        r = exact[0]
        return MigContention(factor=all_slices_factor(r), slices=r.slices, source=r.source,
                             basis=f"published for {model} on {family} ({r.benchmark} {r.scenario})")
    pool, where = (same, f"{family}'s") if same else (list(rows), "any family's (none published for "
                                                                  f"{family})")
    r = min(pool, key=all_slices_factor)
    return MigContention(factor=all_slices_factor(r), slices=r.slices, source=r.source,
                         basis=f"{where} most conservative published value ({r.model} on {r.family})")


def busy_slices_factor(factor_all: float, instances: int, measured_slices: int) -> float:
    """Throughput factor of a slice when `instances` MIG instances of its GPU are busy at once.

    1.0 alone, `factor_all` with the `measured_slices` of the published run,
    linear in the number of other busy instances between (an assumption: launch
    and PCIe contention grow with the number of concurrent instances); never
    below `factor_all`.
    """
    if instances <= 1:
        return 1.0
    share = min(1.0, (instances - 1) / max(1, measured_slices - 1))
    return 1.0 - (1.0 - factor_all) * share
