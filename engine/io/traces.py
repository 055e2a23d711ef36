"""Arrival traces: a CSV of timestamps, parsed from bytes (an upload) or read from the user's own local file (CLI).

A scenario never names a file (engine.workload_spec.TRACE_FILE_REFUSED): the Design page parses an uploaded trace
and the CLI reads `simulate --trace FILE`, both with `parse_trace_bytes`, into the inline
`workload.arrival.timestamps`. The format: one column of numbers, or a header naming the timestamp column
(timestamp, time, t, arrival, arrival_s, timestamp_s, time_s); blank lines and lines starting with # skipped;
rows in any order (the scenario sorts them). Errors name the file and the line, never the line's content
(a trace may be any file someone pointed us at; what it holds is not ours to show).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from engine.errors import KneepointError
from engine.contract import MAX_TIMESTAMP, MAX_TRACE_TIMESTAMPS
from engine.io.userfiles import UserFileError, read_bytes

#: largest trace file the CLI reads, in bytes: MAX_TRACE_TIMESTAMPS lines of a few numbers each fit many times
MAX_TRACE_BYTES = 16 * 1024 * 1024
#: seconds per unit of a trace's timestamps (workload.arrival.trace_unit)
TRACE_UNIT_S = {"s": 1.0, "ms": 1e-3, "us": 1e-6}
#: header names that mark the timestamp column
TIMESTAMP_COLUMNS = ("timestamp", "time", "t", "arrival", "arrival_s", "timestamp_s", "time_s")

__all__ = ["TraceError", "MAX_TRACE_BYTES", "TIMESTAMP_COLUMNS", "parse_trace_bytes", "parse_trace_upload",
           "read_trace_file", "mean_rate_rps"]


class TraceError(KneepointError):
    """A trace that cannot be used; the message names the file (or upload) and the line, not its content."""


def read_trace_file(path: str | os.PathLike) -> list[float]:
    """Timestamps from a local CSV file, read by the CLI's one reader of user files (engine.io.userfiles: a regular
    file only, never a FIFO, device or directory, at most MAX_TRACE_BYTES); raise TraceError naming the file."""
    try:
        data = read_bytes(path, "--trace", MAX_TRACE_BYTES)
    except UserFileError as e:
        raise TraceError(str(e)) from None
    return parse_trace_bytes(data, Path(str(path)).name)


def parse_trace_upload(data: bytes, name: str, limits) -> list[float]:
    """Timestamps from an uploaded trace (the Design page): the upload limits (engine.hosting.UploadLimits: bytes
    and rows) first, then parse_trace_bytes; TraceError names the file and the line."""
    where = Path(str(name)).name[:100] or "upload"
    if len(data) > limits.max_bytes:
        raise TraceError(f"{where}: {len(data):,} bytes is over the upload limit of {limits.max_mb} MB")
    stamps = parse_trace_bytes(data, where)  # bounded by the byte limit and MAX_TRACE_TIMESTAMPS
    if len(stamps) > limits.max_rows:
        raise TraceError(f"{where}: {len(stamps):,} timestamps is over the upload limit of {limits.max_rows:,} rows")
    return stamps


def mean_rate_rps(timestamps: list[float], unit: str = "s") -> float:
    """The trace's mean arrival rate in requests/s: arrivals after the first over the time they span."""
    span = (max(timestamps) - min(timestamps)) * TRACE_UNIT_S[unit]
    return (len(timestamps) - 1) / span if len(timestamps) > 1 and span > 0 else 0.0


def parse_trace_bytes(data: bytes, where: str = "trace") -> list[float]:
    """Timestamps (in the trace's own unit) from the bytes of a CSV; raise TraceError naming `where` and the
    line. At most MAX_TRACE_TIMESTAMPS, each finite and in [0, MAX_TIMESTAMP]; the order is left as given."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise TraceError(f"{where}: not UTF-8 text (bad byte at offset {e.start})") from None
    rows = [(i + 1, line) for i, line in enumerate(text.splitlines())
            if line.strip() and not line.lstrip().startswith("#")]
    if not rows:
        raise TraceError(f"{where}: no timestamps")
    column, rows = _timestamp_column(rows, where)
    if len(rows) > MAX_TRACE_TIMESTAMPS:
        raise TraceError(f"{where}: {len(rows):,} timestamps is over the limit of {MAX_TRACE_TIMESTAMPS:,}")
    return [_timestamp(line, text_of_line, column, where) for line, text_of_line in rows]


def _timestamp_column(rows: list[tuple[int, str]], where: str) -> tuple[int, list[tuple[int, str]]]:
    """The column holding timestamps (0 without a header) and the data rows."""
    first = [cell.strip().lower() for cell in rows[0][1].split(",")]
    try:
        float(first[0])
        return 0, rows
    except ValueError:
        pass
    hits = [i for i, cell in enumerate(first) if cell in TIMESTAMP_COLUMNS]
    if not hits:
        raise TraceError(f"{where}: line {rows[0][0]}: no timestamp column; the first line is a number, or a header "
                         f"naming one of {', '.join(TIMESTAMP_COLUMNS)}")
    return hits[0], rows[1:]


def _timestamp(line: int, text: str, column: int, where: str) -> float:
    cells = text.split(",")
    try:
        value = float(cells[column])
    except (ValueError, IndexError):
        raise TraceError(f"{where}: line {line}: column {column + 1} is not a number") from None
    if not math.isfinite(value) or not 0 <= value <= MAX_TIMESTAMP:
        raise TraceError(f"{where}: line {line}: a timestamp must be a finite number in [0, {MAX_TIMESTAMP:g}]")
    return value
