"""Triton `config.pbtxt`: write a model configuration as protobuf text format and read one back, checked
against a declared schema of the fields Kneepoint uses.

The schema follows Triton's model_config.proto (triton-inference-server/common, protobuf/model_config.proto):
ModelConfig fields `name`, `platform`, `backend`, `max_batch_size` (int32), `input`/`output` (repeated
ModelInput/ModelOutput: `name`, `data_type` enum TYPE_*, `dims` repeated int64), `instance_group` (repeated
ModelInstanceGroup: `name`, `kind` enum KIND_*, `count` int32, `gpus` repeated int32), `dynamic_batching`
(ModelDynamicBatching: `preferred_batch_size` repeated int32, `max_queue_delay_microseconds` uint64,
`preserve_ordering` bool), `ensemble_scheduling` (ModelEnsembling: repeated `step` with `model_name`,
`model_version` int64, `input_map`/`output_map` map<string, string>) and `parameters`
(map<string, ModelParameter{string_value}>). Only this subset is accepted: a field outside it, a value of the
wrong type or a non-repeated field given twice is a PbtxtError naming it.

Text format (protobuf's text format spec): `name: value`, `name { ... }` or `name: { ... }` for messages,
`name: [a, b]` for repeated scalars, `name [ {...}, {...} ]` for repeated messages, a map as repeated
`name { key: ... value: ... }` entries, `#` comments, optional `,`/`;` separators.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional, Union

from engine.errors import KneepointError, excerpt


class PbtxtError(KneepointError):
    """A config.pbtxt that does not parse, or a field outside the declared schema; the message names it."""


@dataclass(frozen=True)
class Field:
    """One field of a message: its type ('int', 'bool', 'str', 'enum', a nested schema dict, or 'map'),
    whether it repeats, and an enum's allowed names."""

    kind: Union[str, dict]
    repeated: bool = False
    enum: tuple[str, ...] = ()


DATA_TYPES = ("TYPE_BOOL", "TYPE_UINT8", "TYPE_UINT16", "TYPE_UINT32", "TYPE_UINT64", "TYPE_INT8", "TYPE_INT16",
              "TYPE_INT32", "TYPE_INT64", "TYPE_FP16", "TYPE_FP32", "TYPE_FP64", "TYPE_STRING", "TYPE_BF16")
INSTANCE_KINDS = ("KIND_AUTO", "KIND_GPU", "KIND_CPU", "KIND_MODEL")

_TENSOR = {"name": Field("str"), "data_type": Field("enum", enum=DATA_TYPES), "dims": Field("int", repeated=True)}
_STEP = {"model_name": Field("str"), "model_version": Field("int"), "input_map": Field("map"),
         "output_map": Field("map")}
#: the subset of ModelConfig that Kneepoint writes and accepts back
MODEL_CONFIG: dict[str, Field] = {
    "name": Field("str"),
    "platform": Field("str"),
    "backend": Field("str"),
    "max_batch_size": Field("int"),
    "input": Field(_TENSOR, repeated=True),
    "output": Field(_TENSOR, repeated=True),
    "instance_group": Field({"name": Field("str"), "kind": Field("enum", enum=INSTANCE_KINDS),
                             "count": Field("int"), "gpus": Field("int", repeated=True)}, repeated=True),
    "dynamic_batching": Field({"preferred_batch_size": Field("int", repeated=True),
                               "max_queue_delay_microseconds": Field("int"), "preserve_ordering": Field("bool")}),
    "ensemble_scheduling": Field({"step": Field(_STEP, repeated=True)}),
    "parameters": Field("map"),  # map<string, ModelParameter>: the value is {string_value: ...}
}
#: ModelParameter, the value type of `parameters`
_PARAMETER = {"string_value": Field("str")}

# --------------------------------------------------------------------------- writing


def _scalar(value: Any, f: Field) -> str:
    if f.kind == "enum":
        return str(value)
    if f.kind == "bool":
        return "true" if value else "false"
    if f.kind == "str":
        return quote(value)
    return str(int(value))


def quote(text: str) -> str:
    """A string literal: printable ASCII as it is (quote and backslash escaped), anything else as \\u and four
    hex digits or \\U and eight, the text format's Unicode escapes (JSON's surrogate pairs would not read back)."""
    out = []
    for ch in text:
        c = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 0x20 <= c < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\u{c:04x}" if c <= 0xFFFF else f"\\U{c:08x}")
    return '"' + "".join(out) + '"'


def _write_fields(obj: dict, schema: dict[str, Field], indent: int) -> list[str]:
    pad = "  " * indent
    lines: list[str] = []
    for name, value in obj.items():
        f = schema.get(name)
        if f is None:
            raise PbtxtError(f"{name}: not a field Kneepoint writes into config.pbtxt")
        if f.kind == "map":
            for k, v in value.items():
                if name == "parameters":
                    lines += [f"{pad}{name} {{", f"{pad}  key: {quote(k)}",
                              f"{pad}  value: {{ string_value: {quote(v['string_value'])} }}", f"{pad}}}"]
                else:
                    lines.append(f"{pad}{name} {{ key: {quote(k)} value: {quote(v)} }}")
        elif isinstance(f.kind, dict):
            items = value if f.repeated else [value]
            if f.repeated:
                lines.append(f"{pad}{name} [")
                for i, item in enumerate(items):
                    lines.append(f"{pad}  {{")
                    lines += _write_fields(item, f.kind, indent + 2)
                    lines.append(f"{pad}  }}" + ("," if i < len(items) - 1 else ""))
                lines.append(f"{pad}]")
            else:
                lines.append(f"{pad}{name} {{")
                lines += _write_fields(value, f.kind, indent + 1)
                lines.append(f"{pad}}}")
        elif f.repeated:
            lines.append(f"{pad}{name}: [ {', '.join(_scalar(v, f) for v in value)} ]")
        else:
            lines.append(f"{pad}{name}: {_scalar(value, f)}")
    return lines


def dumps(config: dict, comment: Optional[str] = None) -> str:
    """`config` (a dict shaped by MODEL_CONFIG) as config.pbtxt text, with an optional leading comment."""
    head = [f"# {line}" for line in comment.splitlines()] if comment else []
    return "\n".join(head + _write_fields(config, MODEL_CONFIG, 0)) + "\n"


# --------------------------------------------------------------------------- reading

_TOKEN = re.compile(r"""\s+|\#[^\n]*|(?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')|(?P<num>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)"""
                    r"""|(?P<id>[A-Za-z_][A-Za-z0-9_]*)|(?P<p>[{}\[\]:,;<>])""")


def _tokens(text: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            line = text.count("\n", 0, pos) + 1
            raise PbtxtError(f"line {line}: unexpected {excerpt(text[pos:pos + 20])}")
        pos = m.end()
        kind = m.lastgroup
        if kind:
            out.append((kind, m.group(kind)))
    return out


class _Reader:
    def __init__(self, text: str):
        self.toks = _tokens(text)
        self.i = 0

    def peek(self) -> Optional[tuple[str, str]]:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, value: Optional[str] = None) -> tuple[str, str]:
        t = self.peek()
        if t is None or (value is not None and t[1] != value):
            raise PbtxtError(f"expected {value or 'a value'}, got {t[1] if t else 'the end of the file'!r}")
        self.i += 1
        return t

    def message(self, close: Optional[str]) -> list[tuple[str, Any]]:
        """Raw (name, value) pairs up to `close` ('}' or '>'; None: the end)."""
        pairs = []
        while True:
            t = self.peek()
            if t is None or t[1] == close:
                if t is None and close is not None:
                    raise PbtxtError(f"a message is not closed: expected {close!r}")
                if close is not None:
                    self.take(close)
                return pairs
            kind, name = self.take()
            if kind != "id":
                raise PbtxtError(f"expected a field name, got {name!r}")
            if self.peek() and self.peek()[1] == ":":
                self.take(":")
            pairs.append((name, self.value()))
            while self.peek() and self.peek()[1] in (",", ";"):
                self.take()

    def value(self) -> Any:
        t = self.peek()
        if t is None:
            raise PbtxtError("a field has no value")
        if t[1] in ("{", "<"):
            self.take()
            return ("msg", self.message("}" if t[1] == "{" else ">"))
        if t[1] == "[":
            self.take()
            items = []
            while self.peek() and self.peek()[1] != "]":
                items.append(self.value())
                if self.peek() and self.peek()[1] == ",":
                    self.take(",")
            self.take("]")
            return ("list", items)
        kind, text = self.take()
        if kind == "str":
            return ("str", _unescape(text[1:-1]))
        if kind == "num":
            return ("num", text)
        if kind == "id":
            return ("id", text)
        raise PbtxtError(f"unexpected {text!r}")


_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v", "\\": "\\",
                   "'": "'", '"': '"', "?": "?"}
_ESCAPE = re.compile(r"\\(?:(?P<simple>[ntrabfv\\'\"?])|x(?P<hex>[0-9A-Fa-f]{1,2})|(?P<oct>[0-7]{1,3})"
                     r"|u(?P<u4>[0-9A-Fa-f]{4})|U(?P<u8>[0-9A-Fa-f]{8})|(?P<bad>.?))", re.S)


def _unescape(body: str) -> str:
    """A string literal's body with the text format's C-style escapes (simple, \\x hex, octal, \\u, \\U) resolved."""
    def one(m: re.Match) -> str:
        if m["simple"]:
            return _SIMPLE_ESCAPES[m["simple"]]
        if m["bad"] is not None:
            raise PbtxtError(f"unknown escape \\{m['bad']} in a string")
        code = int(m["hex"], 16) if m["hex"] else int(m["oct"], 8) if m["oct"] else int(m["u4"] or m["u8"], 16)
        if code > 0x10FFFF:
            raise PbtxtError(f"escape {m[0]} is beyond Unicode")
        return chr(code)

    return _ESCAPE.sub(one, body)


def _typed(raw: tuple, f: Field, where: str) -> Any:
    kind, value = raw
    if isinstance(f.kind, dict):
        if kind != "msg":
            raise PbtxtError(f"{where}: a message {{...}} expected, got {excerpt(value)}")
        return _check(value, f.kind, where)
    if f.kind == "int":
        if kind != "num" or not re.fullmatch(r"-?\d+", value):
            raise PbtxtError(f"{where}: a whole number expected, got {excerpt(value)}")
        return int(value)
    if f.kind == "str":
        if kind != "str":
            raise PbtxtError(f"{where}: a quoted string expected, got {excerpt(value)}")
        return value
    if f.kind == "bool":
        if kind != "id" or value not in ("true", "false"):
            raise PbtxtError(f"{where}: true or false expected, got {excerpt(value)}")
        return value == "true"
    if f.kind == "enum":
        if kind != "id" or value not in f.enum:
            raise PbtxtError(f"{where}: one of {', '.join(f.enum)} expected, got {excerpt(value)}")
        return value
    raise AssertionError(f.kind)


def _map_entry(raw: tuple, name: str, where: str) -> tuple[str, Any]:
    if raw[0] != "msg":
        raise PbtxtError(f"{where}: a map entry {{ key: ... value: ... }} expected")
    entry = dict(raw[1])
    if set(entry) != {"key", "value"} or entry["key"][0] != "str":
        raise PbtxtError(f"{where}: a map entry has exactly a string key and a value")
    if name == "parameters":
        return entry["key"][1], _typed(entry["value"], Field(_PARAMETER), f"{where}.value")
    if entry["value"][0] != "str":
        raise PbtxtError(f"{where}: a map<string, string> value is a quoted string")
    return entry["key"][1], entry["value"][1]


def _check(pairs: list[tuple[str, Any]], schema: dict[str, Field], where: str) -> dict:
    out: dict[str, Any] = {}
    for name, raw in pairs:
        path = f"{where}.{name}" if where else name
        f = schema.get(name)
        if f is None:
            raise PbtxtError(f"{path}: not a field of the declared schema; valid: {', '.join(schema)}")
        if f.kind == "map":
            k, v = _map_entry(raw, name, path)
            out.setdefault(name, {})[k] = v
            continue
        if f.repeated:
            items = raw[1] if raw[0] == "list" else [raw]
            out.setdefault(name, []).extend(_typed(x, f, f"{path}[{i}]") for i, x in enumerate(items))
            continue
        if name in out:
            raise PbtxtError(f"{path}: given twice, but it is not a repeated field")
        out[name] = _typed(raw, f, path)
    return out


def loads(text: str) -> dict:
    """Parse config.pbtxt text into a dict shaped by MODEL_CONFIG, checking every field name and type."""
    return _check(_Reader(text).message(None), MODEL_CONFIG, "")
