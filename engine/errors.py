"""The one base of every error the engine raises for a user to read (simpy's `SimPyException` is the model).

A page or the CLI catches `KneepointError` and shows its message; anything else is a bug and is left to fail
loudly (a test, a logged trace), never turned into a polite message. It subclasses ValueError so that callers
written before it existed keep working. This module imports nothing of the engine: every package may use it.
"""

from __future__ import annotations

import reprlib

__all__ = ["KneepointError", "ScenarioError", "ECHO_CHARS", "error_message", "error_path", "excerpt"]


class KneepointError(ValueError):
    """A problem with what the user asked for or gave (a field, a file, a name, a load); the message says which."""


class ScenarioError(KneepointError):
    """An invalid scenario (engine.scenario, engine.validate); the message names the field path and the bad value."""


#: the most characters of a user's value an error message repeats: enough to recognise it, never a whole upload
ECHO_CHARS = 100


def excerpt(value: object, limit: int = ECHO_CHARS) -> str:
    """The value as an error message shows it: its repr, at most about `limit` characters, and when cut, '...' and
    the full length.

    A huge value (a link's decoded field, an uploaded cell) is never copied whole into a message: it would cost
    the memory a second time and bury the one line the user needs. Long text is cut before repr() runs."""
    if isinstance(value, (str, bytes)) and len(value) > limit:
        return f"{value[:limit]!r}... ({len(value):,} characters)"
    shown = reprlib.Repr()
    shown.maxstring = shown.maxother = limit
    text = shown.repr(value)
    return text if len(text) <= limit else f"{text[:limit]}..."


def error_path(error: dict) -> str:
    """The field one pydantic error is about (an item of ValidationError.errors()), its location's parts joined
    by dots ('' for the whole model)."""
    return ".".join(str(part) for part in error.get("loc", ()))


def error_message(error: dict) -> str:
    """What one pydantic error says is wrong, without the 'Value error, ' pydantic puts before a validator's
    own message."""
    return error.get("msg", "").removeprefix("Value error, ")
