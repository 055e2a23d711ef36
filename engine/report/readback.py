"""Scenarios back from a report: its HTML (the embedded JSON), its JSON, a scenario list or one scenario.

Anyone may hand the Report page or the CLI a file, so reading one is bounded: its size is checked against
REPORT_MAX_BYTES before it is read, and the embedded JSON is found by fixed markers in one pass over the text
(a regular expression with two unbounded parts took minutes on a few hundred kilobytes of crafted input).
"""

from __future__ import annotations

import json
from typing import Optional

from engine.report.build import REPORT_SCHEMA
from engine.report.html import PAYLOAD_ID
from engine.scenario import SCHEMA_ID, Scenario, ScenarioError, load_scenario

#: the largest file read back as a report: one is about 5 MB (plotly.js is inlined) plus tens of kB per design
REPORT_MAX_BYTES = 20 * 1024 * 1024
_OPEN_TAG, _CLOSE_TAG = "<script", "</script>"
_PAYLOAD_ATTR = f'id="{PAYLOAD_ID}"'


class ReportError(ScenarioError):
    """The file holds no scenarios Kneepoint can read; the message says why."""


def _text(content: str | bytes, source: str) -> str:
    if isinstance(content, str):
        return content
    try:
        return content.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ReportError(f"{source}: not UTF-8 text (expected a Kneepoint report's .html or .json)") from None


def check_report_size(size: int, source: str = "the file") -> None:
    """ReportError if `size` bytes is more than a report may be (REPORT_MAX_BYTES); call before reading it."""
    if size > REPORT_MAX_BYTES:
        raise ReportError(f"{source}: {size / 2**20:.1f} MB is larger than the {REPORT_MAX_BYTES / 2**20:g} MB a "
                          "Kneepoint report may be")


def embedded_payload(text: str) -> Optional[str]:
    """The text inside `<script ... id="kneepoint-report" ...>`, or None. One pass: every search starts where
    the previous one ended, so each character is looked at a bounded number of times (linear time)."""
    pos = 0
    while True:
        start = text.find(_OPEN_TAG, pos)
        if start < 0:
            return None
        tag_end = text.find(">", start)
        if tag_end < 0:
            return None
        close = text.find(_CLOSE_TAG, tag_end)
        if close < 0:
            return None
        if _PAYLOAD_ATTR in text[start:tag_end]:
            return text[tag_end + 1:close]
        pos = close + len(_CLOSE_TAG)  # skip the script's body: a `<script` inside it starts nothing


def scenario_dicts(content: str | bytes, source: str = "the file") -> list[dict]:
    """The scenarios in a report HTML, a report JSON ({"schema": "kneepoint.report/1", "scenarios": [...]}),
    a JSON list of scenarios, or one scenario object; as plain dicts, not yet validated."""
    check_report_size(len(content), source)
    text = _text(content, source).strip()
    if text.startswith("<"):
        payload = embedded_payload(text)
        if payload is None:
            raise ReportError(f"{source}: this HTML has no embedded Kneepoint scenarios (script "
                              f"id={PAYLOAD_ID!r}); was it written by Kneepoint's report?")
        text = payload
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ReportError(f"{source}: not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    except RecursionError:
        raise ReportError(f"{source}: the JSON is nested too deeply to be a Kneepoint report") from None
    except ValueError as e:  # e.g. an integer with more digits than Python converts
        raise ReportError(f"{source}: not valid JSON: {str(e)[:100]}") from None
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
