"""Values the hot paths build without their dataclass __init__ are the values __init__ would build."""

from __future__ import annotations

import dataclasses

from gpuwiz.core import cost
from gpuwiz.core.catalog import load_catalog
from gpuwiz.core.models import Requirements


def test_a_parts_stem_has_exactly_its_fields_and_equals_the_constructed_one() -> None:
    cat = load_catalog()
    names = {f.name for f in dataclasses.fields(cost.PartsStem)}
    for site in ("desk", "office", "colo", "any"):
        req = Requirements.model_validate({"model": {"preset": "llama-3-8b"}, "data": {"tokens": 1e9},
                                           "deployment": {"site": site}})
        rates = cost.own_rates(req, cat)
        for nodes, gpn, rack in ((1, 1, False), (1, 8, True), (4, 8, True)):
            fp = cost.Footprint(nodes=nodes, gpus_per_node=gpn, max_power_w=900.0 * gpn, power_w=700.0 * gpn,
                                rack=rack)
            got = rates.stem(fp, 30_000.0 * gpn)
            assert set(vars(got)) == names
            assert got == cost.PartsStem(**{n: getattr(got, n) for n in names})
            assert hash(got) == hash(cost.PartsStem(**{n: getattr(got, n) for n in names}))


def test_a_footprint_made_fast_equals_the_constructed_one() -> None:
    names = {f.name for f in dataclasses.fields(cost.Footprint)}
    for args in ((1, 1, 450.0, 320.0, False), (4, 8, 10_200.0, 8_100.0, True)):
        fast = cost.Footprint.make(*args)
        assert set(vars(fast)) == names
        assert fast == cost.Footprint(*args) and hash(fast) == hash(cost.Footprint(*args))


def test_a_month_point_made_fast_equals_the_constructed_one() -> None:
    from gpuwiz.core.models import MonthPoint

    for m, rent, buy in ((0, 0.0, 12_345.67), (37, 1_234.5, 0.0), (60, 99.99, 100.01)):
        fast = MonthPoint.of(m, rent, buy)
        want = MonthPoint(month=m, rent_usd=rent, buy_usd=buy)
        assert vars(fast) == vars(want) and list(vars(fast)) == list(vars(want))
        assert fast == want and hash(fast) == hash(want) and fast.model_dump_json() == want.model_dump_json()
