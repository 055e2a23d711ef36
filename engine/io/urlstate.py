"""A scenario as a compact URL token (so a copied link reproduces a view) and back.

A link is anyone's input: a token is refused, before it is inflated, when it is longer than MAX_TOKEN_CHARS,
and while inflating once it holds more than MAX_JSON_BYTES of JSON, so a small link cannot cost the server
a large allocation (zlib inflates ~1000x).
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib

from engine.scenario import Scenario, ScenarioError

#: the longest token read from a link: a design packs into ~110 characters, a Compare link of dozens of pins
#: into a few thousand; browsers and proxies cut URLs longer than this anyway
MAX_TOKEN_CHARS = 16_384
#: the most JSON a token may inflate to: one design's full JSON is ~1.5 kB, so this holds well over a hundred
MAX_JSON_BYTES = 256 * 1024


def _compact(scenario: Scenario) -> dict:
    """The scenario without its defaults (required fields kept)."""
    data = scenario.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    data["model"] = scenario.model
    if scenario.gpu is not None:
        data["gpu"] = scenario.gpu.model_dump(mode="json", exclude_defaults=True)
    return data


def _pack(data) -> str:
    raw = json.dumps(data, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode().rstrip("=")


def _damaged(reason: str) -> ScenarioError:
    return ScenarioError(f"the scenario in the link is damaged ({reason}); showing defaults")


def _inflate(packed: bytes) -> bytes:
    """The zlib stream's content; refused as soon as it passes MAX_JSON_BYTES (nothing more is inflated)."""
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(packed, MAX_JSON_BYTES)
        more = inflater.unconsumed_tail or (not inflater.eof and inflater.decompress(b"", 1))
    except zlib.error:
        raise _damaged("error") from None
    if more:
        raise ScenarioError(f"the scenario in the link holds more than {MAX_JSON_BYTES // 1024} kB of data; "
                            "showing defaults")
    if not inflater.eof:
        raise _damaged("it ends early")
    return raw


def _unpack(token: str):
    """The JSON value in a token, within MAX_TOKEN_CHARS and MAX_JSON_BYTES; ScenarioError otherwise."""
    if len(token) > MAX_TOKEN_CHARS:
        raise ScenarioError(f"the scenario in the link is {len(token):,} characters long, over the limit of "
                            f"{MAX_TOKEN_CHARS:,}; showing defaults")
    try:
        packed = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (binascii.Error, ValueError) as e:
        raise _damaged(type(e).__name__) from None
    raw = _inflate(packed)
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as e:  # RecursionError: a deeply nested array such as [[[[...]]]]
        raise _damaged(type(e).__name__) from None


def encode(scenario: Scenario) -> str:
    """URL-safe token: zlib-compressed JSON of the scenario, without defaults, base64url."""
    return _pack(_compact(scenario))


def decode(token: str) -> dict:
    """The scenario dict in a token; ScenarioError if the token is damaged."""
    data = _unpack(token)
    if not isinstance(data, dict):
        raise ScenarioError("the scenario in the link is not an object; showing defaults")
    return data


def encode_many(scenarios: list[Scenario]) -> str:
    """One token for a list of scenarios (the Compare page's pins)."""
    return _pack([_compact(s) for s in scenarios])


def decode_many(token: str) -> list[dict]:
    """The scenario dicts in an encode_many token; ScenarioError if the token is damaged."""
    data = _unpack(token)
    if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
        raise ScenarioError("the designs in the link are not a list of scenarios; showing none")
    return data


def encode_view(values: dict) -> str:
    """A page's own inputs (plain JSON values) as one URL token."""
    return _pack(values)


def decode_view(token: str) -> dict:
    """The inputs in an encode_view token; ScenarioError if the token is damaged."""
    data = _unpack(token)
    if not isinstance(data, dict):
        raise ScenarioError("the view in the link is not an object; showing defaults")
    return data
