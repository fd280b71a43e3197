"""The incremental engine (core.memo): the plan key covers exactly the fields the per-candidate plan
reads, a price-only edit re-prices without re-planning and changes no number, and the memoised engine
gives the same JSON as the engine without a memo on every example and scenario, also after a sequence
of edits."""

from __future__ import annotations

import math
import typing
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ValidationError

from gpuwiz.core import memo
from gpuwiz.core.catalog import load_catalog
from gpuwiz.core.config_io import load_config
from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.estimate import prepare, quick, requote
from gpuwiz.core.models import CalibrationSpec, HardwareSpec, HaveSpec, Requirements
from gpuwiz.core.recommend import recommend
from scenario_set import EXAMPLES, ROOT, SCENARIOS, scenario_requirements

CAT = load_catalog()


def _base() -> Requirements:
    """An example with every optional section present, so their fields are walked too."""
    req = load_config(ROOT / "examples" / "small-team-lora-7b.yaml")
    return req.model_copy(update={
        "hardware": HardwareSpec(), "calibration": CalibrationSpec(), "have": (HaveSpec(gpu="rtx-4090"),)})


def _leaves(model: BaseModel, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any, Any]]:
    """(path, annotation, value) of every leaf field; nested models are walked."""
    out = []
    for name, f in type(model).model_fields.items():
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            out += _leaves(value, (*path, name))
        elif isinstance(value, tuple) and value and isinstance(value[0], BaseModel):
            out += _leaves(value[0], (*path, name, "0"))
        else:
            out.append(((*path, name), f.annotation, value))
    return out


def _other(annotation: Any, value: Any) -> Any:
    """A different value of the field's type (not necessarily valid: the key is a dump, not a validation)."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    literal = next((a for a in [annotation, *args] if typing.get_origin(a) is Literal), None)
    if literal is not None:
        return next((c for c in typing.get_args(literal) if c != value), value + 1 if isinstance(value, int) else "x")
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value * 2 + 1
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, list):
        return [*value, "x"]
    model = next((a for a in args if isinstance(a, type) and issubclass(a, BaseModel)), None)
    if model is not None:
        return model.model_construct()  # an absent section, now present with its defaults
    # None: a value of the (first) non-None type
    kind = typing.get_origin(args[0]) if args and typing.get_origin(args[0]) else (args[0] if args else str)
    base = typing.get_args(args[0])[0] if args and typing.get_origin(args[0]) is typing.Annotated else kind
    return {bool: True, int: 3, float: 1.5, str: "xx", list: ["DE"]}.get(base, "xx")


def _set(req: Requirements, path: tuple[str, ...], value: Any) -> Requirements:
    """``req`` with the field at ``path`` replaced (model_copy: no validation)."""
    if len(path) == 1:
        return req.model_copy(update={path[0]: value})
    head, rest = path[0], path[1:]
    child = getattr(req, head)
    if isinstance(child, tuple):
        return req.model_copy(update={head: (_set(child[0], rest[1:], value), *child[1:])})  # type: ignore[arg-type]
    return req.model_copy(update={head: _set(child, rest, value)})


def _price_only(path: tuple[str, ...]) -> bool:
    fields = memo.PRICE_ONLY.get(path[0], set())
    return path[0] in memo.PRICE_ONLY and (fields is None or path[1] in fields)


@pytest.mark.filterwarnings("ignore::UserWarning")  # pydantic warns when it dumps a value of another type
def test_price_only_fields_leave_the_key_and_every_other_field_changes_it() -> None:
    base = _base()
    key = memo.plan_key(base)
    leaves = _leaves(base)
    assert len(leaves) > 60  # the walk reached model, training, parallel, hardware, calibration, have
    price, plan = [], []
    for path, ann, value in leaves:
        changed = memo.plan_key(_set(base, path, _other(ann, value)))
        (price if _price_only(path) else plan).append(path)
        if _price_only(path):
            assert changed == key, f"{'.'.join(path)} is price-only but changed the key"
        else:
            assert changed != key, f"{'.'.join(path)} is read by the plan but did not change the key"
    assert ("deployment", "headroom") in plan and ("data", "tokens") in price and ("schedule", "deadline_days") in price
    # every name in PRICE_ONLY is a real field (a renamed field would silently leave the list)
    for section, fields in memo.PRICE_ONLY.items():
        assert section in Requirements.model_fields
        sub = typing.get_args(Requirements.model_fields[section].annotation) or (
            Requirements.model_fields[section].annotation,)
        model = next(a for a in sub if isinstance(a, type) and issubclass(a, BaseModel))
        assert fields is None or fields <= model.model_fields.keys(), section


def test_the_plan_key_text_is_canonical() -> None:
    """plan_key digests pydantic's JSON of the requirements: one text per value only if no field is a dict or a
    set (their order could differ between equal values) and no float field takes inf or NaN (written as null, as
    None is). Every leaf field is tried with both."""
    base = _base()
    tried = 0
    for path, ann, _value in _leaves(base):
        kinds = {typing.get_origin(a) or a for a in (ann, *typing.get_args(ann))}
        assert not kinds & {dict, set, frozenset}, f"{'.'.join(path)} is a mapping or a set"
        for bad in (math.inf, -math.inf, math.nan):
            node = doc = base.model_dump(mode="json")
            for p in path[:-1]:
                node = node[int(p)] if isinstance(node, list) else node[p]
            node[path[-1]] = bad
            with pytest.raises((ValidationError, GpuwizError)):
                Requirements.model_validate(doc)
            tried += 1
    assert tried > 180


def _valid_change(req: Requirements, path: tuple[str, ...], ann: Any, value: Any) -> Requirements | None:
    """A validated requirements with the field at ``path`` changed, or None when no candidate is valid."""
    doc = req.model_dump(mode="json")
    node = doc
    for p in path[:-1]:
        node = node[int(p)] if isinstance(node, list) else node[p]
    candidates = [v for v in (_other(ann, value), value * 2 if
                  isinstance(value, (int, float)) and not isinstance(value, bool) else None,
                  not value if isinstance(value, bool) else None, 2, 7, 0.5, 1.5, 1e6, "DE", "EUR", "CN", "desk",
                  "buy", "rent", "fastest", "perf-per-watt", "confidential", ["DE"]) if v is not None and v != value]
    if value is None:
        candidates = [0.5, 2, 7, 1.5, 1000, "EUR", ["DE"], True, *candidates]
    for v in candidates:
        node[path[-1]] = v
        try:
            return Requirements.model_validate(doc)
        except (ValidationError, GpuwizError):
            continue
    return None


SWEEP = [(g, n) for g in ("h100-sxm", "a100-40gb-pcie", "rtx-4090") for n in (1, 8, 64)]


@pytest.mark.parametrize("example", ["small-team-lora-7b.yaml", "enterprise-70b-pretrain.yaml"])
def test_a_price_only_edit_changes_no_plan_and_requote_gives_the_fresh_numbers(example: str) -> None:
    """The key's exclusions are true: for every price-only field, a valid change leaves each candidate's
    plan (layout, memory, throughput) unchanged, and requote() gives bit-identical run times."""
    base = load_config(ROOT / "examples" / example)
    ctx0 = prepare(base, CAT)
    before = {(g, n): quick(ctx0, g, n) for g, n in SWEEP}
    tried = 0
    for path, ann, value in _leaves(base):
        if not _price_only(path) or path[0] == "have":
            continue
        edited = _valid_change(base, path, ann, value)
        assert edited is not None, f"no valid change found for {'.'.join(path)}"
        assert memo.plan_key(edited) == memo.plan_key(base)
        ctx = prepare(edited, CAT)
        for (g, n), q in before.items():
            assert requote(ctx, q) == quick(ctx, g, n), (".".join(path), g, n)
        tried += 1
    assert tried >= 15


def _edits(req: Requirements) -> list[Requirements]:
    """A wizard session: price-only keystrokes, a plan change, and back to the start."""
    d, s, dep = req.data, req.schedule, req.deployment
    out = [
        req.model_copy(update={"data": d.model_copy(update={"epochs": d.epochs * 3})}),
        req.model_copy(update={"data": d.model_copy(update={"epochs": d.epochs / 4})}),
        req.model_copy(update={"schedule": s.model_copy(update={"runs_per_month": s.runs_per_month * 4})}),
        req.model_copy(update={"deployment": dep.model_copy(update={"budget_usd": 30_000.0, "horizon_years": 1.0})}),
        req.model_copy(update={"deployment": dep.model_copy(update={"headroom": 0.05})}),  # re-plans
        req,
    ]
    return out


def _json(req: Requirements) -> str:
    try:
        return recommend(req, CAT).model_dump_json()
    except GpuwizError as exc:  # a scenario may be a typed refusal; it must be the same refusal
        return f"error: {exc}"


def _same_both_ways(reqs: list[Requirements]) -> None:
    memo.clear()
    for i, req in enumerate(reqs):
        with memo.disabled():
            want = _json(req)
        assert _json(req) == want, f"step {i}"


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_memoised_engine_equals_the_plain_one_on_every_example(path: Path) -> None:
    req = load_config(path)
    _same_both_ways([req, req, *_edits(req)])


@pytest.mark.parametrize("sc", SCENARIOS, ids=[s["id"] for s in SCENARIOS])
def test_memoised_engine_equals_the_plain_one_on_every_scenario(sc: dict[str, Any]) -> None:
    req = scenario_requirements(sc)
    _same_both_ways([req, *_edits(req)[:2], req])


def test_memo_is_bounded_and_keyed_by_catalog(tmp_path: Path) -> None:
    memo.clear()
    base = load_config(EXAMPLES[0])
    for i in range(memo.MAX_PLANS + 5):
        memo.candidates(base.model_copy(update={"deployment": base.deployment.model_copy(
            update={"headroom": 0.01 * (i + 1)})}), CAT)
    assert len(memo._plans) == memo.MAX_PLANS
    over = tmp_path / "o.yaml"
    over.write_text("gpus:\n- id: h100-sxm\n  price_new_usd: 1234\n  price_new_observed: '2026-11'\n", encoding="utf-8")
    other = load_catalog(over)
    assert memo.candidates(base, CAT) is not memo.candidates(base, other)
    with memo.disabled():
        assert memo.candidates(base, CAT) is None
    memo.clear()


# ---- the per-catalog tables of the pricing and sizing steps (memo.table) -------------------------


@pytest.mark.parametrize("example", ["small-team-lora-7b.yaml", "enterprise-70b-pretrain.yaml"])
def test_every_deployment_and_schedule_edit_after_a_warm_memo_gives_the_plain_answer(example: str) -> None:
    """The tables' keys hold every field their functions read: with every table warm from the base
    config, a valid change to any deployment / schedule / data field (country, site, regions, data
    policy, electricity, PUE, colocation, staff, used hardware, budget, horizon, ...) gives the JSON of
    the engine without a memo."""
    base = load_config(ROOT / "examples" / example)
    edited = []
    for path, ann, value in _leaves(base):
        if path[0] not in ("deployment", "schedule", "data"):
            continue
        req = _valid_change(base, path, ann, value)
        if req is not None:
            edited.append((".".join(path), req))
    names = {n for n, _r in edited}
    assert {"deployment.country", "deployment.site", "deployment.pue", "deployment.used_hardware",
            "deployment.data_sensitivity", "deployment.regions", "deployment.electricity_usd_per_kwh"} <= names
    memo.clear()
    want_base = _json(base)
    for name, req in edited:
        assert _json(base) == want_base, name  # warm: the base again, from the tables
        got = _json(req)
        with memo.disabled():
            assert got == _json(req), name


def test_tables_are_bounded_per_catalog_cleared_and_off_when_disabled(tmp_path: Path) -> None:
    memo.clear()
    t = memo.table(CAT, "test-table", maxsize=3)
    assert t is not None and memo.table(CAT, "test-table") is t
    for i in range(5):
        t.put(i, str(i))
    assert list(t.data) == [2, 3, 4] and t.get(4) == "4" and t.get(0) is memo.MISS  # the oldest went first
    keep = memo.table(CAT, "test-catalog-table", catalog_only=True)
    assert keep is not None
    keep.put("k", 1)
    memo.clear()  # a request-dependent table starts empty; a catalog-only one keeps its entries
    assert not t.data and keep.get("k") == 1  # emptied by clear itself (not by the next answer's first use)
    assert memo.table(CAT, "test-table") is t and not t.data
    assert memo.table(CAT, "test-catalog-table", catalog_only=True).get("k") == 1  # type: ignore[union-attr]
    over = tmp_path / "o.yaml"
    over.write_text("gpus:\n- id: h100-sxm\n  price_new_usd: 1234\n  price_new_observed: '2026-11'\n", encoding="utf-8")
    other = memo.table(load_catalog(over), "test-table")
    assert other is not None and other is not t and not other.data  # another catalog: its own tables
    with memo.disabled():
        assert memo.table(CAT, "test-table") is None


def test_size_system_and_cheapest_rate_answer_from_the_table_as_they_compute() -> None:
    """A table hit is the value the function computes (same object on a hit; equal with the memo off)."""
    from gpuwiz.core import cost, system

    req = load_config(ROOT / "examples" / "enterprise-70b-pretrain.yaml")
    gpu = CAT.gpu("h100-sxm")
    w = system.workload_from(req, CAT, None)
    memo.clear()
    b1 = system.size_system(req, CAT, gpu, 8, 4, w)
    assert system.size_system(req, CAT, gpu, 8, 4, w) is b1
    with memo.disabled():
        assert system.size_system(req, CAT, gpu, 8, 4, w) == b1
        plain = cost.cheapest_rate(CAT, "h100-sxm", 32, 8, req=req)
    assert cost.cheapest_rate(CAT, "h100-sxm", 32, 8, req=req) == plain is not None
    desk = req.model_copy(update={"deployment": req.deployment.model_copy(update={"site": "desk"})})
    with memo.disabled():
        want = system.size_system(desk, CAT, gpu, 8, 1, w)
    assert system.size_system(desk, CAT, gpu, 8, 1, w) == want  # the site is in the key


def test_a_money_edit_reprices_the_same_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """Budget, horizon and electricity are read by no stage before pricing: after such an edit the
    search (stage 1) is the memoised one, and the answer is the plain engine's; a data edit searches again."""
    from gpuwiz.core import recommend as rec_mod

    base = load_config(ROOT / "examples" / "small-team-lora-7b.yaml")
    memo.clear()
    recommend(base, CAT)
    searches: list[int] = []
    real = rec_mod._Recommender.enumerate

    def counting(self: Any, scan: Any) -> Any:
        searches.append(1)
        return real(self, scan)

    monkeypatch.setattr(rec_mod._Recommender, "enumerate", counting)
    dep = base.deployment
    money = base.model_copy(update={"deployment": dep.model_copy(update={
        "budget_usd": (dep.budget_usd or 1e5) * 1.7, "horizon_years": 2.0, "electricity_usd_per_kwh": 0.31})})
    got = _json(money)
    assert searches == []
    with memo.disabled():
        assert _json(money) == got
    searches.clear()
    data = base.model_copy(update={"data": base.data.model_copy(update={"epochs": base.data.epochs * 2})})
    got = _json(data)
    assert searches == [1]
    with memo.disabled():
        assert _json(data) == got


def test_the_same_question_again_gets_the_answer_it_had() -> None:
    """A redraw or an undone edit asks the same question: the answer is the one made for it (a frozen
    value), per objective and language; a cleared or disabled memo makes a new, equal one."""
    from gpuwiz import i18n

    req = load_config(ROOT / "examples" / "resnet50-imagenet.yaml")
    memo.clear()
    first = recommend(req, CAT)
    assert recommend(req.model_copy(), CAT) is first
    assert recommend(req, CAT, objective="fastest") is not first
    saved = i18n.current_language()
    try:
        i18n.set_language("zh-CN")
        zh = recommend(req, CAT)
    finally:
        i18n.set_language(saved)
    assert zh is not first and zh.model_dump_json() != first.model_dump_json()
    with memo.disabled():
        plain = recommend(req, CAT)
    assert plain is not first and plain.model_dump_json() == first.model_dump_json()
    memo.clear()
    again = recommend(req, CAT)
    assert again is not first and again.model_dump_json() == first.model_dump_json()
