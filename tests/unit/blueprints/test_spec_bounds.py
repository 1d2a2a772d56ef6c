"""Issue 16 item 2: hostile input is refused fast, exit 2, with the field named and nothing written."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from blueprints.errors import SpecError
from blueprints.loader import MAX_ALIASES, MAX_DEPTH, MAX_NODES, MAX_SPEC_BYTES, load_requirements, parse_requirements

REPO = Path(__file__).resolve().parents[3]
LAB = (REPO / "examples" / "lab.yaml").read_text()


def _problems(text: str) -> list[str]:
    with pytest.raises(SpecError) as info:
        parse_requirements(text, "s.yaml")
    return [p.render("s.yaml") for p in info.value.problems]


def _bomb(levels: int, width: int = 9) -> str:
    lines = ["x0: &x0 [" + ", ".join(['"ha"'] * width) + "]"]
    for i in range(1, levels + 1):
        lines.append(f"x{i}: &x{i} [" + ", ".join([f"*x{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def test_alias_bomb_refused_fast() -> None:
    text = _bomb(7, 5)  # 35 aliases, 5**7 = 78,125 values once expanded
    assert len(text) < 400
    start = time.monotonic()
    problems = _problems(text)
    assert time.monotonic() - start < 1.0
    assert problems == [f"s.yaml:1: x5.1.1.2.3.3.3: the document expands to more than {MAX_NODES} values (YAML "
                        "aliases); expected a spec that writes its values out"]


def test_too_many_aliases() -> None:
    text = "a: &a 1\nb: [" + ", ".join(["*a"] * (MAX_ALIASES + 1)) + "]\n"
    assert _problems(text) == [f"s.yaml:2: b: more than {MAX_ALIASES} YAML aliases (*name); expected a spec that "
                               "writes its values out"]


@pytest.mark.parametrize("text", ["a: &a [*a]\n", "a: &a {b: *a}\n"])
def test_recursive_alias(text: str) -> None:
    (problem,) = _problems(text)
    assert problem.startswith("s.yaml:1: a.")
    assert "a YAML alias refers to a mapping or list that contains it; expected a value that ends" in problem


def test_deep_nesting() -> None:
    (problem,) = _problems("metadata: " + "[" * 50_000 + "]" * 50_000 + "\n")
    assert problem == (f"s.yaml:1: metadata{'.0' * MAX_DEPTH}: nested more than {MAX_DEPTH} levels deep; "
                       "expected a spec like the examples (3 levels)")


def test_duplicate_key_names_both_lines() -> None:
    text = LAB.replace("  gpus: 2\n", "  gpus: 2\n  gpus: 100000\n")
    line = LAB.splitlines().index("  gpus: 2") + 1
    assert _problems(text) == [f"s.yaml:{line + 1}: compute.gpus: duplicate key 'gpus' on lines {line} and "
                               f"{line + 1}; expected each key once (YAML would silently keep the last)"]


def test_huge_integer() -> None:
    (problem,) = _problems(LAB.replace("  gpus: 2\n", "  gpus: 7" + "3" * 4999 + "\n"))
    assert "compute.gpus: an integer of 5000 digits; expected a number of at most 18 digits" in problem


@pytest.mark.parametrize(("edit", "message"), [
    (("hot_fraction: 25%", "hot_fraction: 1e308"),
     "data.hot_fraction: expected a ratio between 0 and 1 (or 0% to 100%) (got '1e308')"),
    (("training_set: 2GiB", "training_set: 9e24B"),
     "data.training_set: above the largest size clustersmith plans for, 1000EB; expected a size such as '500TB' "
     "(got '9e24B')"),
    (("training_set: 2GiB", "training_set: 1.0e400TB"), "data.training_set: expected a finite size such as '500TB'"),
    (("training_set: 2GiB", "training_set: 1.0e400"), "data.training_set: a number with no unit; expected a size "
     "with its unit, such as '500TB' (got '1.0e400')"),
    (("latency_p99: \"<20ms\"", "latency_p99: \"<100\""),
     "performance.storage.latency_p99: a number with no unit; expected a duration with its unit, such as '100us' "
     "(as in '<100us') (got '<100')"),
    (("read_throughput: \">=20MB/s\"", "read_throughput: 20000000"),
     "performance.storage.read_throughput: a number with no unit; expected a rate with its unit, such as '500GB/s' "
     "(got 20000000)"),
    (("memory: 2GiB", "memory: 0B"), "target.memory: memory 0B per VM; expected 1GiB to 64GiB"),
    (("memory: 2GiB", "memory: 1TiB"), "target.memory: memory 1TiB per VM; expected 1GiB to 64GiB"),
])
def test_numbers_in_range_and_with_units(edit: tuple[str, str], message: str) -> None:
    assert edit[0] in LAB
    problems = _problems(LAB.replace(*edit))
    assert len(problems) == 1 and message in problems[0], problems


def test_problems_still_in_one_pass() -> None:
    text = LAB.replace("latency_p99: \"<20ms\"", "latency_p99: \"<100\"").replace("memory: 2GiB", "memory: 0")
    problems = _problems(text)
    assert [p.split(": ")[1] for p in problems] == ["performance.storage.latency_p99", "target.memory"]


def test_oversized_text() -> None:
    assert _problems("#" * (MAX_SPEC_BYTES + 1)) == [
        f"s.yaml: (document): the spec is {MAX_SPEC_BYTES + 1} characters; expected at most {MAX_SPEC_BYTES}"]


def _load_problem(path: Path) -> str:
    with pytest.raises(SpecError) as info:
        load_requirements(path)
    (problem,) = info.value.problems
    return problem.render(str(path))


def test_special_files_refused_without_reading(tmp_path: Path) -> None:
    fifo = tmp_path / "spec.yaml"
    os.mkfifo(fifo)
    assert _load_problem(fifo) == f"{fifo}: (document): the spec is a FIFO; expected a regular YAML file"
    assert _load_problem(Path("/dev/zero")) == ("/dev/zero: (document): the spec is a character device; expected a "
                                                "regular YAML file")
    assert _load_problem(tmp_path) == f"{tmp_path}: (document): the spec is a directory; expected a regular YAML file"
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * (MAX_SPEC_BYTES + 1))
    assert _load_problem(big) == (f"{big}: (document): the spec is larger than {MAX_SPEC_BYTES} bytes; expected a "
                                  "YAML file of a few KB")
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"a: \xe9\n")
    assert _load_problem(latin) == (f"{latin}: (document): the spec is not UTF-8 text (byte 3); expected a UTF-8 "
                                    "YAML file")


def test_cli_exit_2_nothing_written(tmp_path: Path) -> None:
    spec = tmp_path / "bomb.yaml"
    spec.write_text(_bomb(7))  # 63 aliases, under MAX_ALIASES: the expansion bound refuses it
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "blueprints", "build", str(spec), "-o", str(out)],
                       capture_output=True, text=True, timeout=60, cwd=REPO)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    assert f"bomb.yaml:1: x4.0.2.0.5.2: the document expands to more than {MAX_NODES} values" in r.stderr
    assert not out.exists() or not any(out.iterdir())
