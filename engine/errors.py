"""The one base of every error the engine raises for a user to read (simpy's `SimPyException` is the model).

A page or the CLI catches `KneepointError` and shows its message; anything else is a bug and is left to fail
loudly (a test, a logged trace), never turned into a polite message. It subclasses ValueError so that callers
written before it existed keep working. This module imports nothing of the engine: every package may use it.
"""

from __future__ import annotations

__all__ = ["KneepointError"]


class KneepointError(ValueError):
    """A problem with what the user asked for or gave (a field, a file, a name, a load); the message says which."""
