"""A scenario as a compact URL token (so a copied link reproduces a view) and back."""

from __future__ import annotations

import base64
import binascii
import json
import zlib

from engine.scenario import Scenario, ScenarioError


def encode(scenario: Scenario) -> str:
    """URL-safe token: zlib-compressed JSON of the scenario, without defaults, base64url."""
    data = scenario.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    data["model"], data["gpu"] = scenario.model, scenario.gpu.model_dump(mode="json", exclude_defaults=True)
    raw = json.dumps(data, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode().rstrip("=")


def decode(token: str) -> dict:
    """The scenario dict in a token; ScenarioError if the token is damaged."""
    try:
        raw = zlib.decompress(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        data = json.loads(raw)
    except (binascii.Error, zlib.error, ValueError) as e:
        raise ScenarioError(f"the scenario in the link is damaged ({type(e).__name__}); showing defaults") from None
    if not isinstance(data, dict):
        raise ScenarioError("the scenario in the link is not an object; showing defaults")
    return data
