"""The writers behind the deployment files: config.pbtxt (protobuf text format against Triton's declared schema)
and YAML (read back by PyYAML), both round-tripping whatever they are given."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from engine.deploy import pbtxt, yamltext
from engine.deploy.pbtxt import DATA_TYPES, INSTANCE_KINDS, PbtxtError

names = st.one_of(st.text(st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=12),
                  st.text(min_size=1, max_size=6))  # any Unicode: escaped on the way out, read back the same
ints = st.integers(-2**40, 2**40)
tensor = st.fixed_dictionaries({"name": names, "data_type": st.sampled_from(DATA_TYPES),
                                "dims": st.lists(ints, max_size=4)})
group = st.fixed_dictionaries({"count": st.integers(1, 8), "kind": st.sampled_from(INSTANCE_KINDS)},
                              optional={"name": names, "gpus": st.lists(st.integers(0, 7), min_size=1, max_size=3)})
step = st.fixed_dictionaries({"model_name": names, "model_version": ints,
                              "input_map": st.dictionaries(names, names, min_size=1, max_size=3),
                              "output_map": st.dictionaries(names, names, min_size=1, max_size=3)})
model_config = st.fixed_dictionaries(
    {"name": names},
    optional={"platform": names, "backend": names, "max_batch_size": st.integers(0, 4096),
              "input": st.lists(tensor, min_size=1, max_size=3), "output": st.lists(tensor, min_size=1, max_size=3),
              "instance_group": st.lists(group, min_size=1, max_size=3),
              "dynamic_batching": st.fixed_dictionaries({}, optional={
                  "preferred_batch_size": st.lists(st.integers(1, 4096), min_size=1, max_size=4),
                  "max_queue_delay_microseconds": st.integers(0, 10**9), "preserve_ordering": st.booleans()}),
              "ensemble_scheduling": st.fixed_dictionaries({"step": st.lists(step, min_size=1, max_size=3)}),
              "parameters": st.dictionaries(names, st.fixed_dictionaries({"string_value": names}), min_size=1,
                                            max_size=3)})


@given(model_config)
def test_any_config_in_the_schema_reads_back_equal(cfg):
    assert pbtxt.loads(pbtxt.dumps(cfg, comment="a comment\nover two lines")) == cfg


def test_triton_documented_syntax_reads():
    """The forms Triton's documentation writes: 'name: {', repeated scalars one per line, '#' comments."""
    text = """
    name: "m"  # a comment
    max_batch_size: 8
    instance_group [ { count: 2, kind: KIND_GPU } ]
    dynamic_batching: {
      preferred_batch_size: 4
      preferred_batch_size: 8
      max_queue_delay_microseconds: 100
    }
    """
    assert pbtxt.loads(text) == {"name": "m", "max_batch_size": 8,
                                 "instance_group": [{"count": 2, "kind": "KIND_GPU"}],
                                 "dynamic_batching": {"preferred_batch_size": [4, 8],
                                                      "max_queue_delay_microseconds": 100}}


@pytest.mark.parametrize("text, names", [
    ('name: "m"\nmax_batch: 8', "max_batch"),  # a misspelt field
    ('max_batch_size: "8"', "max_batch_size"),  # a string where an int32 belongs
    ('instance_group [ { kind: KIND_TPU } ]', "instance_group[0].kind"),  # an enum value Triton does not have
    ('name: "a"\nname: "b"', "name"),  # a non-repeated field twice
    ('dynamic_batching { preserve_ordering: maybe }', "preserve_ordering"),
    ('name: "m"\ninstance_group [ { count: 1 }', "expected"),
    ('name: @', "unexpected"),
])
def test_a_config_outside_the_schema_is_named(text, names):
    with pytest.raises(PbtxtError, match=names.replace("[", r"\[").replace("]", r"\]")):
        pbtxt.loads(text)


yaml_keys = st.one_of(st.text(max_size=10), st.sampled_from(["true", "no", "null", "1", "nvidia.com/mig-1g.10gb",
                                                            "mig-enabled", "~", "1.5", "- x", "a: b"]))
yaml_scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**60, 2**60),
                         st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20),
                         st.sampled_from(["yes", "off", "1e3", "0x10", "null", "", " ", "#x", "*a", "&b", "!t"]))
yaml_docs = st.recursive(yaml_scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                               st.dictionaries(yaml_keys, inner, max_size=4)),
                         max_leaves=20)


@given(yaml_docs)
def test_yaml_writer_round_trips_through_pyyaml(doc):
    assert yaml.safe_load(yamltext.dumps(doc, comment="generated")) == doc


def test_yaml_writer_refuses_what_yaml_would_change():
    with pytest.raises(ValueError, match="finite"):
        yamltext.dumps({"x": float("inf")})
    with pytest.raises(TypeError):
        yamltext.dumps({1: "a"})


def test_string_escapes_of_the_text_format_are_read():
    cfg = pbtxt.loads(r'''name: "a\tb\x41\101\u00e9\"q" platform: 'single\'quoted' ''')
    assert cfg == {"name": 'a\tbAAé"q', "platform": "single'quoted"}
    with pytest.raises(PbtxtError, match="escape"):
        pbtxt.loads(r'name: "bad\z"')
