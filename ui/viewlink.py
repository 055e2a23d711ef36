"""A page's own inputs read back from its link (?p=, ?t=): only values that fit the page's widgets get in.

A link is written by anyone: a value of the wrong JSON type, out of a number box's range or not among a
selectbox's options would make the widget raise (a traceback for the visitor). checked_view keeps each value
that has its default's type and fits the widget's rule, and names every one it drops.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence, Union

from engine.scenario import ScenarioError
from engine.io.urlstate import decode_view

Rule = Union[tuple, Sequence[Any]]  # (low, high) for a number box, the options of a choice
MAX_TEXT = 2_000  # characters of one text value from a link: a batch-size table is far shorter
SHOWN = 100  # characters of a dropped value quoted in the message


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= SHOWN else text[:SHOWN] + "..."


def _problem(value, default, rule) -> str | None:
    """Why `value` cannot stand in for `default` under `rule`, or None when it can."""
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, int):
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif isinstance(default, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    else:
        ok = isinstance(value, type(default))
    if not ok:
        return f"is not a {type(default).__name__}"
    if isinstance(value, str) and len(value) > MAX_TEXT:
        return f"is longer than {MAX_TEXT} characters"
    if isinstance(rule, tuple):
        low, high = rule
        if not low <= value <= high:
            return f"is not between {low:g} and {high:g}"
    elif rule is not None and value not in rule:
        return "is not one of the choices"
    return None


def checked_view(values: Mapping, defaults: Mapping, rules: Mapping[str, Rule]) -> tuple[dict, list[str]]:
    """(the values that fit, one 'key: value why' per value dropped); keys without a default are ignored."""
    good, problems = {}, []
    for key, value in values.items():
        if key not in defaults:
            continue
        why = _problem(value, defaults[key], rules.get(key))
        if why:
            problems.append(f"{key}: {_short(value)} {why}")
        else:
            good[key] = float(value) if isinstance(defaults[key], float) else value
    return good, problems


def view_from_link(token: str, defaults: Mapping, rules: Mapping[str, Rule]) -> tuple[dict, Optional[str]]:
    """(the link's inputs that fit the page's widgets, a one-line problem or None). A damaged token gives no
    inputs; a value that does not fit keeps its default and is named."""
    try:
        values = decode_view(token)
    except ScenarioError as e:
        return {}, str(e)
    good, problems = checked_view(values, defaults, rules)
    return good, ("; ".join(problems) + "; those keep their defaults") if problems else None
