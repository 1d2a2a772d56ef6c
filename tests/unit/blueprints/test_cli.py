"""The command line as a user runs it: real subprocesses, exit codes, stderr, files on disk."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from blueprints.blueprint import dump_blueprint
from blueprints.loader import load_requirements
from blueprints.planner import plan

REPO = Path(__file__).resolve().parents[3]
CANONICAL = REPO / "examples" / "cv-training-500tb.yaml"

ENV = {"COLUMNS": "200", "PATH": "/usr/bin:/bin", "CLUSTERSMITH_SECRETS_DIR": os.environ["CLUSTERSMITH_SECRETS_DIR"]}


def run(*args: str | Path, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "blueprints", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=120, env=ENV)


def test_validate_ok() -> None:
    r = run("validate", CANONICAL)
    assert r.returncode == 0, r.stderr
    assert "is valid (512 GPUs on 64 dgx-h100 nodes" in r.stdout


def test_plan_piped_cuts_no_cell() -> None:
    """Issue 43 item 6: piped into a file or a CI log (no terminal, no COLUMNS), plan was drawn 80 columns wide and
    cut 55 cells to '…'."""
    env = {k: v for k, v in ENV.items() if k != "COLUMNS"}
    done = subprocess.run([sys.executable, "-m", "blueprints", "plan", str(CANONICAL)], cwd=REPO, capture_output=True,
                          text=True, timeout=120, env=env, check=False)
    assert done.returncode == 0 and "…" not in done.stdout, done.stdout[:2000]
    assert "storage.read_throughput" in done.stdout


def test_plan_shows_the_arithmetic() -> None:
    r = run("plan", CANONICAL)
    assert r.returncode == 0, r.stderr
    # the hot tier: 12 Ceph hosts, each bound by 24 OSDs x the catalog's published per-OSD read (planner/ceph.py)
    for fragment in ("12 nodes x 41.9275GB/s = 503.13GB/s", "512 / 8 = 64", "│ replica-3  │ 12 (read)",
                     "chosen, pareto", "24 OSDs x 1.627GiB/s replicated",
                     "leaf switches", "ceil(512 / 64) = 8", "spine switches", "storage fabric", "leaf / spine / core",
                     "4 / 2 / 0", "ceil(84 hosts / 64) x 2 NICs = 4", "26 << 2 | ECT(0) = 106", ">= 500 GB/s",
                     "wiring (switch/cabling.csv", "compute node-leaf cables"):
        assert fragment in r.stdout


Built = Callable[[Path], tuple[subprocess.CompletedProcess[str], Path]]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """`clustersmith build` of an example into one folder, run once for all the tests that build or read it (the
    canonical example was built three times): the run and the build folder."""
    out = tmp_path_factory.mktemp("out")
    done: dict[Path, tuple[subprocess.CompletedProcess[str], Path]] = {}

    def build(spec: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
        if spec not in done:
            done[spec] = run("build", spec, "-o", out), out / spec.stem
        return done[spec]

    return build


def test_build_and_explain(built: Built) -> None:
    r, folder = built(CANONICAL)
    assert r.returncode == 0, r.stderr
    assert (folder / "blueprint.yaml").is_file()
    r = run("explain", folder, "acceptance.storage.read_throughput")
    assert r.returncode == 0, r.stderr
    assert "acceptance.checks.storage.read_throughput = >= 500 GB/s (error)" in r.stdout
    assert "line  22  performance.storage.read_throughput: >=500GB/s" in r.stdout
    r = run("explain", folder, "storage.tiers.hot.nodes")
    assert "max(read: 500GB/s / 41.9275GB/s per node [min(" in r.stdout


def test_explain_unknown_path_lists_what_exists(built: Built) -> None:
    r = run("explain", built(CANONICAL)[1], "storage.tiers.hott")
    assert r.returncode == 2
    assert "storage.tiers.hott: no such value in the Blueprint; under storage.tiers there is: local_cache, hot" \
        in r.stderr
    assert "Traceback" not in r.stderr


def test_bad_spec_exit_2_no_traceback_nothing_written(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(CANONICAL.read_text().replace("  gpus: 512", "  gpus: many").replace("jitter:", "jiter:"))
    out = tmp_path / "out"
    r = run("build", bad, "-o", out)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert f"{bad}:14: compute.gpus:" in r.stderr
    assert "performance.storage.jiter: unknown key 'jiter'" in r.stderr
    assert "did you mean 'jitter'?" in r.stderr
    assert not out.exists() or not any(out.iterdir())


def test_infeasible_spec_points_at_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "fast.yaml"
    bad.write_text(CANONICAL.read_text().replace('"<100us"', '"<20us"'))
    r = run("validate", bad)
    assert r.returncode == 2
    assert f"{bad}:24: performance.storage.latency_p99: latency_p99 <20us cannot be met" in r.stderr


def test_missing_file_and_bad_usage() -> None:
    r = run("validate", "nope.yaml")
    assert r.returncode == 2 and "cannot read the spec" in r.stderr and "Traceback" not in r.stderr
    r = run("frobnicate")
    assert r.returncode == 2 and "No such command 'frobnicate'" in r.stderr


@pytest.mark.parametrize("redirect", ["> /dev/full", ">&-"])
@pytest.mark.parametrize("command", ["blueprints validate examples/lab.yaml", "validators parse fio "
                                     "tests/fixtures/fio/results/fio/seq_read/client-1.json"])
def test_a_full_or_closed_stdout_is_said_not_a_traceback(command: str, redirect: str) -> None:
    """Issue 43 item 3: `validate` with stdout on a full device ended in a traceback."""
    done = subprocess.run(f"{sys.executable} -m {command} {redirect}", shell=True, cwd=REPO, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "error: cannot write the output: " in done.stderr and "(standard output)" in done.stderr


def test_schema_is_json_schema() -> None:
    """Issue 43 item 6: the printed schema names its draft, so a validator or editor need not guess it, and every
    example is valid under it as printed."""
    import jsonschema

    r = run("schema")
    schema = json.loads(r.stdout)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["title"] == "Requirements"
    assert "metadata" in schema["properties"]
    assert schema["additionalProperties"] is False
    validator = jsonschema.validators.validator_for(schema)
    assert validator is jsonschema.Draft202012Validator
    validator.check_schema(schema)
    for example in sorted((REPO / "examples").glob("*.yaml")):
        errors = list(validator(schema).iter_errors(yaml.safe_load(example.read_text())))
        assert not errors, f"{example.name}: {errors[0].json_path}: {errors[0].message}"


def test_schema_defaults_are_valid_under_the_schema() -> None:
    """Issue 43 item 6: a default was an internal object ({"value": 0.0, "text": "0B"}) that failed its own type."""
    import jsonschema

    from blueprints.spec import json_schema

    schema = json_schema()
    validator = jsonschema.Draft202012Validator(schema)
    for name, model in schema["$defs"].items():
        for field, prop in model.get("properties", {}).items():
            if "default" in prop:
                sub = {**prop, "$defs": schema["$defs"]}
                errors = list(jsonschema.Draft202012Validator(sub).iter_errors(prop["default"]))
                assert not errors, f"{name}.{field} default {prop['default']!r}: {errors[0].message}"
    size = schema["$defs"]["Data"]["properties"]["training_set"]
    assert not list(validator.evolve(schema=size).iter_errors("500TB"))
    refused = validator.evolve(schema=size)
    assert list(refused.iter_errors("500Tb")) and list(refused.iter_errors(500))


@pytest.mark.parametrize("example", sorted((REPO / "examples").glob("*.yaml")), ids=lambda p: p.stem)
def test_every_example_builds(example: Path, built: Built) -> None:
    r, folder = built(example)
    assert r.returncode == 0, r.stderr
    assert (folder / "blueprint.yaml").is_file()


def test_make_demo_works_for_a_spec_of_any_file_name(tmp_path: Path) -> None:
    """Issue 43 item 6: `make demo SPEC=my.yaml` failed at explain whenever the file name was not metadata.name."""
    spec = tmp_path / "my-own-name.yaml"
    spec.write_text((REPO / "examples" / "lab.yaml").read_text())
    done = subprocess.run(["make", "-s", "demo", f"SPEC={spec}", f"OUT={tmp_path / 'out'}",
                           f"VENV={Path(sys.executable).parent.parent}"], cwd=REPO, capture_output=True, text=True,
                          timeout=300, check=False, env={**os.environ, "CLUSTERSMITH_SECRETS_DIR": str(tmp_path / "s")})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "rule:    acceptance.read_throughput" in done.stdout and (tmp_path / "out" / "lab").is_dir()


@pytest.mark.parametrize(("path", "what"), [("", "empty"), ("  ", "empty"), ("storage..tiers", "has an empty step")])
def test_explain_refuses_a_blank_path(tmp_path: Path, path: str, what: str) -> None:
    """Issue 43 item 6: `explain DIR ''` printed the whole Blueprint on one line; a blank path is bad input."""
    (tmp_path / "blueprint.yaml").write_text(dump_blueprint(plan(load_requirements(CANONICAL))))
    r = run("explain", tmp_path, path)
    assert (r.returncode, r.stdout) == (2, "")
    assert (f"  PATH: {what}; expected a dotted path to one value of the Blueprint, e.g. "
            f"acceptance.storage.read_throughput (got {path!r}); its sections: target, hosts, compute, fabric, ") \
        in r.stderr
    assert "Traceback" not in r.stderr
