"""A link is anyone's input: URL tokens are bounded before and while they are inflated, and errors never echo a
decoded value whole."""

from __future__ import annotations

import base64
import json
import tracemalloc
import zlib

import pytest

from engine.errors import ECHO_CHARS, excerpt
from engine.scenario import ScenarioError, load_scenario
from engine.io.urlstate import MAX_JSON_BYTES, MAX_TOKEN_CHARS, decode, decode_many, decode_view, encode

DESIGN = {"model": "resnet50", "gpu": {"sku": "A100-SXM4-80GB", "layout": ["1g.10gb"] * 7}}


def _token(raw: bytes) -> str:
    """What urlstate writes: zlib, then unpadded base64url."""
    return base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode().rstrip("=")


def _one_line_error(run) -> str:
    with pytest.raises(ScenarioError) as e:
        run()
    message = str(e.value)
    assert "\n" not in message
    return message


def test_a_design_still_round_trips():
    scenario = load_scenario(DESIGN)
    assert load_scenario(decode(encode(scenario))) == scenario


def test_a_token_longer_than_the_limit_is_refused_unread():
    token = "A" * (MAX_TOKEN_CHARS + 1)
    message = _one_line_error(lambda: decode(token))
    assert f"over the limit of {MAX_TOKEN_CHARS:,}" in message and "AAAA" not in message


@pytest.mark.parametrize("reader", [decode, decode_many, decode_view])
def test_a_small_token_that_inflates_past_the_limit_is_refused_without_inflating_it(reader):
    bomb = _token(b'{"model":"' + b"a" * (10 * 2**20) + b'"}')  # 10 MB of JSON in ~14 kB of token
    assert len(bomb) <= MAX_TOKEN_CHARS
    tracemalloc.start()
    try:
        message = _one_line_error(lambda: reader(bomb))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert f"more than {MAX_JSON_BYTES // 1024} kB" in message
    assert peak < 4 * MAX_JSON_BYTES  # the cap's worth was inflated, not the 10 MB


def test_json_exactly_at_the_limit_is_read():
    filler = MAX_JSON_BYTES - len(b'{"x":""}')
    assert decode_view(_token(b'{"x":"' + b"a" * filler + b'"}')) == {"x": "a" * filler}


@pytest.mark.parametrize("raw", [b"[" * 100_000 + b"]" * 100_000, b"not json"])
def test_deeply_nested_or_broken_json_is_a_damaged_link(raw):
    assert "damaged" in _one_line_error(lambda: decode(_token(raw)))


def test_a_cut_token_is_a_damaged_link():
    whole = base64.urlsafe_b64decode(encode(load_scenario(DESIGN)) + "==")
    cut = base64.urlsafe_b64encode(whole[: len(whole) // 2]).decode().rstrip("=")
    assert "damaged" in _one_line_error(lambda: decode(cut))


def test_a_huge_field_in_a_link_is_not_echoed_whole(store):
    from engine.profiles import ProfileBook

    name = "m" * (MAX_JSON_BYTES // 2)
    data = decode(_token(json.dumps(DESIGN | {"model": name}).encode()))
    message = _one_line_error(lambda: load_scenario(data, ProfileBook.from_store(store)))
    assert "model" in message and name not in message
    assert len(message) < 20 * ECHO_CHARS


def test_excerpt_cuts_long_values_and_keeps_short_ones():
    assert excerpt("resnet50") == "'resnet50'"
    long = excerpt("x" * 10_000)
    assert long.startswith("'xxx") and "(10,000 characters)" in long and len(long) < ECHO_CHARS + 40
    assert len(excerpt(["y" * 10_000] * 100)) <= ECHO_CHARS + 3

