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


def test_a_month_series_made_fast_equals_the_constructed_one() -> None:
    from gpuwiz.core.models import MonthPoint

    for months, rent_year, capex, opex_year in ((12, 1_234.5, 0.0, 0.0), (37, 0.0, 12_345.67, 999.1),
                                                (60, 99.99, 100.01, 3.3), (1, 1e6 / 7, 3e5 / 11, 1e4 / 13)):
        got = MonthPoint.series(months, rent_year / 12, capex, opex_year / 12)
        want = [MonthPoint(month=m, rent_usd=round(rent_year / 12 * m, 2), buy_usd=round(capex + opex_year / 12 * m, 2))
                for m in range(months + 1)]
        assert got == want and [hash(p) for p in got] == [hash(p) for p in want]
        assert [vars(p) for p in got] == [vars(p) for p in want]
        assert [p.model_dump_json() for p in got] == [p.model_dump_json() for p in want]


def test_cloud_options_made_from_kept_fields_equal_constructed_ones_at_every_run_time() -> None:
    """cost.cloud_options builds each option from the offer's fields kept per shape (``fields_of``) and
    the run's costs (``from_fields``): every field is there, each option equals the one ``__init__``
    builds, and after other run times the options are the ones a memo-less call makes."""
    from gpuwiz.core import memo
    from gpuwiz.core.models import CloudOption

    cat = load_catalog()
    req = Requirements.model_validate({"model": {"preset": "llama-3-8b"}, "data": {"tokens": 1e9},
                                       "deployment": {"site": "any"}})
    n = 0
    for gpu, count, gpn in (("h100-sxm", 1, 1), ("h100-sxm", 16, 8), ("rtx-4090", 2, 2), ("a100-80gb-sxm", 4, 4)):
        for wall in (3.0, 30.5, 7000.0, 3.0):
            got = cost.cloud_options(req, cat, gpu, count, gpn, wall, storage_tb=2.5)
            with memo.disabled():
                want = cost.cloud_options(req, cat, gpu, count, gpn, wall, storage_tb=2.5)
            assert got == want
            for o in got:
                n += 1
                assert set(vars(o)) == set(CloudOption._names)
                assert o == CloudOption(**vars(o)) and o.model_dump_json() == CloudOption(**vars(o)).model_dump_json()
    assert n > 10
    try:
        CloudOption.fields_of(provider="x", price=1.0)
    except TypeError:
        pass
    else:
        raise AssertionError("fields_of took a field CloudOption does not have")


def test_plan_facts_from_the_fast_path_equal_the_full_estimates() -> None:
    """The sizing inputs of a build the answer only sizes (the build to own, the rent reference) come from the fast
    path's result (recommend._Scanner.plan_facts); they equal the full estimate's (system.PlanFacts.of) on every
    shape the search priced, for every example: token and image models, LoRA, offload."""
    from pathlib import Path

    from gpuwiz.core import memo, system
    from gpuwiz.core import recommend as rec_mod
    from gpuwiz.core.config_io import load_config

    cat = load_catalog()
    examples = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.yaml"))
    seen = 0
    for path in examples:
        req = load_config(path)
        memo.clear()
        rec_mod.recommend(req, cat)  # the search fills the memo the scanner reads
        scan = rec_mod._Scanner(req, cat)
        assert scan.memo
        for (gid, count, gpn), r in list(scan.memo.items())[::7]:
            if not r.fits:
                continue
            gpu = cat.gpu(gid)
            full = scan.mod.estimate_from(scan.ctx, gpu, count, gpn)
            assert scan.plan_facts(gpu, count, gpn) == system.PlanFacts.of(full), (path.name, gid, count)
            seen += 1
    assert seen >= 20
