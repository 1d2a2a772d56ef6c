"""Rule ``costs.*``: each part of the design priced from the price catalogue with its row, the parts no published
price covers named, totals over the priced parts only (and said so), and the arithmetic solved by hand here."""

from __future__ import annotations

import io
import shutil
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console

from blueprints.blueprint import Blueprint
from blueprints.catalog import Catalog, Price, load_catalog
from blueprints.errors import SpecError
from blueprints.loader import parse_requirements
from blueprints.planner import plan
from blueprints.summary import print_summary
from blueprints.summary_costs import read_on, stale_rows

REPO = Path(__file__).resolve().parents[4]
LLM = REPO / "examples" / "llm-training-16k.yaml"  # 16384 H100s: 2048 p5.48xlarge in us-east-1, FSx for Lustre


def planned(path: Path = LLM, catalog: Catalog | None = None, **target: Any) -> Blueprint:
    doc = yaml.safe_load(path.read_text())
    doc["target"].update(target)
    return plan(parse_requirements(yaml.safe_dump(doc)), catalog=catalog, spec_file=str(path))


def with_rows(*rows: dict[str, Any]) -> Catalog:
    """The shipped catalogue with ``rows`` added or replacing theirs (by name): prices made up for the arithmetic."""
    catalog = load_catalog()
    extra = {r["name"]: Price.model_validate({"url": "https://example.org/test", "read": "2026-12-01",
                                               "source": "made up for this test", **r}) for r in rows}
    return catalog.model_copy(update={"prices": catalog.prices.model_copy(
        update={"rows": {**catalog.prices.rows, **extra}})})


def test_on_demand_instances_are_priced_from_their_row_by_hand() -> None:
    costs = planned().costs
    gpu = costs.lines[0]
    assert (gpu.item, gpu.quantity, gpu.purchase) == ("p5.48xlarge", 2048, "on_demand")
    assert gpu.row is not None and gpu.row.name == "p5.48xlarge/us-east-1/on_demand" and gpu.row.price == 55.04
    assert gpu.per_hour is not None and gpu.per_month is not None
    assert gpu.per_hour.value == pytest.approx(2048 * 55.04)  # $112,721.92
    assert gpu.per_month.value == pytest.approx(112_721.92 * 730)  # $82,287,001.60
    assert gpu.per_hour.derived_from.formula.startswith("2048 instances x $55.04/h = $112,721.92/h (price row "
                                                        "p5.48xlarge/us-east-1/on_demand, read 2025-12-21 from https://")
    assert "compute.gpus" in gpu.per_hour.derived_from.spec and "target.region" in gpu.per_hour.derived_from.spec


def test_unknown_parts_are_named_and_the_total_says_it_covers_the_priced_parts_only() -> None:
    costs = planned().costs
    unknown = {line.item: line.unknown for line in costs.unpriced()}
    assert set(unknown) == {"m7i.2xlarge", "fsx-lustre-persistent2-1000"}
    assert unknown["m7i.2xlarge"] == "no row for m7i.2xlarge (on_demand, us-east-1) in the price catalogue"
    assert unknown["fsx-lustre-persistent2-1000"].startswith("fsx-lustre-persistent2-1000/any/on_demand: unknown (")
    assert not costs.complete and costs.total_per_hour is not None
    assert costs.total_per_hour.value == pytest.approx(112_721.92)
    assert costs.total_per_hour.derived_from.formula.endswith("; 2 parts unpriced, not in it")


def test_a_capacity_block_is_priced_at_its_own_row_and_a_reservation_is_unknown() -> None:
    block = planned(capacity_reservation="cr-0123456789abcdef0", capacity_block=True).costs.lines[0]
    assert block.purchase == "capacity_block" and block.row is not None
    assert block.row.name == "p5.48xlarge/any/capacity_block" and block.per_hour is not None
    assert block.per_hour.value == pytest.approx(2048 * 39.33)  # $80,547.84
    reserved = planned(capacity_reservation="cr-0123456789abcdef0").costs.lines[0]
    assert reserved.purchase == "reservation" and reserved.row is None and reserved.per_hour is None
    assert reserved.unknown == "a reservation's price is the user's contract with the provider"


def test_a_file_system_is_priced_per_gb_month_and_every_part_priced_makes_the_total_complete() -> None:
    catalog = with_rows(
        {"name": "fsx-lustre-persistent2-1000/any/on_demand", "item": "fsx-lustre-persistent2-1000", "region": "any",
         "purchase": "on_demand", "unit": "gb_month", "price": 0.6},
        {"name": "m7i.2xlarge/us-east-1/on_demand", "item": "m7i.2xlarge", "region": "us-east-1",
         "purchase": "on_demand", "unit": "hour", "price": 0.4})
    costs = planned(catalog=catalog).costs
    fs = next(line for line in costs.lines if line.item == "fsx-lustre-persistent2-1000")
    assert (fs.quantity, fs.unit) == (1_920_000, "GiB")  # the plan's 1875 TiB as FSx takes it
    assert fs.per_month is not None and fs.per_hour is not None
    assert fs.per_month.value == pytest.approx(1_920_000 * 0.6)  # $1,152,000.00 a month
    assert fs.per_hour.value == pytest.approx(1_152_000 / 730)  # $1,578.08 an hour
    assert costs.complete and costs.total_per_month is not None and costs.total_per_hour is not None
    assert costs.total_per_hour.value == pytest.approx(112_721.92 + 0.4 + 1_152_000 / 730)
    assert costs.total_per_month.value == pytest.approx((112_721.92 + 0.4) * 730 + 1_152_000)


def test_bare_metal_names_every_server_and_switch_unpriced_and_has_no_total() -> None:
    costs = planned(REPO / "examples" / "cv-training-500tb.yaml").costs
    assert costs.lines and not costs.complete and costs.total_per_hour is None and costs.total_per_month is None
    assert {line.purchase for line in costs.lines} == {"owned", "power"}
    items = {line.item for line in costs.lines}
    assert {"dgx-h100", "nvme-tlc-server", "SN5600-400G"} <= items
    assert all("list price amortised" in line.unknown for line in costs.lines if line.purchase == "owned")


def test_the_lab_buys_nothing() -> None:
    costs = planned(REPO / "examples" / "lab.yaml").costs
    assert costs.lines == () and costs.complete and costs.total_per_hour is None


def test_plan_shows_the_costs_with_their_rows_and_warns_of_a_row_older_than_the_catalogue_allows() -> None:
    bp = planned()
    out = io.StringIO()
    print_summary(bp, Console(file=out, width=400), today=date(2026, 12, 7))
    text = out.getvalue()
    assert "costs (USD, 730 h a month; priced parts only)" in text
    assert "$112,721.92" in text and "$82,287,001.60" in text and "total of the priced parts (2 unknown)" in text
    assert "https://github.com/tsaol/aws-gpu/blob/main/data/p5_family_all.js" in text  # whole, never cut
    assert "no row for m7i.2xlarge (on_demand, us-east-1) in the price catalogue" in text
    assert ("warning: price row p5.48xlarge/us-east-1/on_demand was read 2025-12-21, 351 days ago (more than 180)"
            in text)


def test_a_row_is_stale_only_past_max_age_and_a_month_or_year_counts_from_its_first_day() -> None:
    costs = planned().costs  # p5 read 2025-12-21, max 180 days
    assert stale_rows(costs, date(2026, 6, 19)) == []  # 180 days
    assert len(stale_rows(costs, date(2026, 6, 20))) == 1  # 181
    assert (read_on("2025"), read_on("2025-12"), read_on("2025-12-21")) == (
        date(2025, 1, 1), date(2025, 12, 1), date(2025, 12, 21))


def test_every_shipped_row_names_its_page_and_date_and_an_unknown_one_where_it_was_searched() -> None:
    prices = load_catalog().prices
    assert prices.rows and prices.max_age_days > 0
    for row in prices.rows.values():
        assert row.url.startswith("https://") and read_on(row.read) <= date(2026, 12, 7), row.name
        assert (row.searched if row.price == "unknown" else row.source), row.name


@pytest.mark.parametrize(("change", "message"), [
    ({"name": "p5.48xlarge/eu-west-1/on_demand"}, "a price row is named <item>/<region>/<purchase>"),
    ({"price": "unknown", "searched": ""}, "an unknown price says where it was searched for"),
    ({"price": 0}, "a price is above 0 and names its source"),
    ({"read": "21.12.2025"}, "String should match pattern"),
    ({"url": "http://example.org"}, "String should match pattern"),
])
def test_a_bad_catalogue_row_is_refused_naming_what_is_wrong(tmp_path: Path, change: dict[str, Any],
                                                             message: str) -> None:
    folder = tmp_path / "catalog"
    shutil.copytree(REPO / "blueprints" / "catalog", folder, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    doc = yaml.safe_load((folder / "prices.yaml").read_text())
    doc["rows"][0].update(change)
    (folder / "prices.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(ValueError, match=message):
        load_catalog.__wrapped__(folder)


def test_two_rows_of_one_name_are_refused(tmp_path: Path) -> None:
    folder = tmp_path / "catalog"
    shutil.copytree(REPO / "blueprints" / "catalog", folder, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    doc = yaml.safe_load((folder / "prices.yaml").read_text())
    doc["rows"].append(doc["rows"][0])
    (folder / "prices.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(ValueError, match="two rows share a name"):
        load_catalog.__wrapped__(folder)


def test_power_is_priced_at_the_rated_maximum_times_the_stated_pue_and_price_by_hand() -> None:
    """64 DGX H100 at 10.2 kW at most (the catalogue's, from NVIDIA's user guide), PUE 1.4, $0.10/kWh:
    64 x 10.2 x 1.4 x 0.10 = $91.392 an hour, x 730 = $66,716.16 a month. The storage servers have no power figure."""
    doc = yaml.safe_load((REPO / "examples" / "cv-training-500tb.yaml").read_text())
    doc["costs"] = {"power": {"price_per_kwh": 0.10, "pue": 1.4}}
    costs = plan(parse_requirements(yaml.safe_dump(doc))).costs
    power = [line for line in costs.lines if line.purchase == "power"]
    gpu = next(line for line in power if line.item == "dgx-h100")
    assert gpu.per_hour is not None and gpu.per_month is not None and gpu.row is None
    assert gpu.per_hour.value == pytest.approx(91.392) and gpu.per_month.value == pytest.approx(66_716.16)
    assert gpu.per_hour.derived_from.formula == ("64 hosts x 10.2 kW at most (dgx-h100's rated maximum input) x "
                                                 "PUE 1.4 x $0.10/kWh = $91.39/h")
    assert {"costs.power.price_per_kwh", "costs.power.pue", "compute.gpus"} <= set(gpu.per_hour.derived_from.spec)
    assert gpu.stated == "$0.10/kWh and PUE 1.4 (costs.power)"
    unknown = {line.item: line.unknown for line in power if line.per_month is None}
    assert unknown["nvme-tlc-server"] == "no rated power for nvme-tlc-server in the catalogue"
    # the only priced line: the total is the power of the GPU nodes, and says what it leaves out
    assert costs.total_per_month is not None and costs.total_per_month.value == pytest.approx(66_716.16)
    assert not costs.complete
    out = io.StringIO()
    print_summary(plan(parse_requirements(yaml.safe_dump(doc))), Console(file=out, width=400))
    assert "stated: $0.10/kWh and PUE 1.4 (costs.power)" in out.getvalue()


def test_without_a_stated_power_price_power_is_one_unknown_line_that_says_how_to_price_it() -> None:
    costs = planned(REPO / "examples" / "cv-training-500tb.yaml").costs
    (power,) = [line for line in costs.lines if line.purchase == "power"]
    assert power.part == "power (every host)" and power.per_month is None
    assert power.unknown.startswith("no price stated: costs.power (price_per_kwh and pue")


@pytest.mark.parametrize(("power", "field", "message"), [
    ({"price_per_kwh": 0, "pue": 1.4}, "costs.power.price_per_kwh", "greater than 0"),
    ({"price_per_kwh": 0.1, "pue": 0.9}, "costs.power.pue", "greater than or equal to 1"),
    ({"price_per_kwh": 0.1}, "costs.power.pue", "required key is missing"),
])
def test_a_power_price_that_cannot_hold_is_refused_naming_the_field(power: dict[str, float], field: str,
                                                                     message: str) -> None:
    doc = yaml.safe_load((REPO / "examples" / "cv-training-500tb.yaml").read_text())
    doc["costs"] = {"power": power}
    with pytest.raises(SpecError) as info:
        parse_requirements(yaml.safe_dump(doc))
    assert any(p.path == field and message in p.message for p in info.value.problems), info.value.problems


def test_costs_on_a_target_that_buys_nothing_is_refused() -> None:
    doc = yaml.safe_load(LLM.read_text())
    doc["costs"] = {"power": {"price_per_kwh": 0.1, "pue": 1.2}}
    with pytest.raises(SpecError) as info:
        parse_requirements(yaml.safe_dump(doc))
    (problem,) = info.value.problems
    assert problem.path == "costs" and "target.provider is 'aws'" in problem.message
