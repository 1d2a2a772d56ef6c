"""Rule ``storage.least_cost`` (issue 41 item 2): where every server shape a tier may take has a list price, a
mixed-integer program (HiGHS through scipy.optimize.milp) picks the shape, protection and server count of least
monthly cost; elsewhere the rules decide and the plan names the missing rows. The instances are solved by hand here;
the prices are made up for the arithmetic (the shipped catalogue has no storage server's list price)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from blueprints.blueprint import Blueprint, TierPlan
from blueprints.catalog import Catalog, Price, load_catalog
from blueprints.errors import InfeasibleError
from blueprints.loader import parse_requirements
from blueprints.planner import plan
from blueprints.summary import print_summary

REPO = Path(__file__).resolve().parents[4]
CV = REPO / "examples" / "cv-training-500tb.yaml"


def listed(**prices: float) -> Catalog:
    """The shipped catalogue with a made-up list price (US dollars, whole server) for each named server shape."""
    catalog = load_catalog()
    rows = {f"{name}/any/list": Price(name=f"{name}/any/list", item=name, region="any", purchase="list", unit="each",
                                      price=price, source="made up for this test", url="https://example.org/test",
                                      read="2026-12-01")
            for name, price in prices.items()}
    return catalog.model_copy(update={"prices": catalog.prices.model_copy(
        update={"rows": {**catalog.prices.rows, **rows}})})


def planned(catalog: Catalog, **data: Any) -> Blueprint:
    doc = yaml.safe_load(CV.read_text())
    doc["data"].update(data)
    return plan(parse_requirements(yaml.safe_dump(doc)), catalog=catalog, spec_file=str(CV))


def tier(bp: Blueprint, name: str) -> TierPlan:
    return next(t for t in bp.storage.tiers if t.name == name)


# 8 PB of training data, 1 % hot, no validation set: the warm tier holds 8 PB x 0.99 = 7.92 PB, bound by capacity.
# One QLC server holds 24 x 61.44 TB = 1474.56 TB raw, one TLC server 24 x 15.36 TB = 368.64 TB. Servers needed:
#   QLC ec-8+2: 7.92 x 1.25 = 9.9 PB / 1474.56 TB = 7, failure domains 11 -> 11    x $5,000 = $55,000
#   QLC ec-6+3: 7.92 x 1.5 = 11.88 PB -> 9, domains 10                      -> 10    x $5,000 = $50,000
#   QLC ec-4+2: 11.88 PB -> 9, domains 7                                    ->  9    x $5,000 = $45,000 (fewest)
#   QLC replica-3: 23.76 PB -> 17                                            -> 17    x $5,000 = $85,000
#   TLC ec-8+2: 9.9 PB / 368.64 TB = 26.9                                    -> 27    x $1,500 = $40,500 (cheapest)
#   TLC ec-6+3 and ec-4+2: 11.88 PB -> 33 x $1,500 = $49,500; TLC replica-3: 23.76 PB -> 65 x $1,500 = $97,500
# with QLC servers at $300,000 and TLC at $90,000, each over the default 60 months ($5,000 and $1,500 a month).
BIG = {"training_set": "8PB", "validation_set": "0TB", "hot_fraction": "1%"}


def test_fewest_servers_is_not_the_cheapest_and_cost_decides_where_every_shape_is_priced() -> None:
    bp = planned(listed(**{"nvme-qlc-server": 300_000, "nvme-tlc-server": 90_000}), **BIG)
    warm = tier(bp, "warm")
    assert warm.decided_by == "cost" and warm.unpriced == ()
    assert (warm.server, warm.protection.value, warm.nodes.value) == ("nvme-tlc-server", "ec-8+2", 27)
    assert warm.protection.derived_from.rule == "storage.least_cost"
    assert "costs.amortise_months" in warm.protection.derived_from.spec
    assert warm.protection.derived_from.formula.endswith(
        "27 nodes x [nvme-tlc-server $90,000.00 / 60 months = $1,500.00 a month (price row nvme-tlc-server/any/list, "
        "read 2026-12-01 from https://example.org/test)] = $40,500.00 a month")
    by = {(o.server, o.protection): o for o in warm.options}
    assert len(by) == 8 and [o for o in warm.options if o.chosen] == [by[("nvme-tlc-server", "ec-8+2")]]
    fewest = by[("nvme-qlc-server", "ec-4+2")]
    assert (fewest.nodes, fewest.binding, fewest.per_month) == (9, "capacity", pytest.approx(45_000))
    assert min(o.nodes for o in warm.options) == 9
    assert {k: (o.nodes, round(o.per_month or 0)) for k, o in by.items()} == {
        ("nvme-qlc-server", "ec-8+2"): (11, 55_000), ("nvme-qlc-server", "ec-6+3"): (10, 50_000),
        ("nvme-qlc-server", "ec-4+2"): (9, 45_000), ("nvme-qlc-server", "replica-3"): (17, 85_000),
        ("nvme-tlc-server", "ec-8+2"): (27, 40_500), ("nvme-tlc-server", "ec-6+3"): (33, 49_500),
        ("nvme-tlc-server", "ec-4+2"): (33, 49_500), ("nvme-tlc-server", "replica-3"): (65, 97_500)}
    # the rules, for the same tier, take the fewest servers
    rules = tier(planned(load_catalog(), **BIG), "warm")
    assert (rules.decided_by, rules.server, rules.protection.value, rules.nodes.value) == (
        "rules", "nvme-qlc-server", "ec-4+2", 9)


def test_a_cheaper_qlc_server_turns_the_choice_and_the_amortisation_period_scales_every_cost() -> None:
    warm = tier(planned(listed(**{"nvme-qlc-server": 200_000, "nvme-tlc-server": 90_000}), **BIG), "warm")
    assert (warm.server, warm.protection.value, warm.nodes.value) == ("nvme-qlc-server", "ec-4+2", 9)
    chosen = next(o for o in warm.options if o.chosen)
    assert chosen.per_month == pytest.approx(9 * 200_000 / 60)  # $30,000 < TLC ec-8+2's $40,500
    doc = yaml.safe_load(CV.read_text())
    doc["data"].update(BIG)
    doc["costs"] = {"amortise_months": 30}
    bp = plan(parse_requirements(yaml.safe_dump(doc)),
              catalog=listed(**{"nvme-qlc-server": 200_000, "nvme-tlc-server": 90_000}))
    half = next(o for o in tier(bp, "warm").options if o.chosen)
    assert half.per_month == pytest.approx(2 * chosen.per_month) and half.server == chosen.server


def test_a_tier_with_an_unpriced_shape_is_decided_by_the_rules_which_name_the_missing_rows() -> None:
    bp = planned(listed(**{"nvme-qlc-server": 300_000, "nvme-tlc-server": 90_000}), **BIG)
    cold = tier(bp, "cold")  # the cold tier may take HDD servers too, and their price is unknown
    assert cold.decided_by == "rules" and cold.unpriced == ("hdd-server/any/list",)
    assert cold.protection.derived_from.rule == "storage.ec_where_it_saves_servers"
    assert {o.server for o in cold.options} == {"hdd-server"} and all(o.per_month is None for o in cold.options)
    hot = tier(bp, "hot")  # QLC reads 4k in 150 us + 2 us on the wire: too slow for <100us, so TLC only
    assert hot.decided_by == "cost" and {o.server for o in hot.options} == {"nvme-tlc-server"}
    out = io.StringIO()
    print_summary(bp, Console(file=out, width=400))
    text = out.getvalue()
    assert "storage options (cost against read headroom and raw capacity)" in text
    assert "warm: least cost (HiGHS)" in text and "cold: rules (unpriced: hdd-server/any/list)" in text
    assert "$40,500.00" in text and "27 (capacity)" in text


def test_the_shipped_catalogue_prices_no_storage_server_so_the_rules_decide_as_before() -> None:
    bp = plan(parse_requirements(CV.read_text()), spec_file=str(CV))
    for t in bp.storage.tiers[1:]:
        assert t.decided_by == "rules" and t.unpriced and all(o.per_month is None for o in t.options)
    hot = tier(bp, "hot")
    assert (hot.protection.value, hot.nodes.value) == ("replica-3", 12)
    assert [o.protection for o in hot.options if o.chosen] == ["replica-3"]


def test_pareto_marks_only_options_no_other_beats_on_cost_headroom_and_raw() -> None:
    warm = tier(planned(listed(**{"nvme-qlc-server": 300_000, "nvme-tlc-server": 90_000}), **BIG), "warm")
    # no read target on the warm tier: cost against raw capacity bought
    front = {(o.server, o.protection) for o in warm.options if o.pareto}
    assert all(o.headroom is None for o in warm.options)
    for o in warm.options:
        beaten = any((p.per_month or 0) <= (o.per_month or 0) and p.raw.value <= o.raw.value and
                     ((p.per_month or 0) < (o.per_month or 0) or p.raw.value < o.raw.value) for p in warm.options)
        assert ((o.server, o.protection) in front) == (not beaten), o
    assert ("nvme-tlc-server", "ec-8+2") in front and ("nvme-tlc-server", "replica-3") not in front


@settings(max_examples=25, deadline=None)
@given(qlc=st.integers(1_000, 2_000_000), tlc=st.integers(1_000, 2_000_000), months=st.integers(1, 240))
def test_the_program_agrees_with_trying_every_option(qlc: int, tlc: int, months: int) -> None:
    """An independent check: the least cost found by enumerating every option the tier weighed, fewer servers on a
    tie, is what the program chose."""
    doc = yaml.safe_load(CV.read_text())
    doc["data"].update(BIG)
    doc["costs"] = {"amortise_months": months}
    bp = plan(parse_requirements(yaml.safe_dump(doc)),
              catalog=listed(**{"nvme-qlc-server": qlc, "nvme-tlc-server": tlc}))
    for name in ("hot", "warm"):
        options = tier(bp, name).options
        best = min(options, key=lambda o: (round(o.per_month or 0, 6), o.nodes))
        (chosen,) = [o for o in options if o.chosen]
        assert chosen.per_month == pytest.approx(best.per_month) and chosen.nodes == best.nodes


def test_a_tier_no_option_can_build_names_the_binding_target_with_prices_known_too() -> None:
    with pytest.raises(InfeasibleError) as info:
        doc = yaml.safe_load(CV.read_text())
        doc["performance"]["storage"]["read_throughput"] = ">=600TB/s"
        plan(parse_requirements(yaml.safe_dump(doc)), catalog=listed(**{"nvme-tlc-server": 90_000}))
    (problem,) = [p for p in info.value.problems if "hot tier" in p.message]
    assert problem.path == "performance.storage.read_throughput"
    assert problem.message.endswith("expected at most 10000 per tier")


def test_bare_metal_servers_with_a_list_price_are_priced_over_the_amortisation_period_by_hand() -> None:
    bp = planned(listed(**{"nvme-qlc-server": 300_000, "nvme-tlc-server": 90_000}), **BIG)
    lines = {line.item: line for line in bp.costs.lines}
    warm = next(line for line in bp.costs.lines if line.part.startswith("storage servers (warm-"))
    assert warm.row is not None and warm.per_month is not None and warm.per_hour is not None
    assert warm.per_month.value == pytest.approx(27 * 90_000 / 60)  # $40,500 a month
    assert warm.per_hour.value == pytest.approx(40_500 / 730)
    assert warm.per_month.derived_from.formula.startswith("27 hosts x $90,000.00 / 60 months = $40,500.00/month")
    assert "costs.amortise_months" in warm.per_month.derived_from.spec
    assert lines["dgx-h100"].row is None and "no row for dgx-h100 (list" in lines["dgx-h100"].unknown


LLM = REPO / "examples" / "llm-training-16k.yaml"  # 1 TB/s from 1875 TiB of data on FSx for Lustre, us-east-1


def test_the_managed_file_system_tier_is_the_cheapest_that_fits_where_every_tier_is_priced() -> None:
    """FSx steps of 2400 GiB above 1200 GiB, by hand: the 1000 MB/s/TiB tier holds the data, 1875 TiB = 1,920,000 GiB
    ($1,152,000 a month at a made-up $0.60); 500 needs 1 TB/s / 500 MB/s per TiB = 2000 TiB = 2,048,000 GiB, 854
    steps = 2,049,600 GiB ($696,864 at $0.34); 250 needs 4,096,800 GiB ($860,328 at $0.21); 125 8,193,600 GiB
    ($1,188,072 at the catalogue's $0.145). The rules take the fastest per TiB; cost takes 500."""
    rules = plan(parse_requirements(LLM.read_text()), spec_file=str(LLM))
    assert rules.storage.managed is not None and rules.storage.managed.service == "fsx-lustre-persistent2-1000"
    assert rules.storage.tiers[0].decided_by == "rules"
    made_up = [{"name": f"fsx-lustre-persistent2-{tp}/any/on_demand", "item": f"fsx-lustre-persistent2-{tp}",
                "region": "any", "purchase": "on_demand", "unit": "gb_month", "price": price}
               for tp, price in ((1000, 0.6), (500, 0.34), (250, 0.21))]
    catalog = load_catalog()
    rows = {r["name"]: Price.model_validate({"url": "https://example.org/test", "read": "2026-12-01",
                                             "source": "made up for this test", **r}) for r in made_up}
    catalog = catalog.model_copy(update={"prices": catalog.prices.model_copy(
        update={"rows": {**catalog.prices.rows, **rows}})})
    bp = plan(parse_requirements(LLM.read_text()), catalog=catalog, spec_file=str(LLM))
    managed, hot = bp.storage.managed, bp.storage.tiers[0]
    assert managed is not None and managed.service == "fsx-lustre-persistent2-500"
    assert managed.capacity_gib == 2_049_600 and hot.decided_by == "cost" and hot.unpriced == ()
    assert {o.server: round(o.per_month or 0) for o in hot.options} == {
        "fsx-lustre-persistent2-1000": 1_152_000, "fsx-lustre-persistent2-500": 696_864,
        "fsx-lustre-persistent2-250": 860_328, "fsx-lustre-persistent2-125": 1_188_072}
    fs_line = next(line for line in bp.costs.lines if line.item == "fsx-lustre-persistent2-500")
    assert fs_line.per_month is not None and fs_line.per_month.value == pytest.approx(696_864)


def test_the_lab_shows_its_one_storage_option_and_a_plan_without_options_shows_no_table() -> None:
    lab = plan(parse_requirements((REPO / "examples" / "lab.yaml").read_text()))
    hot = tier(lab, "hot")
    ((option),) = hot.options
    assert (option.protection, option.nodes, option.binding, option.chosen) == ("ec-2+1", 1,
                                                                                 "target.storage_targets", True)
    out = io.StringIO()
    print_summary(lab, Console(file=out, width=400))
    assert "hot: the lab's storage VMs (target.storage_targets), nothing bought" in out.getvalue()
    bare = lab.model_copy(update={"storage": lab.storage.model_copy(update={"tiers": tuple(
        t.model_copy(update={"options": ()}) for t in lab.storage.tiers)})})
    out = io.StringIO()
    print_summary(bare, Console(file=out, width=400))
    assert "storage options" not in out.getvalue()


def test_the_cli_does_not_import_scipy_until_a_tier_is_priced() -> None:
    """scipy.optimize at import time cost every command 0.4 s of start-up (python -X importtime); planning the shipped
    examples, whose storage servers have no list price, never loads it."""
    import subprocess
    import sys

    code = ("import sys; from pathlib import Path; import blueprints.cli; from blueprints.loader import "
            "load_requirements; from blueprints.planner import plan; "
            f"plan(load_requirements(Path({str(CV)!r}))); print('scipy' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
