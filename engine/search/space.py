"""A declared design space (schema kneepoint.search/1) and the validated grid of designs it spans.

A SearchSpace is JSON: a base scenario plus alternatives on five axes, and the grid is their
product. GPU: `layouts` (explicit MIG layouts, or "all" = every maximal layout of the base GPU,
engine.catalog.enumerate_layouts) and `partitions` (multisets such as {"1g.10gb": 7}, packed onto
the base's GPU count by engine.partition.pack; a multiset that cannot be packed is skipped with a
note); without either, the base's own GPU. Then `preprocessing`, `rpc`, `batching`, `scheduler`:
each alternative is a name (the device, preset or policy) or an object of that scenario section's
fields, whose list values expand to every combination, e.g.
{"policy": "fixed", "max_batch": [8, 32], "max_queue_delay_ms": [1, 5]} is four alternatives.
An alternative overrides the fields it names; the rest come from the base. The size is the product
of the axes' lengths and is refused above `max_designs` (which itself is at most HARD_MAX_DESIGNS).
"""

from __future__ import annotations

import itertools
import json
import math
from typing import Any, Callable, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from engine.catalog import LayoutError, UnknownNameError, enumerate_layouts, validate_layout
from engine.scenario import (BatchingSpec, GpuSpec, PreprocessingSpec, RpcSpec, Scenario, ScenarioError,
                             SchedulerSpec, load_scenario)
from engine.errors import ECHO_CHARS, error_message, error_path, excerpt, KneepointError
from engine.partition.pack import pack, PackingError

SCHEMA_ID = "kneepoint.search/1"
DEFAULT_MAX_DESIGNS = 20_000
HARD_MAX_DESIGNS = 200_000  # about a minute of analytic evaluation on two cores
AXES = ("gpu", "preprocessing", "rpc", "batching", "scheduler")  # gpu outermost: neighbours share a GPU side
#: most instances of one MIG profile in a multiset: 7 slices on each of the scenario's at most 64 GPUs
MAX_INSTANCES_PER_PROFILE = 7 * 64
_NAME_KEY = {"preprocessing": "device", "rpc": "preset", "batching": "policy", "scheduler": "policy"}


class SearchError(KneepointError):
    """An invalid search space or search argument; the message names the field and the bad value."""


class _FieldError(ValueError):
    """Raised inside validators to report a nested field path (as engine.scenario does)."""

    def __init__(self, path: str, message: str):
        self.path = path
        super().__init__(message)


class SearchSpace(BaseModel):
    """The declared space: a base scenario and the alternatives to try on each axis."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    schema_: Literal["kneepoint.search/1"] = Field(SCHEMA_ID, alias="schema")
    name: str = Field("search", min_length=1, max_length=120)
    base: dict[str, Any] = Field(description="a scenario (kneepoint.scenario/1); the axes replace parts of it")
    layouts: Optional[Union[Literal["all"], list[list[str]]]] = Field(
        None, description='"all" (every maximal layout of the GPU) or MIG layouts, each used on every GPU')
    partitions: Optional[list[dict[str, int]]] = Field(
        None, description="MIG instance multisets, e.g. {'1g.10gb': 7}, packed onto the base's GPUs")
    preprocessing: Optional[list[Union[str, dict[str, Any]]]] = None
    rpc: Optional[list[Union[str, dict[str, Any]]]] = None
    batching: Optional[list[Union[str, dict[str, Any]]]] = None
    scheduler: Optional[list[Union[str, dict[str, Any]]]] = None
    ideal_reference: bool = Field(True, description="also evaluate the best design with no preprocessing (PREBA's "
                                                   "ideal) as a reference line, not a candidate")
    max_designs: int = Field(DEFAULT_MAX_DESIGNS, ge=1, le=HARD_MAX_DESIGNS,
                             description=f"refuse spaces larger than this (at most {HARD_MAX_DESIGNS:,})")

    @field_validator("layouts", mode="before")
    @classmethod
    def _layouts_shape(cls, v):
        if v is None or v == "all":
            return v
        if not isinstance(v, list) or not v:
            raise _FieldError("layouts", f'give "all" or a non-empty list of layouts (lists of MIG profiles), '
                                         f"got {excerpt(v)}")
        for i, lay in enumerate(v):
            if not isinstance(lay, list) or not lay or not all(isinstance(e, str) for e in lay):
                raise _FieldError(f"layouts[{i}]", f"a layout is a non-empty list of MIG profile names, got {excerpt(lay)}")
        return v

    @field_validator("partitions", mode="before")
    @classmethod
    def _partitions_shape(cls, v):
        if v is None:
            return v
        if not isinstance(v, list) or not v:
            raise _FieldError("partitions", f"give a non-empty list of multisets such as {{'1g.10gb': 7}}, got {excerpt(v)}")
        for i, ms in enumerate(v):
            if not isinstance(ms, dict) or not ms:
                raise _FieldError(f"partitions[{i}]", f"a multiset maps MIG profiles to counts, got {excerpt(ms)}")
            for name, n in ms.items():
                if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_INSTANCES_PER_PROFILE:
                    raise _FieldError(f"partitions[{i}].{name[:ECHO_CHARS]}", f"the count must be a whole number in 1.."
                                      f"{MAX_INSTANCES_PER_PROFILE}, got {excerpt(n)}")
        return v

    @field_validator("preprocessing", "rpc", "batching", "scheduler", mode="before")
    @classmethod
    def _options_shape(cls, v, info):
        if v is None:
            return v
        axis = info.field_name
        if not isinstance(v, list) or not v:
            raise _FieldError(axis, f"give a non-empty list of alternatives, got {excerpt(v)}")
        for i, opt in enumerate(v):
            if not isinstance(opt, (str, dict)):
                raise _FieldError(f"{axis}[{i}]", f"an alternative is a {_NAME_KEY[axis]} name or an object of "
                                                  f"{axis} fields, got {excerpt(opt)}")
            for key, val in (opt.items() if isinstance(opt, dict) else ()):
                if isinstance(val, list) and not val:
                    raise _FieldError(f"{axis}[{i}].{key}", "an empty list of values gives no alternative")
        return v


def parse_space(data: dict | str | bytes | SearchSpace) -> SearchSpace:
    """A SearchSpace from JSON text or a dict; SearchError names the field."""
    if isinstance(data, SearchSpace):
        return data
    if isinstance(data, (str, bytes)):
        try:
            data = json.loads(data)
        except json.JSONDecodeError as e:
            raise SearchError(f"the search space is not valid JSON: {e.msg} at line {e.lineno} "
                              f"column {e.colno}") from None
    if not isinstance(data, dict):
        raise SearchError(f"a search space is a JSON object, got {type(data).__name__}")
    try:
        return SearchSpace.model_validate(data)
    except ValidationError as e:
        message = _message(e.errors()[0])
    raise SearchError(message)  # outside the handler: the error keeps no chain of pydantic internals


def _message(first: dict) -> str:
    """One line from pydantic's first error: the field path, what is wrong, and the value given."""
    err = (first.get("ctx") or {}).get("error")
    if isinstance(err, _FieldError):
        return f"{err.path}: {err}"
    path, msg = error_path(first), error_message(first)
    got = first.get("input")
    given = "" if isinstance(got, (dict, list)) or first.get("type") == "missing" else f" (got {excerpt(got)})"
    return f"{path}: {msg}{given}" if path else msg


# --------------------------------------------------------------------------- the grid

Part = Union[GpuSpec, PreprocessingSpec, RpcSpec, BatchingSpec, SchedulerSpec]


class AxisOption(BaseModel):
    """One validated alternative on one axis: the scenario section it sets."""

    model_config = ConfigDict(frozen=True)

    axis: str
    source: str  # where it was declared, e.g. 'batching[1]' or 'layouts[all][12]'
    label: str
    part: Part


class DesignGrid(BaseModel):
    """The validated space: every design is the base with one option of each axis (mixed-radix index)."""

    model_config = ConfigDict(frozen=True)

    name: str
    base: Scenario
    axes: tuple[tuple[AxisOption, ...], ...]  # in AXES order
    notes: tuple[str, ...]
    ideal_reference: bool = True  # SearchSpace.ideal_reference

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(a) for a in self.axes)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def options(self, index: int) -> tuple[AxisOption, ...]:
        if not 0 <= index < self.size:
            raise IndexError(f"design index {index} is outside 0..{self.size - 1}")
        picks = []
        for axis in reversed(self.axes):  # the last axis varies fastest
            index, k = divmod(index, len(axis))
            picks.append(axis[k])
        return tuple(reversed(picks))

    def labels(self) -> Callable[[int], dict[str, str]]:
        """A function giving a design's {axis: option label} ({o.axis: o.label for o in options(index)}), the axes'
        names and labels read once: a search's table asks it of every design."""
        axes = [(name, [o.label for o in axis]) for name, axis in reversed(list(zip(AXES, self.axes)))]  # last: fastest
        size = self.size

        def of(index: int) -> dict[str, str]:
            if not 0 <= index < size:
                raise IndexError(f"design index {index} is outside 0..{size - 1}")
            picks = []
            for name, labels in axes:
                index, k = divmod(index, len(labels))
                picks.append((name, labels[k]))
            return dict(reversed(picks))

        return of

    def label(self, index: int) -> str:
        return " | ".join(o.label for o in self.options(index))

    def twins(self) -> list[int]:
        """For each design, the first design of the grid with the same physics (gpu_twin_key): designs whose MIG
        layouts place the same slices at other positions are evaluated once and share its answers."""
        first: dict[tuple, int] = {}
        gpu_rep = [first.setdefault(gpu_twin_key(o.part), g) for g, o in enumerate(self.axes[0])]
        inner = self.size // len(self.axes[0])
        return [gpu_rep[i // inner] * inner + i % inner for i in range(self.size)]

    def off_layout_key(self, index: int) -> tuple:
        """What of design `index` is not its GPU layout: its options on the other axes (the base is common) and its
        GPU's SKU, count and contention, which pricing reads. Designs with equal keys differ only in where and which
        slices run, which their GPU sides hold (engine.search.run._measure)."""
        inner = self.size // len(self.axes[0])
        gpu = self.axes[0][index // inner].part  # None where the base runs on FPGAs
        return (index % inner,) + ((gpu.sku, gpu.count, gpu.mig_contention) if gpu is not None else ())

    def scenario(self, index: int) -> Scenario:
        """The design's scenario (its parts were validated against the catalogue with this base)."""
        opts = self.options(index)
        update: dict[str, Any] = {o.axis: o.part for o in opts}
        update["name"] = " | ".join(o.label for o in opts)[:120]
        return self.base.model_copy(update=update)


def gpu_twin_key(gpu: GpuSpec) -> tuple:
    """What of a GPU section the analytic answers depend on: its SKU, contention, shares and each GPU's MIG profiles
    as a multiset (GPUs in any order). A slice's start position only makes a layout valid or not; the engine prices
    a partition by its profile and its GPU's number of busy slices (engine.analytic.design.with_contention), so
    layouts with the same multiset per GPU give the same answers (to the last bits of float summation order)."""
    if gpu.layout is None and gpu.layouts is None:
        return ("as declared", gpu.model_dump_json())
    per_gpu = sorted(tuple(sorted(entry.split("@")[0] for entry in lay)) for lay in gpu.per_gpu_layouts())
    return ("mig", gpu.sku, gpu.mig_contention, tuple(per_gpu))


def expand(space: SearchSpace, book) -> DesignGrid:
    """Validate the base and every alternative against the catalogue; SearchError names the field."""
    try:
        base = load_scenario(space.base, book)
    except ScenarioError as e:
        raise SearchError(_prefixed(str(e), "", "base")) from None
    base_json = base.model_dump(mode="json", by_alias=True)
    raw = {axis: _raw_options(space, base, axis) for axis in AXES[1:]}
    gpu_raw = _raw_gpu(space, base, book)
    declared = [len(gpu_raw)] + [len(raw[a]) for a in AXES[1:]]
    size = math.prod(declared)
    if size > space.max_designs:
        parts = " x ".join(f"{n} {a}" for n, a in zip(declared, AXES))
        raise SearchError(f"max_designs: the space has {size:,} designs ({parts}), over the limit of "
                          f"{space.max_designs:,}; remove alternatives or raise max_designs (at most "
                          f"{HARD_MAX_DESIGNS:,})")
    notes: list[str] = []
    axes = [_dedupe(_gpu_options(gpu_raw, base, base_json, book, notes), notes)]
    for axis in AXES[1:]:
        axes.append(_dedupe([_section_option(axis, src, label, over, base_json, book)
                             for src, label, over in raw[axis]], notes))
    if not axes[0]:
        raise SearchError(f"partitions: no multiset could be packed onto {base.gpu.count} x {base.gpu.sku}, so the "
                          f"space is empty ({'; '.join(notes)})")
    return DesignGrid(name=space.name, base=base, axes=tuple(tuple(a) for a in axes), notes=tuple(notes),
                      ideal_reference=space.ideal_reference)


def _prefixed(message: str, section: str, where: str) -> str:
    """Re-anchor a scenario error ('batching.max_batch: ...') at the search-space field that caused it."""
    if section:
        if message.startswith(section) and message[len(section):len(section) + 1] in (".", ":", "["):
            return where + message[len(section):]
        return f"{where}: {message}"
    head = message.split(": ", 1)[0]
    return f"{where}.{message}" if head != message and " " not in head else f"{where}: {message}"


def _raw_options(space: SearchSpace, base: Scenario, axis: str) -> list[tuple[str, str, dict]]:
    """(source, label, overrides) per alternative, list values expanded into combinations."""
    declared = getattr(space, axis)
    if declared is None:  # the base's own section, labelled by its name field (e.g. 'fifs')
        return [(f"base.{axis}", str(getattr(getattr(base, axis), _NAME_KEY[axis])), {})]
    out = []
    for i, opt in enumerate(declared):
        opt = {_NAME_KEY[axis]: opt} if isinstance(opt, str) else opt
        keys = list(opt)
        values = [v if isinstance(v, list) else [v] for v in opt.values()]
        for combo in itertools.product(*values):
            over = dict(zip(keys, combo))
            out.append((f"{axis}[{i}]", _label(over, _NAME_KEY[axis]), over))
    return out


def _label(over: dict, name_key: str) -> str:
    if not over:
        return "base"
    head = [str(over[name_key])] if name_key in over else []
    return " ".join(head + [f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                            for k, v in over.items() if k != name_key])


def _section_option(axis: str, source: str, label: str, over: dict, base_json: dict, book) -> AxisOption:
    data = {**base_json, axis: {**base_json[axis], **over}}
    try:
        part = getattr(load_scenario(data, book), axis)
    except ScenarioError as e:
        raise SearchError(_prefixed(str(e), axis, source)) from None
    return AxisOption(axis=axis, source=source, label=label, part=part)


def _raw_gpu(space: SearchSpace, base: Scenario, book) -> list[tuple[str, str, object]]:
    """(source, kind, layouts or multiset) per GPU alternative, before validation and packing."""
    if space.layouts is None and space.partitions is None:
        return [("base.gpu", "base", None)]
    out: list[tuple[str, str, object]] = []
    if space.layouts == "all":
        gpu = book.catalog.gpu(base.gpu.sku)
        try:
            found = enumerate_layouts(gpu)
        except LayoutError as e:
            raise SearchError(f"layouts: {e}") from None
        out += [(f"layouts[all][{i}]", "layout", lay.labels()) for i, lay in enumerate(found)]
    elif space.layouts is not None:
        out += [(f"layouts[{i}]", "layout", lay) for i, lay in enumerate(space.layouts)]
    out += [(f"partitions[{i}]", "multiset", ms) for i, ms in enumerate(space.partitions or ())]
    return out


def _gpu_options(raw: list, base: Scenario, base_json: dict, book, notes: list[str]) -> list[AxisOption]:
    gpu0 = {**base_json["gpu"], "layout": None, "layouts": None, "shares": None}
    gpu = book.catalog.gpu(base.gpu.sku)
    out = []
    for source, kind, value in raw:
        if kind == "base":
            out.append(AxisOption(axis="gpu", source=source, label=_gpu_label(base.gpu), part=base.gpu))
            continue
        if kind == "layout":
            spec, label = {**gpu0, "layout": value}, None
        else:
            layouts = _packed(source, value, base, book, notes)
            if layouts is None:
                continue
            used = [lay for lay in layouts if lay]
            if len(used) < base.gpu.count:
                notes.append(f"{source}: packed onto {len(used)} of the base's {base.gpu.count} GPUs; the design "
                             f"has {len(used)}")
            spec = ({**gpu0, "count": 1, "layout": used[0]} if len(used) == 1
                    else {**gpu0, "count": len(used), "layouts": used})
            label = "+".join(f"{n}x{p}" for p, n in value.items())
        try:
            part = load_scenario({**base_json, "gpu": spec}, book).gpu
        except ScenarioError as e:
            msg = str(e)
            for section in ("gpu.layouts", "gpu.layout"):
                if msg.startswith(section):
                    msg = _prefixed(msg, section, source)
                    break
            else:
                msg = f"{source}: {msg}"
            raise SearchError(msg) from None
        if kind == "layout":  # placed ('1g.5gb@0'), so that a packed multiset and the same layout are one design
            part = part.model_copy(update={"layout": validate_layout(gpu, part.layout).labels()})
            label = " ".join(part.layout)
        out.append(AxisOption(axis="gpu", source=source, label=label, part=part))
    return out


def _packed(source: str, multiset: dict[str, int], base: Scenario, book, notes: list[str]) -> Optional[list]:
    """Per-GPU layout labels of a multiset, or None (with a note) when it cannot be packed."""
    gpu = book.catalog.gpu(base.gpu.sku)
    for name in multiset:  # a misspelt profile is an error, not a multiset to skip
        try:
            gpu.profile(name)
        except UnknownNameError as e:
            raise SearchError(f"{source}.{name}: {e}") from None
    try:
        layouts = pack(gpu, dict(multiset), base.gpu.count)
    except PackingError as e:
        notes.append(f"{source} {multiset} skipped: cannot be packed onto {base.gpu.count} x {gpu.sku}: {e}")
        return None
    return [lay.labels() for lay in layouts]


def _gpu_label(gpu: GpuSpec) -> str:
    if gpu.layout is not None:
        return " ".join(gpu.layout)
    if gpu.layouts is not None:
        return " / ".join(" ".join(lay) for lay in gpu.layouts)
    if gpu.shares is not None:
        return "GPU% " + ",".join(f"{s:g}" for s in gpu.shares)
    return "whole GPU"


def _dedupe(options: list[AxisOption], notes: list[str]) -> list[AxisOption]:
    """Alternatives that resolve to the same section are evaluated once."""
    seen: dict[str, AxisOption] = {}
    for o in options:
        key = o.part.model_dump_json()
        if key in seen:
            notes.append(f"{o.source} ({o.label}) repeats {seen[key].source}; evaluated once")
        else:
            seen[key] = o
    return list(seen.values())
