"""Build every model's cost rows, validate them and render the seed CSV (byte-stable, sorted by model and op)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from engine.seed.records import TABLES
from tools.model_graphs import nlp, speech, vision

# via TABLES: importing engine.seed.cost_records first would enter its import cycle with engine.seed.records
OpCostRow = TABLES["model_costs"][0]

OUT = Path(__file__).resolve().parents[2] / "data" / "seed" / "model_costs.csv"
COLUMNS = list(OpCostRow.model_fields)  # `source` first, as every seed table


def build_rows() -> list[dict]:
    """All models' rows, sorted by (model, op); raises on a duplicate model or a row the schema refuses."""
    rows, seen = [], set()
    for builder in vision.BUILDERS + nlp.BUILDERS + speech.BUILDERS:
        g = builder()
        if g.model in seen:
            raise ValueError(f"two builders make {g.model!r}")
        seen.add(g.model)
        for r in g.rows:
            OpCostRow(**r)  # validate now: a bad row must stop curation, not the store build
        rows.extend(g.rows)
    return sorted(rows, key=lambda r: (r["model"], r["op"]))


def _cell(v) -> str:
    """Integral floats as integers (element and FLOP counts), None as empty, other floats in full precision."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() else repr(v)
    return str(v)


def render_csv(rows: list[dict]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for r in rows:
        w.writerow([_cell(r[c]) for c in COLUMNS])
    return buf.getvalue()
