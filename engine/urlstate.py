"""A scenario as a compact URL token (so a copied link reproduces a view) and back."""

from __future__ import annotations

import base64
import binascii
import json
import zlib

from engine.scenario import Scenario, ScenarioError


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


def _unpack(token: str):
    try:
        raw = zlib.decompress(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        return json.loads(raw)
    except (binascii.Error, zlib.error, ValueError) as e:
        raise ScenarioError(f"the scenario in the link is damaged ({type(e).__name__}); showing defaults") from None


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
