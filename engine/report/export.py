"""A report's files: HTML, tables as CSV and Parquet, the scenarios as JSON, PNG figures and a PDF.

Everything is rendered in memory first; then each file is written to a temporary name beside its
target and renamed into place, so a failure leaves no partly written file. PNG and PDF need a
Chromium (engine.report.static); without one they are skipped and the returned notes say why.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Optional

from pydantic import BaseModel, ConfigDict

from engine.io.exporters import write_atomic
from engine.report import tables as tables_mod
from engine.report.build import Report
from engine.report.figures import report_figures
from engine.report.html import payload, render_html
from engine.report.static import StaticUnavailable, figure_pngs, html_to_pdf
from engine.report.tables import csv_bytes, parquet_bytes, report_tables


class ExportResult(BaseModel):
    """What an export wrote, and why anything asked for was skipped."""

    model_config = ConfigDict(frozen=True)

    written: tuple[str, ...]
    notes: tuple[str, ...]


def scenarios_json(report: Report) -> bytes:
    """The report's scenarios (and how it was made) as JSON; engine.report.readback reads it back."""
    return (json.dumps(payload(report), indent=2) + "\n").encode()


def table_files(report: Report, fmt: str) -> dict[str, bytes]:
    """'<table>.csv' or '<table>.parquet' for every result table."""
    write = {"csv": csv_bytes, "parquet": parquet_bytes}[fmt]
    return {f"{name}.{fmt}": write(frame) for name, frame in report_tables(report).items()}


def readme(notes: list[str]) -> bytes:
    """README.txt of a table directory: what the files are, their columns, and what was skipped."""
    text = ("Kneepoint report tables. One CSV and one Parquet file per table (same columns); scenarios.json holds\n"
            "the scenarios (re-open them in Kneepoint's Report page); figures/ holds PNGs of the charts.\n\n"
            + tables_mod.__doc__.strip() + "\n")
    if notes:
        text += "\nSkipped:\n" + "".join(f"- {n}\n" for n in notes)
    return text.encode()


def png_files(report: Report, chromium: Optional[str] = None) -> dict[str, bytes]:
    """'figures/<figure id>.png' for every figure; raises StaticUnavailable."""
    return {f"figures/{fid}.png": png for fid, png in figure_pngs(report_figures(report), chromium).items()}


def zip_bytes(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(name, data)
    return buf.getvalue()


def export_report(report: Report, html_path: Optional[Path] = None, table_dir: Optional[Path] = None,
                  pdf_path: Optional[Path] = None, chromium: Optional[str] = None) -> ExportResult:
    """Write the files asked for; PNGs go with the tables (table_dir/figures)."""
    files: dict[Path, bytes] = {}
    notes: list[str] = []
    if table_dir is not None:
        for name, data in {**table_files(report, "csv"), **table_files(report, "parquet")}.items():
            files[table_dir / name] = data
        files[table_dir / "scenarios.json"] = scenarios_json(report)
        try:
            for name, data in png_files(report, chromium).items():
                files[table_dir / name] = data
        except StaticUnavailable as e:
            notes.append(f"PNG figures were not made: {e}")
        files[table_dir / "README.txt"] = readme(notes)
    html = render_html(report) if html_path or pdf_path else ""
    if html_path is not None:
        files[Path(html_path)] = html.encode()
    if pdf_path is not None:
        try:
            files[Path(pdf_path)] = html_to_pdf(html, chromium)
        except StaticUnavailable as e:
            notes.append(f"the PDF was not made: {e}")
    for path, data in files.items():
        write_atomic(path, data)
    return ExportResult(written=tuple(str(p) for p in files), notes=tuple(notes))
