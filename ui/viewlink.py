"""Every page keeps its inputs in its link, one way: `read_link` once, when the session first opens the page,
`write_link` on every run, `drop_link` on Reset. The parameter is the page's: ?s= a scenario (Design, Preprocessing,
RPC, Cost, Search), ?c= the pinned designs (Compare), ?p= and ?t= a view of the page's own widgets (Partitioning,
Tenancy; `PageView` does the whole round trip for them).

A link is written by anyone: a value of the wrong JSON type, out of a number box's range or not among a
selectbox's options would make the widget raise (a traceback for the visitor). checked_view keeps each value
that has its default's type and fits the widget's rule, and names every one it drops; a link that cannot be used
is named in one line, never a traceback.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Optional, Sequence, TypeVar, Union

import streamlit as st

from engine.errors import KneepointError
from engine.scenario import ScenarioError
from engine.io.urlstate import decode_view, encode_view
from ui.text import md

T = TypeVar("T")

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


def link_problem_shown(what: str, problem) -> None:
    """The one message for a link that cannot be used (or not all of it)."""
    st.error(f"The {what} in this link cannot be used: {md(problem)}")


def read_link(param: str, read: Callable[[str], T], what: str) -> Optional[T]:
    """`read` of the page's link token (?param=), or None when there is none or it cannot be used; a KneepointError
    from `read` is shown as 'The <what> in this link cannot be used: ...' and the page starts from its defaults."""
    token = st.query_params.get(param)
    if not token:
        return None
    try:
        return read(token)
    except KneepointError as error:
        link_problem_shown(what, error)
        return None


def write_link(param: str, token: str) -> None:
    """Put what the page shows into its link (?param=), so a copied link reproduces the view."""
    st.query_params[param] = token


def drop_link(param: str) -> None:
    """Take the page's inputs out of its link (Reset, Clear)."""
    st.query_params.pop(param, None)


class PageView:
    """A page whose link holds its own widgets' values (?p=, ?t=): `keys` are the widgets' session keys, `defaults()`
    their starting values and `rules()` what a link's value must fit (a number box's (low, high), a choice's
    options). Call start() before the widgets, publish() after them; reset is a button callback."""

    def __init__(self, param: str, keys: Sequence[str], defaults: Callable[[], dict], rules: Callable[[], dict]):
        self.param, self.keys, self.defaults, self.rules = param, tuple(keys), defaults, rules

    def _apply(self, values: Mapping) -> None:
        for key in self.keys:
            if key in values:
                st.session_state[key] = values[key]

    def _read(self, token: str) -> dict:
        values, problem = view_from_link(token, self.defaults(), self.rules())
        if problem:
            link_problem_shown("view", problem)
        return values

    def start(self) -> None:
        """First run in a session (the first key has no state): the defaults, then the link's values that fit.
        Later runs: a widget an earlier st.stop() skipped lost its state, so it gets its default back."""
        if self.keys[0] not in st.session_state:
            self._apply(self.defaults())
            self._apply(read_link(self.param, self._read, "view") or {})
        if any(key not in st.session_state for key in self.keys):
            for key, value in self.defaults().items():
                st.session_state.setdefault(key, value)

    def reset(self) -> None:
        """Button callback (runs before the widgets exist, so their values can be set): back to the defaults."""
        drop_link(self.param)
        self._apply(self.defaults())

    def publish(self) -> None:
        write_link(self.param, encode_view({key: st.session_state[key] for key in self.keys}))
