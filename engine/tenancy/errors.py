"""The one error type of the tenancy models, and the input checks that raise it."""

from __future__ import annotations

import math
from numbers import Integral, Real
from engine.errors import KneepointError


class TenancyError(KneepointError):
    """A tenancy question with bad input or no answer; the message names the field and value."""


def _number(value) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value)


def positive(name: str, value) -> float:
    """`value` as a float if it is a finite number > 0, else a TenancyError naming `name`."""
    if not _number(value) or value <= 0:
        raise TenancyError(f"{name} must be a number > 0, got {value!r}")
    return float(value)


def non_negative(name: str, value) -> float:
    if not _number(value) or value < 0:
        raise TenancyError(f"{name} must be a number >= 0, got {value!r}")
    return float(value)


def gpu_pct(name: str, value) -> float:
    """A GPU% share (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE): in (0, 100]."""
    if not _number(value) or not 0 < value <= 100:
        raise TenancyError(f"{name} must be a GPU% in (0, 100], got {value!r}")
    return float(value)


def whole(name: str, value, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < low:
        raise TenancyError(f"{name} must be a whole number >= {low}, got {value!r}")
    return int(value)
