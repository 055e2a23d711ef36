"""Frozen models the analytic engine fills from its own numbers, built without validating them again.

made(cls, **fields) gives what cls.model_construct(**fields) gives for the hot path's result models (GpuPoint,
StagePoint: no defaults, aliases or private attributes, every field passed): the same __dict__ and fields set, in
about half the time (model_construct walks every field's aliases and defaults; a search builds ~4,000 of them).
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)
_set = object.__setattr__


def made(cls: type[M], **fields) -> M:
    """An instance of `cls` holding `fields` as given (engine-made values of the fields' types); TypeError unless
    they name every field of the model."""
    if fields.keys() != cls.__pydantic_fields__.keys():
        raise TypeError(f"{cls.__name__} takes the fields {sorted(cls.__pydantic_fields__)}, got {sorted(fields)}")
    m = cls.__new__(cls)
    _set(m, "__dict__", fields)
    _set(m, "__pydantic_fields_set__", set(fields))
    _set(m, "__pydantic_extra__", None)
    _set(m, "__pydantic_private__", None)
    return m
