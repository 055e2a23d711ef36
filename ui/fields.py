"""Widget limits and choices read from the Scenario contract (engine.scenario), so a page's number box takes what the
scenario takes and a selectbox offers what it accepts: one place to change a bound, never two that drift apart."""

from __future__ import annotations

import enum
import typing
from typing import Any, Optional

import annotated_types
from pydantic import BaseModel


def field_range(model: type[BaseModel], name: str, low: Optional[float] = None,
                high: Optional[float] = None) -> tuple[Any, Any]:
    """(lowest, highest) value of field `name` of a Scenario part, from its ge/gt and le/lt bounds, as a number box's
    min_value and max_value. `low` / `high` stand in where the field's bound is exclusive (gt, lt: a number box has
    none), or where the widget's own sentinel sits outside the field (0 = 'use the default' for an optional field)."""
    bounds = {"low": low, "high": high}
    for item in model.model_fields[name].metadata:
        if isinstance(item, annotated_types.Ge) and bounds["low"] is None:
            bounds["low"] = item.ge
        elif isinstance(item, annotated_types.Le) and bounds["high"] is None:
            bounds["high"] = item.le
        elif isinstance(item, (annotated_types.Gt, annotated_types.Lt)):
            side = "low" if isinstance(item, annotated_types.Gt) else "high"
            if bounds[side] is None:
                raise ValueError(f"{model.__name__}.{name} has an exclusive bound: give `{side}` for the widget")
    if bounds["low"] is None or bounds["high"] is None:
        raise ValueError(f"{model.__name__}.{name} has no bound on both sides: give the widget's own")
    annotation = model.model_fields[name].annotation
    whole = annotation is int or int in typing.get_args(annotation)  # int or Optional[int]: a box of whole numbers
    kind = int if whole else float  # a number box refuses a min, max and value of mixed types
    return kind(bounds["low"]), kind(bounds["high"])


def field_choices(model: type[BaseModel], name: str) -> list[str]:
    """The values field `name` of a Scenario part accepts (its Literal or StrEnum), in the contract's order."""
    annotation = model.model_fields[name].annotation
    for part in (annotation, *typing.get_args(annotation)):  # Optional[Literal[...]] holds the Literal inside
        if typing.get_origin(part) is typing.Literal:
            return list(typing.get_args(part))
        if isinstance(part, type) and issubclass(part, enum.Enum):
            return [member.value for member in part]
    raise ValueError(f"{model.__name__}.{name} is not a choice")
