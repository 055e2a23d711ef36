"""A small YAML writer for the deployment files (plain dicts, lists, strings, numbers, booleans), so the app
writes YAML without a YAML library at run time (tests read every file back with PyYAML).

Block style throughout. Every string value is double-quoted (YAML escapes for anything but printable ASCII), so no value can turn into a number, a boolean, null or a tag on the way back;
keys are written bare only when they are plainly strings ('nvidia.com/mig-1g.10gb', 'mig-enabled').
"""

from __future__ import annotations

import math
import re

from engine.deploy.pbtxt import quote  # YAML double quotes take the same escapes

_BARE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*")
#: words YAML 1.1 loaders (PyYAML) read as booleans or null: never bare
_RESERVED = {"true", "false", "yes", "no", "on", "off", "y", "n", "null", "~"}


def _key(k) -> str:
    if not isinstance(k, str):
        raise TypeError(f"YAML keys here are strings, got {k!r}")
    return k if _BARE_KEY.fullmatch(k) and k.lower() not in _RESERVED else quote(k)


def _scalar(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError(f"a deployment file holds finite numbers only, got {v!r}")
        text = repr(v)
        mantissa, e, exponent = text.partition("e")
        # YAML 1.1 (PyYAML) reads a float only with a '.' in it: 5e-324 would come back as a string
        return text if "." in mantissa or not e else f"{mantissa}.0e{exponent}"
    if isinstance(v, str):
        return quote(v)
    raise TypeError(f"cannot write {type(v).__name__} as YAML")


def _lines(v, indent: int) -> list[str]:
    pad = "  " * indent
    if isinstance(v, dict):
        if not v:
            return [pad + "{}"]
        out = []
        for k, x in v.items():
            if isinstance(x, (dict, list)) and x:
                out.append(f"{pad}{_key(k)}:")
                out += _lines(x, indent + 1 if isinstance(x, dict) else indent)
            else:
                out.append(f"{pad}{_key(k)}: {_inline_empty(x)}")
        return out
    if isinstance(v, list):
        if not v:
            return [pad + "[]"]
        out = []
        for x in v:
            if isinstance(x, (dict, list)) and x:
                sub = _lines(x, indent + 1)
                out.append(f"{pad}- {sub[0].lstrip()}")
                out += sub[1:]
            else:
                out.append(f"{pad}- {_inline_empty(x)}")
        return out
    return [pad + _scalar(v)]


def _inline_empty(x) -> str:
    if isinstance(x, dict):
        return "{}"
    if isinstance(x, list):
        return "[]"
    return _scalar(x)


def dumps(obj, comment: str | None = None) -> str:
    """`obj` as a YAML document, with an optional leading comment (one '# ' line per line of it)."""
    head = [f"# {line}" if line else "#" for line in comment.splitlines()] if comment else []
    return "\n".join(head + _lines(obj, 0)) + "\n"
