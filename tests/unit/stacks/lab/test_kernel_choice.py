"""Which kernel the lab boots: one decision in the planner (``target.kernel`` -> ``LabImage.kernel``, traced), read by
the NVMe-oF auth rule, the image cache key and the apt index the kernel is fetched with."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from blueprints.errors import ClusterSmithError
from blueprints.loader import parse_requirements
from blueprints.planner import plan
from blueprints.planner.lab import LAB_KERNELS
from stacks.lab import apt_index, image
from stacks.lab.kernel import KernelPackage
from stacks.lab.mirror import find_mirror

REPO = Path(__file__).resolve().parents[4]
MIRROR = "http://deb.debian.org/debian"


def lab_spec(**target: object) -> str:
    """examples/lab.yaml without its kernel (the spec's default), or with ``target``'s fields."""
    spec = yaml.safe_load((REPO / "examples" / "lab.yaml").read_text())
    spec["target"].pop("kernel", None)
    spec["target"].update(target)
    return yaml.safe_dump(spec)


def test_the_example_lab_boots_6_1_decision_0010() -> None:
    bp = plan(parse_requirements((REPO / "examples" / "lab.yaml").read_text()))
    assert bp.lab is not None and bp.lab.image.kernel.value.release_series == "6.1"


def test_a_lab_without_a_kernel_boots_bookworm_6_1_and_plans_allowed_hosts_only() -> None:
    bp = plan(parse_requirements(lab_spec()))
    assert bp.lab is not None and bp.storage.nvmeof is not None
    kernel = bp.lab.image.kernel
    assert kernel.value == LAB_KERNELS["bookworm"] and kernel.value.release_series == "6.1"
    assert kernel.derived_from.spec == ("target.kernel",) and not kernel.value.nvme_auth
    assert bp.storage.nvmeof.auth.value == "none"
    assert "target.kernel" in bp.storage.nvmeof.auth.derived_from.spec


def test_the_backports_kernel_plans_dh_chap_traced_to_the_kernel() -> None:
    bp = plan(parse_requirements(lab_spec(kernel="bookworm-backports")))
    assert bp.lab is not None and bp.storage.nvmeof is not None
    kernel = bp.lab.image.kernel.value
    assert (kernel.apt_suite, kernel.release_series, kernel.nvme_auth, kernel.machine_index) == (
        "bookworm-backports", "6.12", True, False)
    auth = bp.storage.nvmeof.auth
    assert auth.value == "dhchap"
    assert auth.derived_from.spec == ("target.provider", "target.kernel") and "6.12" in auth.derived_from.formula
    assert bp.spec_values["target.kernel"] == "bookworm-backports"


def test_an_unknown_kernel_is_bad_input_naming_the_field_and_the_choices() -> None:
    with pytest.raises(ClusterSmithError) as err:
        parse_requirements(lab_spec(kernel="trixie"))
    text = str(err.value)
    assert "target.kernel" in text and "bookworm-backports" in text


def test_the_kernel_suite_is_part_of_the_image_cache_key() -> None:
    default = plan(parse_requirements(lab_spec())).lab
    backports = plan(parse_requirements(lab_spec(kernel="bookworm-backports"))).lab
    assert default is not None and backports is not None
    package = KernelPackage(name="linux-image-x-amd64", version="1")  # same package: only the suite differs
    a, b = image.inputs_for(default.image, package), image.inputs_for(backports.image, package)
    assert (a.kernel_suite, b.kernel_suite) == ("bookworm", "bookworm-backports") and a.key() != b.key()


def test_the_machine_kernel_uses_the_machine_index_as_it_is(tmp_path: Path) -> None:
    default = plan(parse_requirements(lab_spec())).lab
    assert default is not None
    assert image.kernel_index(default.image, tmp_path) == apt_index.MACHINE_INDEX
    assert apt_index.MACHINE_INDEX.options == () and not apt_index.MACHINE_INDEX.private


def test_a_private_index_keeps_every_apt_path_under_the_lab_cache(tmp_path: Path) -> None:
    index = apt_index.private_index(tmp_path / "apt" / "bookworm-backports", MIRROR, "bookworm-backports")
    apt_index.prepare(index)
    assert (tmp_path / "apt" / "bookworm-backports" / "sources.list").read_text() == (
        f"deb {MIRROR} bookworm-backports main\n")
    dirs = {o.split("=", 2)[1]: o.split("=", 2)[2] for o in index.options if o.startswith("-o=Dir::")}
    assert set(dirs) == {"Dir::Etc::SourceList", "Dir::Etc::SourceParts", "Dir::Etc::Preferences",
                         "Dir::Etc::PreferencesParts", "Dir::State::Lists", "Dir::Cache"}
    assert all(value.startswith(str(tmp_path)) for value in dirs.values()), dirs
    # the system keyring verifies it: nothing overrides Dir::Etc::Trusted, and insecure sources stay refused
    assert not any("Trusted" in o for o in index.options)
    assert "-o=Acquire::AllowInsecureRepositories=false" in index.options
    assert (tmp_path / "apt" / "bookworm-backports" / "lists" / "partial").is_dir()


def test_the_backports_kernel_is_fetched_from_the_machine_mirror_with_its_suite(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    sources = tmp_path / "debian.sources"
    sources.write_text(f"Types: deb\nURIs: {MIRROR}\nSuites: bookworm bookworm-updates\nComponents: main\n")
    monkeypatch.setattr(image, "find_mirror", lambda suite: find_mirror(suite, (sources,)))
    backports = plan(parse_requirements(lab_spec(kernel="bookworm-backports"))).lab
    assert backports is not None
    index = image.kernel_index(backports.image, tmp_path / "cache")
    assert index.source_line == f"deb {MIRROR} bookworm-backports main"
    assert index.root == tmp_path / "cache" / "apt" / "bookworm-backports"
