"""blueprints.yamltext writes what yaml.dump with libyaml writes, byte for byte: on documents hypothesis makes (lists
of records and of scalars, nested, with strings that must be quoted, escaped or wrapped, and shared objects), on a
design's real documents, and it writes the big lists itself (the point of it)."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from blueprints import yamltext
from blueprints.blueprint import dump_blueprint
from blueprints.rolevars.nvmeof import role_vars
from tests.promtool.support import EXAMPLES, blueprint

TRICKY = ["true", "True", "null", "~", "4420", "0x1F", "1_000", "1.5", "2026-11-01", "2026-11-01T10:00:00Z", "=",
          "yes", "no", "on", "off", "y", "n", "-", "- x", "--- x", "...", "a:", ":a", "a: b", "a #b", "#a", "@a",
          "/dev/nvme0n1", "nqn.2026-11.io.clustersmith:lab:ns:client-1", "0", "-1", ".inf", "<<", "a b  c", ""]
SAFE = st.from_regex(r"[A-Za-z0-9_/][A-Za-z0-9_./:@+=-]{0,20}", fullmatch=True)  # what yamltext writes itself
TEXT = st.one_of(SAFE, st.sampled_from(TRICKY), st.text(alphabet="ab1-_.:/@+= #'\"é\n\t", max_size=12),
                 st.text(alphabet="ab ", min_size=60, max_size=200))
SCALAR = st.one_of(st.none(), st.booleans(), st.integers(), TEXT, st.floats(allow_nan=False))
RECORD = st.dictionaries(TEXT, SCALAR, min_size=1, max_size=5)
LISTS = st.one_of(st.lists(SCALAR, max_size=6), st.lists(RECORD, max_size=6),
                  st.lists(st.one_of(SCALAR, RECORD), max_size=4))


def _yaml(data: Any, width: int, allow_unicode: bool) -> str:
    return yaml.dump(data, Dumper=yaml.CSafeDumper, sort_keys=False, width=width, allow_unicode=allow_unicode)


DOCS = st.recursive(st.dictionaries(TEXT, st.one_of(SCALAR, LISTS), max_size=5),
                    lambda inner: st.one_of(st.dictionaries(TEXT, st.one_of(inner, LISTS, SCALAR), max_size=4),
                                            st.lists(inner, max_size=3)),
                    max_leaves=25)


@settings(max_examples=400, deadline=None)
@given(doc=DOCS, width=st.sampled_from([80, 110, 120]), allow_unicode=st.booleans())
def test_the_text_is_libyamls(doc: Any, width: int, allow_unicode: bool) -> None:
    assert yamltext.dump(doc, width=width, allow_unicode=allow_unicode) == _yaml(doc, width, allow_unicode)


def test_shared_lists_and_records_stay_anchors_as_pyyaml_writes_them() -> None:
    hosts = ["gpu-1", "gpu-2"]
    record = {"name": "gpu-1", "port": 4420}
    doc = {"a": hosts, "b": {"c": hosts}, "d": [record], "e": [record, {"name": "gpu-2", "port": 4420}]}
    assert "&id001" in _yaml(doc, 80, False)
    assert yamltext.dump(doc) == _yaml(doc, 80, False)


def test_a_list_under_a_long_key_is_still_right() -> None:
    doc = {"k" * 200: ["a", "b"], "x": [{"k" * 130: "v"}], "y": {"z": [{"a": "1", "b": None}]}}
    assert yamltext.dump(doc, width=110) == _yaml(doc, 110, False)


def test_the_blueprint_and_the_nvmeof_variables_of_every_example_are_written_alike() -> None:
    for example in EXAMPLES:
        bp = blueprint(example)
        data = bp.model_dump(mode="json", by_alias=True)
        assert dump_blueprint(bp) == _yaml(data, 110, True), example.stem
        for group, values in role_vars(bp).items():
            data = values.model_dump(mode="json", exclude_unset=True)
            assert yamltext.dump(data, width=110) == _yaml(data, 110, False), (example.stem, group)


def test_the_per_node_lists_are_written_here_not_by_pyyaml() -> None:
    """The NVMe-oF subsystems and host identities of the bare-metal example qualify: PyYAML sees a token each."""
    bp = blueprint(next(e for e in EXAMPLES if e.stem == "cv-training-500tb"))
    data = role_vars(bp)["gpu_clients"].model_dump(mode="json", exclude_unset=True)
    lists: dict[str, str] = {}
    rest = yamltext._swap(data, "token", lists, yamltext._shared(data))
    assert rest["nvmeof_subsystems"] == "token0" and rest["nvmeof_hosts"] == "token1"
    assert len(lists["token0"].splitlines()) == 6 * len(data["nvmeof_subsystems"])
