"""Issue 43 item 1: the spec is read as YAML 1.2 core where it matters, and merges as YAML says.

PyYAML reads YAML 1.1: ``0512`` is the octal 330, ``8:32`` the base-60 512, ``no`` the boolean false. Each such
value is refused, naming what YAML read and how to write it; a boolean where a number or a name belongs too.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from blueprints.loader import parse_requirements
from blueprints.yaml11 import construct
from tests.unit.blueprints.test_spec_bounds import REPO
from tests.unit.blueprints.test_spec_bounds import _problems as _problems

EXAMPLE = (REPO / "examples" / "cv-training-500tb.yaml").read_text()


@pytest.mark.parametrize(("edit", "message"), [
    (("gpus: 512", "gpus: 0512"), "s.yaml:14: compute.gpus: YAML reads 0512 as the octal number 330 (YAML 1.2 reads "
     "512); expected a whole number: write 512 without the leading zero, or quote it ('0512') if it is text"),
    (("gpus: 512", "gpus: 8:32"), "s.yaml:14: compute.gpus: YAML reads 8:32 as the base-60 number 512 (YAML 1.2 "
     "reads it as text); expected a whole number: quote it ('8:32') if it is text, or write the number 512"),
    (("gpus: 512", "gpus: 0b1000"), "s.yaml:14: compute.gpus: YAML reads 0b1000 as the binary number 8 (YAML 1.2 "
     "reads it as text); expected a whole number: write 8, or quote it ('0b1000') if it is text"),
    (("gpus: 512", "gpus: true"), "s.yaml:14: compute.gpus: YAML reads true as the boolean true, which would count "
     "as 1; expected a whole number"),
    (("gpus: 512", "gpus: on"), "s.yaml:14: compute.gpus: YAML reads on as the boolean true (YAML 1.2 reads it as "
     "text), which would count as 1; expected a whole number"),
    (("name: cv-training-500tb", "name: no"), "s.yaml:6: metadata.name: YAML reads no as the boolean false (YAML 1.2 "
     "reads it as text); expected text (a name): quote it ('no') if it is text"),
    (("name: cv-training-500tb", "name: 0755"), "s.yaml:6: metadata.name: YAML reads 0755 as the octal number 493 "
     "(YAML 1.2 reads 755); expected text (a name): write 755 without the leading zero, or quote it ('0755') if it "
     "is text"),
    (("name: cv-training-500tb", "name: 2026"), "s.yaml:6: metadata.name: YAML reads 2026 as the number 2026; "
     "expected text (a name): quote it ('2026') if it is text"),
    (("domain: cv", "domain: Off"), "s.yaml:10: business.domain: YAML reads Off as the boolean false (YAML 1.2 reads "
     "it as text); expected one of: cv, llm, recsys: quote it ('Off') if it is text"),
    (("training_set: 500TB", "training_set: yes"), "s.yaml:16: data.training_set: YAML reads yes as the boolean "
     "true (YAML 1.2 reads it as text); expected a size such as '500TB'"),
    (('read_throughput: ">=500GB/s"', "read_throughput: 0500"), "s.yaml:22: performance.storage.read_throughput: "
     "YAML reads 0500 as the octal number 320 (YAML 1.2 reads 500); expected a lower bound such as '>=500GB/s': "
     "write 500 without the leading zero, or quote it ('0500') if it is text"),
    (("machines: static", "machines: off"), "s.yaml:31: target.machines: YAML reads off as the boolean false (YAML "
     "1.2 reads it as text); expected one of: static, maas, equinix: quote it ('off') if it is text"),
])
def test_yaml11_readings_are_refused(edit: tuple[str, str], message: str) -> None:
    assert edit[0] in EXAMPLE
    assert _problems(EXAMPLE.replace(*edit, 1)) == [message]


HEX_6021_DIGITS = "0x" + "f" * 5000  # 20,000 bits: no digit limit in base 16; over 4300 decimal digits, past a float


@pytest.mark.parametrize(("edit", "message"), [
    (("name: cv-training-500tb", f"name: {HEX_6021_DIGITS}"), "s.yaml:6: metadata.name: YAML reads "
     "0xffffffffffffffffffffffffffffffffffffffffffffffffffffffffff... (5,002 characters) as an integer of about 6021 "
     "decimal digits; expected text (a name): quote it if it is text"),
    (("gpus: 512", f"gpus: {HEX_6021_DIGITS}"), "s.yaml:14: compute.gpus: expected a value that should be less than "
     "or equal to 1000000 (got an integer of about 6021 decimal digits)"),
    (("gpus: 512", "gpus: 0" + "7" * 5000), "s.yaml:14: compute.gpus: an integer of 5001 digits; expected a number of "
     "at most 18 digits (got 07777777777777777777...)"),
])
def test_integers_too_long_to_write_are_named_by_their_size(edit: tuple[str, str], message: str) -> None:
    """Found by the fuzzer (issue 43 item 8, seed 52): a hexadecimal integer of 5,000 digits where a name or count
    belongs ended in OverflowError (formatting it as a float) or ValueError (writing it in decimal)."""
    assert edit[0] in EXAMPLE
    assert _problems(EXAMPLE.replace(*edit, 1)) == [message]


def test_what_yaml_12_reads_the_same_passes() -> None:
    for edit in (("gpus: 512", "gpus: 0x200"), ("gpus: 512", "gpus: 5_12"), ("name: cv-training-500tb", "name: '0755'"),
                 ("domain: cv", "domain: 'cv'")):
        assert edit[0] in EXAMPLE
        parse_requirements(EXAMPLE.replace(*edit, 1), "s.yaml")


def test_a_yaml11_reading_and_a_pydantic_problem_in_one_pass() -> None:
    text = EXAMPLE.replace("gpus: 512", "gpus: 0512").replace("domain: cv", "domain: vision")
    problems = _problems(text)
    assert [p.split(": ")[1] for p in problems] == ["business.domain", "compute.gpus"]


def _merged(text: str) -> object:
    return construct(yaml.compose(text, Loader=yaml.SafeLoader))


def test_merge_list_earlier_maps_win_and_own_keys_win_over_all() -> None:
    # PyYAML 6.0.4 alone gives {'count': 2}: it de-duplicates merged keys by the key string's identity, so only
    # one-character (interned) keys came out right.
    text = "a: &a {count: 1, only_a: x}\nb: &b {count: 2, only_b: y}\nc:\n  <<: [*a, *b]\n"
    assert yaml.safe_load(text)["c"]["count"] in (1, 2)  # whichever the installed PyYAML does
    assert _merged(text)["c"] == {"count": 1, "only_a": "x", "only_b": "y"}  # type: ignore[index]
    text = "a: &a {count: 1}\nb: &b {count: 2}\nc:\n  <<: [*a, *b]\n  count: 3\n"
    assert _merged(text)["c"] == {"count": 3}  # type: ignore[index]
    text = "a: &a {count: 1}\nc:\n  count: 3\n  <<: *a\n"
    assert _merged(text)["c"] == {"count": 3}  # type: ignore[index]
    nested = "a: &a {count: 1}\nb: &b {<<: *a, name: b}\nc:\n  <<: [*b]\n"
    assert _merged(nested)["c"] == {"count": 1, "name": "b"}  # type: ignore[index]


def test_merge_of_a_scalar_is_refused_with_the_line() -> None:
    problems = _problems(EXAMPLE.replace("compute:\n", "compute:\n  <<: 5\n", 1))
    assert len(problems) == 1 and "s.yaml:13: (document): not valid YAML: expected a mapping or list of mappings " \
        "for merging, but found scalar" in problems[0], problems


def test_cli_exit_2_names_the_field_and_writes_nothing(tmp_path: Path) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text(EXAMPLE.replace("gpus: 512", "gpus: 0512", 1))
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "blueprints", "build", str(spec), "-o", str(out)],
                          capture_output=True, text=True, check=False, cwd=REPO)
    assert done.returncode == 2, done.stderr
    assert "compute.gpus: YAML reads 0512 as the octal number 330" in done.stderr
    assert "Traceback" not in done.stderr and not out.exists()
