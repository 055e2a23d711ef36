"""Scenarios back from a report: its HTML (the embedded JSON), its JSON, a scenario list or one scenario."""

from __future__ import annotations

import json
import re

from engine.report.build import REPORT_SCHEMA
from engine.report.html import PAYLOAD_ID
from engine.scenario import SCHEMA_ID, Scenario, ScenarioError, load_scenario

_PAYLOAD = re.compile(r'<script[^>]*\bid="' + re.escape(PAYLOAD_ID) + r'"[^>]*>(.*?)</script>', re.S)


class ReportError(ScenarioError):
    """The file holds no scenarios Kneepoint can read; the message says why."""


def _text(content: str | bytes, source: str) -> str:
    if isinstance(content, str):
        return content
    try:
        return content.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ReportError(f"{source}: not UTF-8 text (expected a Kneepoint report's .html or .json)") from None


def scenario_dicts(content: str | bytes, source: str = "the file") -> list[dict]:
    """The scenarios in a report HTML, a report JSON ({"schema": "kneepoint.report/1", "scenarios": [...]}),
    a JSON list of scenarios, or one scenario object; as plain dicts, not yet validated."""
    text = _text(content, source).strip()
    if text.startswith("<"):
        m = _PAYLOAD.search(text)
        if not m:
            raise ReportError(f"{source}: this HTML has no embedded Kneepoint scenarios (script "
                              f"id={PAYLOAD_ID!r}); was it written by Kneepoint's report?")
        text = m.group(1)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ReportError(f"{source}: not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    if isinstance(data, dict) and "scenarios" in data:
        if data.get("schema") not in (None, REPORT_SCHEMA):
            raise ReportError(f"{source}: schema {data.get('schema')!r} is not {REPORT_SCHEMA!r}")
        data = data["scenarios"]
    elif isinstance(data, dict):
        if data.get("schema", SCHEMA_ID) != SCHEMA_ID:
            raise ReportError(f"{source}: schema {data.get('schema')!r} is neither {SCHEMA_ID!r} nor {REPORT_SCHEMA!r}")
        data = [data]
    if not isinstance(data, list) or not data or not all(isinstance(d, dict) for d in data):
        raise ReportError(f"{source}: expected a report, a list of scenarios or one scenario object")
    return data


def read_scenarios(content: str | bytes, book=None, source: str = "the file") -> list[Scenario]:
    """The file's scenarios, validated (against `book` when given); a bad one is named with its field."""
    out = []
    for i, d in enumerate(scenario_dicts(content, source), start=1):
        try:
            out.append(load_scenario(d, book))
        except ScenarioError as e:
            name = d.get("name")
            raise ReportError(f"{source}: scenario {i}" + (f" ({name!r})" if name else "") + f": {e}") from None
    return out
