"""The estimator fast path's per-context lookup tables (core.estimate.Context) are keyed on everything their
values depend on: a candidate evaluated in a context that has already evaluated many others gets exactly
the answer a fresh context gives it; and the plan choice's scan picks what the plain rule picks."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from pathlib import Path

import pytest

from gpuwiz.core import estimate as E
from gpuwiz.core.catalog import Catalog, load_catalog
from gpuwiz.core.config_io import load_config
from gpuwiz.core.models import Requirements
from gpuwiz.core.parallel import Choice, Row, Shape, choice_index, choose_from_table, choose_indexed
from gpuwiz.core.units import GIB

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.yaml"))


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()


def _req(path: Path) -> Requirements:
    r = load_config(path)
    return r[0] if isinstance(r, tuple) else r


def _same(a: E.QuickResult, b: E.QuickResult) -> None:
    assert a[:-1] == b[:-1]  # every figure, the plan label and the reason
    assert a.detail == b.detail  # plan, memory parts, step time, problems, notes


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_shared_context_answers_as_a_fresh_one(cat: Catalog, path: Path) -> None:
    """Every GPU of the catalog at several counts, in one context (its tables filling up as the recommender's
    do), against a fresh context per candidate. GPUs with the same memory but other speeds, form factors or
    NVLink share some tables and not others: a key missing a field its value depends on shows up here."""
    req = _req(path)
    shared = E.prepare(req, cat)
    gpus = sorted(cat.gpus, key=lambda g: (g.memory_gib, g.id))  # neighbours share the memory size
    by_mem: dict[float, set[float]] = {}
    for g in gpus:
        by_mem.setdefault(g.memory_gib, set()).add(g.peak_tflops("bf16"))
    assert any(len(peaks) > 1 for peaks in by_mem.values())  # the catalog has such pairs to tell apart
    for count, gpn in ((1, None), (2, None), (8, 8), (16, 8), (64, 8), (16, 4)):
        for g in gpus:
            q = E.quick(shared, g, count, gpn)
            fresh = E.prepare(req, cat)
            f = E.quick(fresh, g, count, gpn)
            _same(q, f)
            assert E.wall_hours_high(shared, q) == E.wall_hours_high(fresh, f)


def test_full_estimate_after_the_search_as_alone(cat: Catalog) -> None:
    """estimate_from on a context the search has filled equals the stand-alone estimate (JSON)."""
    req = _req(EXAMPLES[0])
    ctx = E.prepare(req, cat)
    for g in cat.gpus:
        E.quick(ctx, g, 8, 8)
    for gid in ("h100-sxm", "a100-80gb-sxm", "rtx-4090"):
        a = E.estimate_from(ctx, gid, 16, 8).model_dump_json()
        b = E.estimate(req, cat, gpu=gid, count=16, gpus_per_node=8).model_dump_json()
        assert a == b


def test_host_limit_table_by_platform_facts(cat: Catalog) -> None:
    """The host-RAM limit comes from a catalog table keyed by form factor, slot width and segment: every GPU
    reads the figure its own platform search gives, whichever GPU filled the entry."""
    ctx = E.prepare(_req(EXAMPLES[0]), cat)
    for gpn in (1, 2, 4, 8):
        for g in cat.gpus:
            form = "pcie" if g.form_factor in ("pcie", "nvl") else g.form_factor
            assert E._host_limit_gib(ctx, g, gpn) == E._platform_host_gib(cat, g, form, gpn)


def _plain_choice(rows: list[Row], budget: float, cap: Callable[[int], int], want: int | None,
                  host_budget: float) -> Choice:
    """The rule, written out plainly: the first (layout, checkpointing) entry whose largest micro-batch (linear
    memory, solved) is at least ``want`` (else 1, rounded down to a power of two under the cap); if none, the
    least (host RAM over budget, bytes needed) -- the first of equals."""
    leanest: list[tuple[bool, float, int, Choice]] = []
    for i, (s, dp, host, per_ck) in enumerate(rows):
        for ck, fixed, per in per_ck:
            room = budget - fixed
            mbmax = (int(room // per) if room > 0 else 0) if per > 0 else ((1 << 30) if room >= 0 else 0)
            if host > host_budget:
                mbmax = 0
            if mbmax >= (want or 1):
                mb = want or max(m for m in (1 << k for k in range(31)) if m <= min(mbmax, cap(dp)))
                return Choice(s, dp, mb, ck, True, fixed + per * mb, i + 1)
            need = fixed + per * (want or 1)
            leanest.append((host > host_budget, need, len(leanest),
                            Choice(s, dp, want or 1, ck, False, need, len(rows), host <= host_budget)))
    return min(leanest, key=lambda t: (t[0], t[1], t[2]))[3]


def _random_rows(rng: random.Random) -> list[Row]:
    rows: list[Row] = []
    for i in range(rng.randint(1, 12)):
        s = Shape(i % 4, 1, 1, "optimizer" if i % 5 == 4 else "none")
        per_ck = []
        for ck in ("none", "selective", "full"):
            fixed = rng.choice([rng.uniform(1, 90), 40.0, 40.0 * (1 + i % 3)]) * GIB
            per = rng.choice([rng.uniform(0.01, 30) * GIB, 0.0, 5.0 * GIB])
            per_ck.append((ck, fixed, per))
        host = rng.choice([0.0, rng.uniform(10, 2000) * GIB]) if s.offload != "none" else 0.0
        rows.append((s, 1 + i % 8, host, tuple(per_ck)))  # type: ignore[arg-type]
    return rows


def test_choose_from_table_is_the_plain_rule() -> None:
    """The scan (no Choice made until the end) picks what the plain rule picks -- budgets at and around every
    entry's fixed bytes and fixed + per-sample bytes, zero per-sample bytes, host budgets that rule out
    offload rows, a pinned micro-batch."""
    rng = random.Random(7)
    for _ in range(200):
        rows = _random_rows(rng)
        edges = [x for _s, _d, _h, per_ck in rows for _c, fixed, per in per_ck for x in (fixed, fixed + per)]
        budgets = [*edges, *(e * (1 + d) for e in edges[:6] for d in (-1e-12, 1e-12)), 0.0, 1e15,
                   *(rng.uniform(0, 120) * GIB for _ in range(8))]
        for want in (None, 1, 2):
            for host_budget in (float("inf"), 500 * GIB, 0.0):
                for b in budgets:
                    cap = lambda dp: 4 * dp  # noqa: E731
                    assert choose_from_table(rows, b, cap, want, host_budget) == _plain_choice(rows, b, cap, want,
                                                                                               host_budget)


def test_indexed_choice_is_the_plain_rule() -> None:
    """The index the fast path answers budgets from (thresholds by bisection, the leanest entry per host
    budget) picks what the plain rule picks, one index asked many budgets and host budgets in turn (as GPUs of
    other memory sizes ask it) -- at and around every entry's bytes, where its slack matters."""
    rng = random.Random(11)
    for _ in range(200):
        rows = _random_rows(rng)
        edges = [x for _s, _d, _h, per_ck in rows for _c, fixed, per in per_ck
                 for x in (fixed, fixed + per, fixed + 2 * per)]
        budgets = [*edges, *(e * (1 + d) for e in edges for d in (-1e-9, -1e-12, -1e-15, 1e-15, 1e-12)),
                   0.0, -1.0, 1e15, *(rng.uniform(0, 120) * GIB for _ in range(8))]
        rng.shuffle(budgets)
        for want in (None, 1, 2):
            ix = choice_index(rows, want)
            for b in budgets:
                for host_budget in (float("inf"), 500 * GIB, 0.0):
                    cap = lambda dp: 4 * dp  # noqa: E731
                    assert choose_indexed(ix, b, cap, host_budget) == _plain_choice(rows, b, cap, want, host_budget)


def _fresh_catalog(cat: Catalog) -> Catalog:
    """The same catalog with empty derived tables (what a catalog nothing has asked yet holds)."""
    c = cat.model_copy()
    c.__dict__.pop("derived", None)
    return c


@pytest.mark.parametrize("stack", ["auto", "unsloth", "llm-foundry", "mindspeed"])
def test_memory_stage_shared_by_gpus_of_one_memory_size(cat: Catalog, stack: str) -> None:
    """quick()'s memory stage is shared by GPUs of the same memory size, host limit and node layout: each GPU
    still gets its own speed, its own name in the sentences, and -- with a configured stack that runs on some
    vendors only (64 GB: AMD and Huawei cards; 288 GB: NVIDIA and AMD) -- its own vendor's layouts."""
    req = Requirements.model_validate({"model": {"preset": "llama-2-13b"}, "data": {"tokens": 1e9},
                                       "training": {"method": "full", "stack": stack}})
    shared = E.prepare(req, cat)
    gpus = sorted(cat.gpus, key=lambda g: (g.memory_gib, g.vendor, g.id))
    named = 0
    for count, gpn in ((1, None), (4, None), (16, 8)):
        for g in gpus:
            q = E.quick(shared, g, count, gpn)
            f = E.quick(E.prepare(req, cat), g, count, gpn)
            _same(q, f)
            named += any(p.params.get("gpu") == g.name for p in q.detail.problems)
    assert named  # some candidates do not fit, and their sentences name their own GPU


@pytest.mark.parametrize("precision", ["bf16", "fp8", "fp32", "tf32", "fp16"])
def test_catalog_gpu_tables_keyed_by_precision_and_time_model(cat: Catalog, precision: str) -> None:
    """The GPU factors and the host limit live with the catalog (a new context finds them): a catalog whose
    tables other precisions and a model without the operator model (a CNN) filled answers as a fresh one."""
    warm = _fresh_catalog(cat)
    reqs = [Requirements.model_validate({"model": {"preset": m}, "data": {"tokens": 1e9, "samples": 1e6},
                                         "training": {"precision": p}})
            for m in ("llama-2-7b", "resnet-50") for p in ("bf16", "fp8", "fp32", "tf32", "fp16")]
    for r in reqs:  # every precision and both time models fill the shared tables first
        ctx = E.prepare(r, warm)
        for g in warm.gpus:
            E.quick(ctx, g, 8)
    for m in ("llama-2-7b", "resnet-50"):
        req = Requirements.model_validate({"model": {"preset": m}, "data": {"tokens": 1e9, "samples": 1e6},
                                           "training": {"precision": precision}})
        a, b = E.prepare(req, warm), E.prepare(req, _fresh_catalog(cat))
        for g in cat.gpus:
            for count in (1, 8, 16):
                _same(E.quick(a, g, count), E.quick(b, g.id, count))


def test_work_keys_tell_work_shapes_apart(cat: Catalog) -> None:
    """The operator-time memo keys a work shape by its number: two models (and two sequence lengths of one)
    timed through one catalog get the times a fresh catalog gives each -- at one pinned plan, so the operator
    times are asked with the same plan arguments -- and equal work shapes share a number."""
    warm = _fresh_catalog(cat)
    specs = [({"preset": "llama-2-7b"}, "lora"), ({"preset": "llama-2-7b", "seq_len": 8192}, "lora"),
             ({"preset": "llama-3-8b"}, "full"), ({"preset": "llama-2-7b"}, "full"),
             ({"preset": "llama-2-13b"}, "full")]
    for model, method in specs:
        req = Requirements.model_validate({"model": model, "data": {"tokens": 1e9}, "training": {
            "method": method, "micro_batch": 1, "activation_checkpointing": "full", "parallel": {"zero_stage": 3}}})
        a, b = E.prepare(req, warm), E.prepare(req, _fresh_catalog(cat))
        for gid in ("h100-sxm", "a100-80gb-sxm", "rtx-4090", "mi300x", "l40s", "h200-sxm"):
            _same(E.quick(a, gid, 8), E.quick(b, gid, 8))
    same = Requirements.model_validate({"model": {"preset": "llama-2-7b"}, "data": {"tokens": 1e9}})
    assert E._work_key(E.prepare(same, warm)) == E._work_key(E.prepare(same, warm)) >= 0


def test_a_search_result_is_the_plain_one_but_a_misfit_is_not_timed(cat: Catalog) -> None:
    """quick(time_misfit=False), the recommender's search: a plan that fits is the same result; one that does not
    fit has the same memory figures, plan and reason, and no step time, speed or run time."""
    misfits = 0
    for path in EXAMPLES:
        req = _req(path)
        plain, search = E.prepare(req, cat), E.prepare(req, cat)
        misfits += _compare_search(cat, plain, search)
    assert misfits > 20  # (the 70B example fits on no single node of 8 but the largest cards)


def _compare_search(cat: Catalog, plain: E.Context, search: E.Context) -> int:
    misfits = 0
    for g in cat.gpus:
        for count, gpn in ((1, None), (8, 8), (16, 8)):
            a = E.quick(plain, g, count, gpn)
            b = E.quick(search, g, count, gpn, time_misfit=False)
            if a.fits:
                _same(a, b)
                continue
            misfits += 1
            assert (b.fits, b.per_gpu_gib, b.capacity_gib, b.plan, b.reason, b.nodes, b.host_ram_gib) == (
                a.fits, a.per_gpu_gib, a.capacity_gib, a.plan, a.reason, a.nodes, a.host_ram_gib)
            assert b.detail.choice == a.detail.choice and b.detail.problems == a.detail.problems
            assert b.detail.st is None and b.wall_hours == 0.0 and b.mfu == 0.0
            assert b.tokens_per_s_per_gpu is None and b.samples_per_s_per_gpu is None
    return misfits


def _price_only_edits(req: Requirements) -> list[Requirements]:
    d, s, dep = req.data, req.schedule, req.deployment
    data = [{"epochs": d.epochs * 2.5}, {"tokens": None, "samples": 123_457.0}, {"tokens": 7.7e9, "samples": None},
            {"tokens": None, "samples": None, "dataset_gb": 42.0, "sample_kb": 80.0}]
    out = [req.model_copy(update={"data": d.model_copy(update=u)}) for u in data]
    out.append(req.model_copy(update={"schedule": s.model_copy(update={"runs_per_month": 9.0})}))
    out.append(req.model_copy(update={"deployment": dep.model_copy(update={"budget_usd": 12_345.0, "country": "DE"})}))
    return out


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_a_context_reprepared_for_a_price_only_edit_is_the_prepared_one(cat: Catalog, path: Path) -> None:
    """estimate.reprepare (the recommender's context for an edit of price-only fields) holds what prepare would:
    every constant, the data's total and note, the same fast-path answers."""
    base = E.prepare(_req(path), cat)
    for edit in _price_only_edits(base.req):
        fresh, again = E.prepare(edit, cat), E.reprepare(base, edit)
        for f in dataclasses.fields(E.Context):
            if not f.name.startswith("_"):
                assert getattr(again, f.name) == getattr(fresh, f.name), f.name
        for g in cat.gpus[::5]:
            _same(E.quick(again, g, 8, 8), E.quick(fresh, g, 8, 8))
