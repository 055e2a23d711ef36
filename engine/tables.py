"""How a table of engine results reads: each column's header in words with its unit, and its numbers with as
many digits as the data carry.

Pages and reports keep the engine's field names as their columns (tests, exports and links read them); this
module turns a name into the header a person reads, from the results' own LABELS first and otherwise from the
unit suffix the engine's names follow (`_ms`, `_rps`, `_usd`, ...), and picks one number format per column.
"""

from __future__ import annotations

import math
import re
from typing import Any, Iterable

from engine.results import (AnalyticPartition, CostSummary, LatencySummary, SimulatedPartition, SlaOutcome)

#: how many significant digits a column's typical value shows; more would be noise for modelled numbers
SIGNIFICANT = 3
#: most decimals any column shows
MAX_DECIMALS = 3

#: unit suffixes of the engine's field names -> the unit a header names
UNIT_SUFFIXES = {"ms": "ms", "us": "us", "s": "s", "rps": "req/s", "usd": "USD", "w": "W", "kwh": "kWh",
                 "gbps": "Gbit/s", "gb": "GB", "mb": "MB", "bytes": "B", "pct": "%", "cores": "cores"}
#: words spelled otherwise in a header
WORDS = {"sla": "SLA", "p50": "p50", "p95": "p95", "p99": "p99", "gpu": "GPU", "gpus": "GPUs", "cpu": "CPU",
         "dpu": "DPU", "mig": "MIG", "rpc": "RPC", "tco": "TCO", "capex": "CAPEX", "opex": "OPEX", "pue": "PUE",
         "e2e": "E2E", "sm": "SM", "sms": "SMs", "gpcs": "GPCs", "id": "ID", "rms": "RMS", "rel": "relative",
         "fifs": "FIFS", "elsa": "ELSA", "arm": "ARM", "nic": "NIC", "pcie": "PCIe", "usd": "USD", "cus": "CUs",
         "max": "max", "batch": "batch", "len": "length", "rps": "req/s", "w": "W", "qps": "queries/s"}

_SNAKE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)+$")


def _known() -> dict[str, str]:
    """Field -> header from every result model's LABELS (later models win a shared name: all agree on units)."""
    out: dict[str, str] = {}
    for model in (LatencySummary, SlaOutcome, CostSummary, AnalyticPartition, SimulatedPartition):
        out.update(model.LABELS)
    out.update({"rate_rps": "offered load (req/s)", "capacity_rps": "capacity (req/s)",
                "sla_bounded_rps": "SLA-bounded throughput (req/s)", "sla_latency_ms": "SLA bound (ms)",
                "sla_met": "meets SLA", "mean_ms": "mean latency (ms)", "p50_ms": "p50 latency (ms)",
                "p95_ms": "p95 latency (ms)", "p99_ms": "p99 latency (ms)", "tail_ms": "tail latency (ms)",
                "batch_max": "Batch_max", "unstable_reason": "why unstable"})
    return out


KNOWN = _known()


def is_snake(name: str) -> bool:
    """Whether `name` reads as a code identifier (words joined by underscores) rather than words."""
    return bool(_SNAKE.match(name))


def header(name: str) -> str:
    """The header of column `name`: its label with unit from the results' LABELS, else built from the name's
    words and unit suffix ('queue_wait_ms' -> 'queue wait (ms)'); a name that is already words stays as it is.
    A ratio names its unit in words ('queries_per_usd' -> 'queries per USD'), never as a bare '(USD)'."""
    if name in KNOWN:
        return KNOWN[name]
    if not is_snake(name):
        return name
    words = name.split("_")
    unit = None
    if len(words) > 1 and words[-1] in UNIT_SUFFIXES and words[-2] != "per":
        unit = UNIT_SUFFIXES[words.pop()]
    text = " ".join(WORDS.get(w, w) for w in words)
    return f"{text} ({unit})" if unit else text


def is_number(v: Any) -> bool:
    """Whether `v` is a number (not a bool)."""
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        v = v.item()
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_number = is_number


def decimals(values: Iterable[Any]) -> int:
    """Decimals for a column: none when every value is whole, else enough for SIGNIFICANT digits of the median
    magnitude of its finite, non-zero values (at most MAX_DECIMALS)."""
    nums = [abs(float(v)) for v in values if _number(v) and math.isfinite(v)]
    if all(float(v).is_integer() for v in nums):
        return 0
    mags = sorted(v for v in nums if v > 0)
    if not mags:
        return 0
    typical = mags[len(mags) // 2]
    return max(0, min(MAX_DECIMALS, SIGNIFICANT - 1 - math.floor(math.log10(typical))))


def cell(v: Any, places: int) -> str:
    """One value as text: blank for a missing one, yes/no, 'unbounded' for infinity, numbers with thousands
    separators and `places` decimals; anything else as its text (a list joined by commas)."""
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        v = v.item()  # numpy scalar -> Python
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if _number(v):
        if math.isinf(v):
            return "unbounded" if v > 0 else "-unbounded"
        return f"{v:,.{places}f}"
    if isinstance(v, (list, tuple)):
        return ", ".join(cell(x, 0 if _number(x) and float(x).is_integer() else places) for x in v)
    return str(v)


def formatter(values: Iterable[Any]):
    """The text of each value of one column: cell() at the column's decimals()."""
    places = decimals(list(values))
    return lambda v: cell(v, places)
