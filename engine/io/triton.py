"""Parsers for Triton's measurement files: perf_analyzer `-f` CSV and Model Analyzer metrics-model-inference.csv.

Pure functions: bytes or a path plus the fields the user gives (model, GPU, partition, ...) in, an
ImportResult out with `load_points` (one LoadPointRow per load level, the server-side breakdown kept)
and `latency_points` (one LatencyPointRow per client batch size, derived from the lowest-load row:
mean_ms = server compute input + infer + output, the GPU service time; throughput = batch / mean).
The whole file is read and checked before anything is returned; the first problem raises
ImportFailed naming the file, line (header = line 1) and column. Catalogue checks and writing:
engine.io.importers.

Units: perf_analyzer writes microseconds (converted here to ms) and inferences (items) per second;
Model Analyzer writes ms and infer/sec. A blank line ends the table (later sections are ignored).
"""

from __future__ import annotations

import csv
import io
import math
from typing import Optional

from pydantic import ValidationError

from engine.errors import error_message, error_path, excerpt
from engine.io.import_common import decode, ImportFailed, ImportResult, read_bytes, Source
from engine.seed.records import MAX_TEXT_CHARS, PRECISIONS, LatencyPointRow, LoadPointRow

# Column names are matched ignoring case and repeated spaces, and Model Analyzer's ' time (ms)' as ' (ms)'
# (its headers vary by version: 'Server Queue time (ms)' / 'Server Queue (ms)').
# perf_analyzer columns -> LoadPointRow field; all required, microseconds
PA_TIMES = {"Client Send": "client_send_ms", "Network+Server Send/Recv": "network_ms", "Server Queue": "server_queue_ms",
            "Server Compute Input": "compute_input_ms", "Server Compute Infer": "compute_infer_ms",
            "Server Compute Output": "compute_output_ms", "Client Recv": "client_recv_ms"}
PA_PCT = {"p50 latency": "p50_ms", "p90 latency": "p90_ms", "p95 latency": "p95_ms", "p99 latency": "p99_ms"}
LOADS = {"Concurrency": "concurrency", "Request Rate": "request_rate"}

# Model Analyzer columns -> field (ms); only Batch, the load, Throughput and p99 are required
MA_TIMES = {"Client Send (ms)": "client_send_ms", "Client Recv (ms)": "client_recv_ms",
            "Server Queue (ms)": "server_queue_ms", "Server Compute Input (ms)": "compute_input_ms",
            "Server Compute Infer (ms)": "compute_infer_ms", "Server Compute Output (ms)": "compute_output_ms"}
MA_PCT = {"p50 Latency (ms)": "p50_ms", "p90 Latency (ms)": "p90_ms", "p95 Latency (ms)": "p95_ms",
          "p99 Latency (ms)": "p99_ms", "Avg Latency (ms)": "avg_ms"}
MA_EXTRA = {"Instance Group": "instance group", "Max Batch Size": "max batch", "Satisfies Constraints": "satisfies constraints",
            "GPU Memory Usage (MB)": "GPU memory MB", "Max GPU Memory Usage (MB)": "max GPU memory MB",
            "GPU Utilization (%)": "GPU utilisation %", "Average GPU Utilization (%)": "avg GPU utilisation %",
            "GPU Power Usage (W)": "GPU power W", "Max GPU Power Usage (W)": "max GPU power W"}
MODEL, CONFIG, BATCH, THROUGHPUT = "Model", "Model Config Path", "Batch", "Throughput (infer/sec)"
COMPUTE = ("compute_input_ms", "compute_infer_ms", "compute_output_ms")


#: the most names (columns, models, configs) an error lists: a file may hold thousands
LISTED_NAMES = 12


def _some(names: list[str]) -> str:
    """Names for an error message: the first LISTED_NAMES, each cut short, and how many there are in all."""
    shown = ", ".join(n if len(n) <= 100 else excerpt(n) for n in names[:LISTED_NAMES])
    return shown if len(names) <= LISTED_NAMES else f"{shown}, ... ({len(names):,} in all)"


def _key(header: str) -> str:
    return " ".join(header.lower().split()).replace(" time (ms)", " (ms)")


class _Table:
    """A Triton CSV: header, data rows with their line numbers, and column lookup by normalised name."""

    def __init__(self, data: bytes, where: str):
        self.where, self.notes = where, []
        reader = csv.reader(io.StringIO(decode(data, where)))
        try:
            self.header = [h.strip() for h in next(reader, [])]
            while self.header and not self.header[-1]:
                self.header.pop()  # a trailing comma
            if not self.header:
                raise ImportFailed(f"{where}: the file is empty (no header row)")
            self._check_lengths(1, self.header)
            self.rows: list[tuple[int, list[str]]] = []
            for cells in reader:
                if not any(c.strip() for c in cells):
                    blank = reader.line_num
                    rest = sum(1 for c in reader if any(x.strip() for x in c))
                    if rest:
                        self.notes.append(f"ignored {rest} line(s) after the blank line {blank}")
                    break
                if len(cells) < len(self.header) or any(c.strip() for c in cells[len(self.header):]):
                    raise ImportFailed(f"{where}: line {reader.line_num}: {len(cells)} values for "
                                       f"{len(self.header)} header columns")
                self._check_lengths(reader.line_num, cells)
                self.rows.append((reader.line_num, cells))
        except csv.Error as e:  # e.g. a cell over csv's own field size limit: say where it stopped
            raise ImportFailed(f"{where}: line {reader.line_num + 1}: not a readable CSV file ({e})") from None
        if not self.rows:
            raise ImportFailed(f"{where}: no rows under the header")
        self.col = {_key(h): i for i, h in enumerate(self.header)}

    def _check_lengths(self, line: int, cells: list[str]) -> None:
        """Refuse a cell over MAX_TEXT_CHARS, by line and column, without repeating it."""
        for i, cell in enumerate(cells):
            if len(cell) > MAX_TEXT_CHARS:
                column = repr(self.header[i]) if line > 1 and i < len(self.header) else f"{i + 1}"
                raise ImportFailed(f"{self.where}: line {line}: column {column}: {len(cell):,} characters, over the "
                                   f"limit of {MAX_TEXT_CHARS:,}")

    def has(self, name: str) -> bool:
        return _key(name) in self.col

    def label(self, name: str) -> str:
        """The column's name as the file spells it."""
        return self.header[self.col[_key(name)]] if self.has(name) else name

    def require(self, *names: str) -> None:
        missing = [n for n in names if not self.has(n)]
        if missing:
            raise ImportFailed(f"{self.where}: line 1: missing column(s) {', '.join(missing)}; "
                               f"the header has: {_some(self.header)}")

    def text(self, cells: list[str], name: str) -> str:
        return cells[self.col[_key(name)]].strip() if self.has(name) else ""

    def number(self, line: int, cells: list[str], name: str, *, positive: bool = False,
               optional: bool = False, scale: float = 1.0) -> Optional[float]:
        """The cell as a float divided by `scale`; empty -> None where optional."""
        if not self.has(name):
            return None
        label, s = self.label(name), self.text(cells, name)
        where = f"{self.where}: line {line}: field {label!r}"
        if s == "":
            if optional:
                return None
            raise ImportFailed(f"{where}: empty; a number is needed")
        try:
            v = float(s)
        except ValueError:
            v = math.nan
        if not math.isfinite(v):
            raise ImportFailed(f"{where}: {excerpt(s)} is not a number")
        if v < 0 or (positive and v == 0):
            raise ImportFailed(f"{where}: {excerpt(s)} must be {'greater than 0' if positive else 'at least 0'}")
        return v / scale if scale != 1.0 else v


def _given(where: str, model: Optional[str], precision: str, framework: str, batch: Optional[int],
           source: str) -> None:
    if model is not None and not str(model).strip():
        raise ImportFailed(f"{where}: field 'model': a model name is needed")
    if precision not in PRECISIONS:
        raise ImportFailed(f"{where}: field 'precision': {excerpt(precision)} is not a precision; valid: {', '.join(PRECISIONS)}")
    if not framework.strip():
        raise ImportFailed(f"{where}: field 'framework': a framework name is needed")
    if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int) or batch < 1):
        raise ImportFailed(f"{where}: field 'batch': {excerpt(batch)} is not a whole number >= 1")
    if len(source.strip()) < 3:
        raise ImportFailed(f"{where}: field 'source': {excerpt(source)} is too short (3 characters at least)")


def _row(model_cls, where: str, line: Optional[int], **values):
    try:
        return model_cls(**values)
    except ValidationError as e:
        err = e.errors(include_context=False, include_url=False)[0]
        msg = error_message(err)
        failure = f"field {error_path(err)!r}: {msg}" if err["loc"] else msg
    # raised outside the handler: pydantic's error (and the frames it holds) is not chained to ours
    raise ImportFailed(f"{where}: {'line ' + str(line) + ': ' if line else ''}{failure}")


def _service_point(low: LoadPointRow, line: int, tool: str, where: str) -> LatencyPointRow:
    """The latency point of `low` (a lowest-load row): server compute time as the GPU service time."""
    mean = round(sum(getattr(low, c) for c in COMPUTE), 9)
    if mean <= 0:
        raise ImportFailed(f"{where}: line {line}: the server compute time of the lowest-load row is 0 ms; "
                           "no latency point can be derived")
    note = (f"derived from {tool}'s lowest-load row ({low.load_kind.value.replace('_', ' ')} {low.load:g}, "
            f"{where} line {line}): mean = server compute input + infer + output, the GPU service time at this "
            f"client batch; throughput = batch / mean; tails left empty ({tool}'s percentiles are end-to-end)")
    return _row(LatencyPointRow, where, line, source=low.source, model=low.model, sku=low.sku,
                partition=low.partition, precision=low.precision, framework=low.framework, batch=low.batch,
                mean_ms=mean, throughput=round(low.batch * 1000.0 / mean, 6), kind="measured",
                measured_on=low.measured_on, note=note)


# --------------------------------------------------------------------------- perf_analyzer

def parse_perf_analyzer(source: Source, *, model: str, gpu: str, partition: str, batch: int,
                        precision: str = "fp16", framework: str = "triton", source_ref: Optional[str] = None,
                        measured_on: str = "", name: Optional[str] = None) -> ImportResult:
    """A perf_analyzer `-f` CSV: one load curve at client batch `batch`, on `gpu` / `partition`.

    Columns: `Concurrency` or `Request Rate`, `Inferences/Second`, `Client Send`,
    `Network+Server Send/Recv`, `Server Queue`, `Server Compute Input`, `Server Compute Infer`,
    `Server Compute Output`, `Client Recv`, `p50/p90/p95/p99 latency` (microseconds), optionally
    `Avg latency`; other columns are ignored. Rows come in any order (perf_analyzer sorts by throughput).
    """
    data, where = read_bytes(source, name)
    src = source_ref or f"perf_analyzer {where}"
    _given(where, model, precision, framework, batch, src)
    t = _Table(data, where)
    load_col = next((c for c in LOADS if t.has(c)), None)
    if load_col is None:
        raise ImportFailed(f"{where}: line 1: missing column Concurrency or Request Rate; "
                           f"the header has: {_some(t.header)}")
    t.require("Inferences/Second", *PA_TIMES, *PA_PCT)
    rows, lines, seen = [], [], {}
    for line, cells in t.rows:
        load = t.number(line, cells, load_col, positive=True)
        if load in seen:
            raise ImportFailed(f"{where}: line {line}: duplicate of line {seen[load]} (same {t.label(load_col)} {load:g})")
        seen[load] = line
        values = {f: t.number(line, cells, c, scale=1000.0) for c, f in PA_TIMES.items()}
        values |= {f: t.number(line, cells, c, positive=True, scale=1000.0) for c, f in PA_PCT.items()}
        values["avg_ms"] = t.number(line, cells, "Avg latency", positive=True, optional=True, scale=1000.0)
        rows.append(_row(LoadPointRow, where, line, source=src, model=model, sku=gpu, partition=partition,
                         precision=precision, framework=framework, batch=batch, load_kind=LOADS[load_col], load=load,
                         throughput=t.number(line, cells, "Inferences/Second", positive=True), kind="measured",
                         measured_on=measured_on, note=f"perf_analyzer CSV {where} line {line}; times from microseconds",
                         **values))
        lines.append(line)
    low = min(range(len(rows)), key=lambda i: rows[i].load)
    point = _service_point(rows[low], lines[low], "perf_analyzer", where)
    return ImportResult(where, {"load_points": rows, "latency_points": [point]}, t.notes)


# --------------------------------------------------------------------------- Model Analyzer

def parse_model_analyzer(source: Source, *, gpu: str, partition: str, model: Optional[str] = None,
                         triton_model: Optional[str] = None, config: Optional[str] = None,
                         precision: str = "fp16", framework: str = "triton", source_ref: Optional[str] = None,
                         measured_on: str = "", name: Optional[str] = None) -> ImportResult:
    """Model Analyzer `metrics-model-inference.csv`: load points per (Batch, Concurrency) row.

    Needs `Batch`, `Concurrency` (or `Request Rate`), `Throughput (infer/sec)` and `p99 Latency (ms)`;
    uses `Model`, `Model Config Path`, the other latency columns and the server breakdown where present
    (ms). `model` names the project model (default: the file's Model column); `triton_model` and
    `config` keep only the rows of one Triton model / one model config (a file usually holds several
    configs, which would repeat the same batch and concurrency).
    """
    data, where = read_bytes(source, name)
    src = source_ref or f"Model Analyzer {where}"
    _given(where, model, precision, framework, None, src)
    t = _Table(data, where)
    load_col = next((c for c in LOADS if t.has(c)), None)
    if load_col is None:
        raise ImportFailed(f"{where}: line 1: missing column Concurrency or Request Rate; "
                           f"the header has: {_some(t.header)}")
    t.require(BATCH, THROUGHPUT, "p99 Latency (ms)", *([MODEL] if model is None or triton_model else []))
    picked = t.rows
    for value, col, flag in ((triton_model, MODEL, "--triton-model"), (config, CONFIG, "--config")):
        if value is not None:
            t.require(col)
            have = sorted({t.text(c, col) for _, c in picked})
            picked = [(n, c) for n, c in picked if t.text(c, col) == value]
            if not picked:
                raise ImportFailed(f"{where}: field {t.label(col)!r}: no row has {excerpt(value)} ({flag}); "
                                   f"the file has: {_some(have)}")
    triton_models = sorted({t.text(c, MODEL) for _, c in picked})
    if model is not None and len(triton_models) > 1:
        raise ImportFailed(f"{where}: the file holds several models ({_some(triton_models)}); "
                           "choose one with --triton-model")
    configs = sorted({t.text(c, CONFIG) for _, c in picked})
    rows, lines, seen, notes = [], [], {}, list(t.notes)
    for line, cells in picked:
        b = t.number(line, cells, BATCH, positive=True)
        if not float(b).is_integer():
            raise ImportFailed(f"{where}: line {line}: field {t.label(BATCH)!r}: {b:g} is not a whole number")
        name_ = model or t.text(cells, MODEL)
        load = t.number(line, cells, load_col, positive=True)
        k = (name_, int(b), load)
        if k in seen:
            hint = f"; the file holds several model configs ({_some(configs)}): pick one with --config" \
                if len(configs) > 1 else ""
            raise ImportFailed(f"{where}: line {line}: duplicate of line {seen[k]} (same model, batch and "
                               f"{t.label(load_col)}){hint}")
        seen[k] = line
        values = {f: t.number(line, cells, c, optional=True) for c, f in MA_TIMES.items()}
        values |= {f: t.number(line, cells, c, positive=True, optional=f != "p99_ms") for c, f in MA_PCT.items()}
        extra = [f"{label} {t.text(cells, c)}" for c, label in MA_EXTRA.items() if t.text(cells, c)]
        cfg = t.text(cells, CONFIG)
        note = "; ".join([f"Model Analyzer {where} line {line}"] + ([f"config {cfg}"] if cfg else []) + extra)
        rows.append(_row(LoadPointRow, where, line, source=src, model=name_, sku=gpu, partition=partition,
                         precision=precision, framework=framework, batch=int(b), load_kind=LOADS[load_col], load=load,
                         throughput=t.number(line, cells, THROUGHPUT, positive=True), kind="measured",
                         measured_on=measured_on, note=note, **values))
        lines.append(line)
    points = []
    for mb in sorted({(r.model, r.batch) for r in rows}):
        low = min((i for i, r in enumerate(rows) if (r.model, r.batch) == mb), key=lambda i: rows[i].load)
        if any(getattr(rows[low], c) is None for c in COMPUTE):
            notes.append(f"no latency point for {mb[0]} batch {mb[1]}: line {lines[low]} lacks Server Compute "
                         "Input/Infer/Output (add perf_server_compute_* to inference_output_fields)")
            continue
        points.append(_service_point(rows[low], lines[low], "Model Analyzer", where))
    return ImportResult(where, {"load_points": rows, "latency_points": points}, notes)
