"""One row per error message: bad spec in, the exact problem out (path, line, value, expectation, hint)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from blueprints.errors import SpecError
from blueprints.loader import load_requirements, parse_requirements

REPO = Path(__file__).resolve().parents[3]
BASE = (REPO / "examples" / "cv-training-500tb.yaml").read_text()


def _with(edit: str, old: str) -> str:
    assert old in BASE, old
    return BASE.replace(old, edit, 1)


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.lstrip().startswith(needle))


CASES = [
    # (spec text edit, expected path, message fragment, value, hint, line needle)
    (("busines:", "business:"), "busines", "unknown key 'busines'; expected one of: apiVersion, kind, metadata",
     None, "did you mean 'business'?", "busines:"),
    (("  trainng_set: 500TB", "  training_set: 500TB"), "data.trainng_set", "unknown key 'trainng_set'",
     None, "did you mean 'training_set'?", "trainng_set"),
    (("  accelerator: H100", "  accelerator: H100-SXM"), "compute.accelerator",
     "expected one of: H100-SXM, H200, B200, A100, L40S", "'H100'", "did you mean 'H100-SXM'?", "accelerator:"),
    (("  type: trainig", "  type: training"), "business.type", "expected one of: training, inference, mixed",
     "'trainig'", "did you mean 'training'?", "type: trainig"),
    (("  provider: bare-metal", "  provider: baremetal"), "target.provider",
     "unknown provider; expected one of: aws, gcp, azure, baremetal, lab", "'bare-metal'",
     "did you mean 'baremetal'?", "provider:"),
    (("  gpus: 0", "  gpus: 512"), "compute.gpus", "greater than 0", "0", None, "gpus:"),
    (("  training_set: 500XB", "  training_set: 500TB"), "data.training_set", "unknown unit 'XB' for a size",
     "'500XB'", None, "training_set:"),
    (("  hot_fraction: 120%", "  hot_fraction: 20%"), "data.hot_fraction", "expected a ratio between 0 and 1",
     "'120%'", None, "hot_fraction:"),
    (('    read_throughput: "<500GB/s"', '    read_throughput: ">=500GB/s"'), "performance.storage.read_throughput",
     "expected a lower bound such as '>=500GB/s'; < points the other way", "'<500GB/s'", None,
     "read_throughput:"),
    (('    latency_p99: ">100us"', '    latency_p99: "<100us"'), "performance.storage.latency_p99",
     "expected an upper bound such as '<100us'", "'>100us'", None, "latency_p99:"),
    (("  validation_set: 600TB", "  validation_set: 50TB"), "data.validation_set",
     "validation_set 600TB is larger than training_set 500TB; expected validation_set <= training_set", None, None,
     "validation_set:"),
    (("  training_set: 0TB", "  training_set: 500TB"), "data.training_set",
     "training_set is 0TB; expected a size above 0", None, None, "training_set:"),
    (("  name: CV_Training", "  name: cv-training-500tb"), "metadata.name",
     "expected Design name: lower-case letters, digits and dashes; names the output folder", "'CV_Training'",
     None, "name: CV_Training"),
    (("apiVersion: clustersmith/v2", "apiVersion: clustersmith/v1alpha1"), "apiVersion",
     "expected one of: clustersmith/v1alpha1", "'clustersmith/v2'", "did you mean 'clustersmith/v1alpha1'?",
     "apiVersion"),
    (("  fabric: ethernet", "  fabric: roce"), "target.fabric", "expected one of: roce, infiniband",
     "'ethernet'", None, "fabric:"),
    (("performance:\n  predicted: {floor: 110%}\n  storage:", "performance:\n  storage:"),
     "performance.predicted.floor", "expected a ratio between 0 and 1", "'110%'", None, "predicted:"),
    (("performance:\n  predicted: {flor: 80%}\n  storage:", "performance:\n  storage:"),
     "performance.predicted.flor", "unknown key 'flor'", None, "did you mean 'floor'?", "predicted:"),
    (("performance:\n  predicted: {gate: 1}\n  storage:", "performance:\n  storage:"),
     "performance.predicted.gate", "expected true or false", "1", None, "predicted:"),
    (("costs: {amortise_months: 0}\ntarget:", "target:"), "costs.amortise_months", "greater than 0", "0", None,
     "costs:"),
    (("costs: {amortise_months: 241}\ntarget:", "target:"), "costs.amortise_months", "less than or equal to 240",
     "241", None, "costs:"),
    (("costs: {amortize_months: 36}\ntarget:", "target:"), "costs.amortize_months", "unknown key 'amortize_months'",
     None, "did you mean 'amortise_months'?", "costs:"),
]


@pytest.mark.parametrize(("edit", "path", "message", "value", "hint", "needle"), CASES,
                         ids=[c[1] + ":" + c[2][:20] for c in CASES])
def test_error_message(edit: tuple[str, str], path: str, message: str, value: str | None, hint: str | None,
                       needle: str) -> None:
    text = _with(*edit)
    with pytest.raises(SpecError) as info:
        parse_requirements(text, "spec.yaml")
    problems = [p for p in info.value.problems if p.path == path]
    assert problems, f"no problem at {path}: {info.value}"
    p = problems[0]
    assert message in p.message
    assert p.value == value
    assert p.hint == hint
    assert p.line == _line_of(text, needle)
    rendered = p.render("spec.yaml")
    assert rendered.startswith(f"spec.yaml:{p.line}: {path}: ")


def test_missing_key_names_what_it_is() -> None:
    text = BASE.replace("  hot_fraction: 20%\n", "")
    with pytest.raises(SpecError) as info:
        parse_requirements(text)
    (p,) = info.value.problems
    assert p.path == "data.hot_fraction"
    assert p.message.startswith("required key is missing (Share of the training set")
    assert p.line == _line_of(text, "data:")


def test_every_problem_in_one_pass() -> None:
    text = _with("  gpus: -1", "  gpus: 512").replace("  trainng", "  training").replace("jitter:", "jiter:")
    text = text.replace("  type: training", "  type: trianing")
    with pytest.raises(SpecError) as info:
        parse_requirements(text)
    paths = {p.path for p in info.value.problems}
    assert {"compute.gpus", "business.type", "performance.storage.jiter", "performance.storage.jitter"} <= paths


@pytest.mark.parametrize(
    ("business", "serving", "path", "message"),
    [
        ("training", True, "performance.serving",
         "performance.serving is set but business.type is 'training'; expected serving targets only for"),
        ("inference", False, "business.type",
         "business.type is 'inference' but performance.serving is missing; expected serving targets"),
    ],
)
def test_serving_rule(business: str, serving: bool, path: str, message: str) -> None:
    doc = yaml.safe_load(BASE)
    doc["business"]["type"] = business
    if serving:
        doc["performance"]["serving"] = {"p99_latency": "<50ms", "qps_per_gpu": 5000}
    with pytest.raises(SpecError) as info:
        parse_requirements(yaml.safe_dump(doc, sort_keys=False))
    (p,) = info.value.problems
    assert p.path == path
    assert message in p.message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: [1, 2\n", "not valid YAML"),
        ("- just\n- a list\n", "expected a mapping with apiVersion, kind, metadata, ... (got list)"),
        ("", "expected a mapping with apiVersion, kind, metadata, ... (got an empty document)"),
    ],
)
def test_not_a_spec(text: str, message: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_requirements(text)
    assert message in info.value.problems[0].message


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="cannot read the spec: No such file or directory"):
        load_requirements(tmp_path / "nope.yaml")
