"""Reports: one or more designs with their results, as HTML, CSV/Parquet, JSON, PNG and PDF.

build_report (build.py) evaluates the scenarios; render_html (html.py) writes one self-contained HTML
file with the scenarios embedded; report_tables (tables.py, which documents every column) gives the
CSV/Parquet tables; static.py makes PNG/PDF with a headless Chromium; readback.py recovers the
scenarios from a report; export.py writes the files atomically.
"""

from engine.report.build import REPORT_SCHEMA, DesignResult, LoadCurve, Report, build_report, engine_version
from engine.report.export import ExportResult, export_report, png_files, scenarios_json, table_files, zip_bytes
from engine.report.html import render_html
from engine.report.readback import ReportError, read_scenarios, scenario_dicts
from engine.report.static import StaticUnavailable, find_chromium, figure_pngs, html_to_pdf
from engine.report.tables import TABLE_NAMES, report_tables

__all__ = ["REPORT_SCHEMA", "DesignResult", "ExportResult", "LoadCurve", "Report", "ReportError", "StaticUnavailable",
           "TABLE_NAMES", "build_report", "engine_version", "export_report", "figure_pngs", "find_chromium",
           "html_to_pdf", "png_files", "read_scenarios", "render_html", "report_tables", "scenario_dicts",
           "scenarios_json", "table_files", "zip_bytes"]
