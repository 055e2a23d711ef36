"""The one reader of files a user names (scenarios, search spaces, PARIS inputs, reports) and the CLI's number types.

A hosted CLI must answer any path with its content or a one-line reason: a FIFO or a device is never opened
(it would block or never end), a file is read only up to a declared size, its text must be UTF-8 (a UTF-8
byte-order mark is accepted, a UTF-16 one is named), and JSON is refused before it is parsed when it nests
deeper than Python's decoder can recurse. Errors name the file and the problem, never the file's content.
This module imports nothing of the engine but its error base, so every CLI module may use it.
"""

from __future__ import annotations

import argparse
import codecs
import json
import math
import os
import re
import stat
import sys
from typing import Callable

from engine.errors import KneepointError

__all__ = ["MAX_FILE_BYTES", "MAX_JSON_DEPTH", "MAX_CLI_NUMBER", "MAX_SEED", "UserFileError", "regular_file",
           "read_bytes", "decode_text", "read_text", "shown", "quoted", "check_json_depth", "parse_json",
           "finite_float", "number_in", "whole_number", "seed_number"]

#: the largest file read: a report HTML with plotly inlined is a few MB, a scenario or space a few KB
MAX_FILE_BYTES = 64 * 1024 * 1024
#: the deepest JSON nesting accepted: a report needs under 10 levels, and json's decoder recurses per level
MAX_JSON_DEPTH = 64
#: the largest magnitude a numeric CLI argument takes: no rate, time or size here is near it, and
#: larger values only overflow later arithmetic (1e308 req/s is not a question)
MAX_CLI_NUMBER = 1e12
#: the largest random seed taken: numpy's and Python's generators accept every seed in 0..2**32-1
MAX_SEED = 2**32 - 1
#: how much of a bad value an error quotes
_QUOTE_CHARS = 100

_UTF16_BOMS = (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
# A JSON string (possibly unterminated: it then runs to the end, so the scan stays linear) or a bracket.
_JSON_TOKEN = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"?|[\[\]{}]', re.S)


class UserFileError(KneepointError):
    """A file the user named cannot be read or written as asked; the message names the file and why."""


def quoted(value: object) -> str:
    """repr() of a value cut to a readable length, for error messages."""
    text = repr(value)
    return text if len(text) <= _QUOTE_CHARS else text[:_QUOTE_CHARS] + "...'"


def shown(path: str | os.PathLike) -> str:
    """A path as messages show it: cut to a readable length (a path can be 4,096 characters)."""
    text = "stdin" if str(path) == "-" else str(path)
    return text if len(text) <= _QUOTE_CHARS else text[:_QUOTE_CHARS] + "..."


def _size(n: int) -> str:
    return f"{n / 1024 / 1024:,.1f} MB" if n >= 1024 * 1024 else f"{n:,} bytes"


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _read_stdin(what: str, max_bytes: int) -> bytes:
    data = sys.stdin.buffer.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise UserFileError(f"{what} on stdin is larger than the limit of {_size(max_bytes)}")
    return data


def regular_file(path: str | os.PathLike, what: str, max_bytes: int = MAX_FILE_BYTES) -> None:
    """UserFileError unless `path` is an existing regular file of at most `max_bytes` (checked by stat, without
    opening it: a FIFO would block the open and a device would never end)."""
    try:
        info = os.stat(path)
    except (OSError, ValueError) as e:  # ValueError: a NUL byte in the path
        raise UserFileError(f"cannot read {what} {shown(path)}: {getattr(e, 'strerror', None) or 'bad path'}") from None
    if not stat.S_ISREG(info.st_mode):
        raise UserFileError(f"cannot read {what} {shown(path)}: it is {_kind(info.st_mode)}, not a regular file")
    if info.st_size > max_bytes:
        raise UserFileError(f"{what} {shown(path)} is {_size(info.st_size)}; the limit is {_size(max_bytes)}")


def read_bytes(path: str | os.PathLike, what: str, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file `path` ('-': stdin), at most `max_bytes`; UserFileError otherwise.

    `what` names the file's role in messages ("scenario", "search space"). The path is stat'ed before it is
    opened, so a FIFO or device is refused without being opened; the open is non-blocking and re-checked,
    in case the path was swapped in between.
    """
    if str(path) == "-":
        return _read_stdin(what, max_bytes)
    regular_file(path, what, max_bytes)
    name = shown(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
        with os.fdopen(fd, "rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise UserFileError(f"cannot read {what} {name}: it is {_kind(info.st_mode)}, not a regular file")
            if info.st_size > max_bytes:
                raise UserFileError(f"{what} {name} is {_size(info.st_size)}; the limit is {_size(max_bytes)}")
            data = f.read(max_bytes + 1)
    except OSError as e:
        raise UserFileError(f"cannot read {what} {name}: {e.strerror or type(e).__name__}") from None
    if len(data) > max_bytes:  # it grew after the stat
        raise UserFileError(f"{what} {name} is larger than the limit of {_size(max_bytes)}")
    return data


def decode_text(data: bytes, what: str, path: str | os.PathLike = "") -> str:
    """UTF-8 text of `data` (a leading UTF-8 byte-order mark is dropped); UserFileError names a UTF-16/32
    file or the offset of the first byte that is not UTF-8, never the content."""
    where = f"{what} {shown(path)}" if str(path) else what
    if data.startswith(_UTF16_BOMS):
        raise UserFileError(f"{where} is UTF-16 or UTF-32 text (it starts with that byte-order mark); "
                            "save it as UTF-8")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise UserFileError(f"{where} is not UTF-8 text (the byte at offset {e.start} is not UTF-8); "
                            "is it a binary file?") from None


def read_text(path: str | os.PathLike, what: str, max_bytes: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of the regular file `path` ('-': stdin); see read_bytes and decode_text."""
    return decode_text(read_bytes(path, what, max_bytes), what, path)


def check_json_depth(text: str, what: str, max_depth: int = MAX_JSON_DEPTH) -> None:
    """UserFileError if arrays and objects in `text` nest deeper than `max_depth` (one linear pass; brackets
    inside strings do not count), so that json.loads never meets a RecursionError."""
    depth = 0
    for token in _JSON_TOKEN.finditer(text):
        char = token.group()[0]
        if char in "[{":
            depth += 1
            if depth > max_depth:
                raise UserFileError(f"{what} nests arrays and objects more than {max_depth} levels deep "
                                    f"(at offset {token.start()}); the limit is {max_depth}")
        elif char in "]}":
            depth -= 1


def parse_json(text: str, what: str, max_depth: int = MAX_JSON_DEPTH):
    """The JSON value of `text`; UserFileError names the line and column of a syntax error, or the nesting."""
    check_json_depth(text, what, max_depth)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise UserFileError(f"{what} is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None


def finite_float(text: str) -> float:
    """argparse type: a finite number of magnitude <= MAX_CLI_NUMBER (no nan, inf or 1e308)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid float value: {quoted(text)}") from None
    if not math.isfinite(value) or abs(value) > MAX_CLI_NUMBER:
        raise argparse.ArgumentTypeError(f"expected a finite number within +-{MAX_CLI_NUMBER:g}, got {quoted(text)}")
    return value


def number_in(low: float, high: float, low_open: bool = False, high_open: bool = False) -> Callable[[str], float]:
    """argparse type factory: a finite number within low..high (an open end excludes its bound), refused with
    the range written as an interval, e.g. (0, 1]."""
    interval = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"

    def parse(text: str) -> float:
        value = finite_float(text)
        above = value > low if low_open else value >= low
        below = value < high if high_open else value <= high
        if not (above and below):
            raise argparse.ArgumentTypeError(f"must be a number in {interval}, got {quoted(text)}")
        return value

    return parse


def whole_number(low: int = 0, high: int = int(MAX_CLI_NUMBER)) -> Callable[[str], int]:
    """argparse type factory: a whole number in low..high, refused with the range when it is not."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid int value: {quoted(text)}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be a whole number in {low}..{high:,}, got {quoted(text)}")
        return value

    return parse


#: argparse type of every --seed: a whole number every random generator here accepts
seed_number = whole_number(0, MAX_SEED)
