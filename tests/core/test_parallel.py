"""Plan choice: the simplest layout that fits, pinned values respected."""

from __future__ import annotations

import pytest

from gpuwiz.core.catalog import load_catalog
from gpuwiz.core.estimate import estimate
from gpuwiz.core.models import ParallelSpec, Requirements
from gpuwiz.core.parallel import Pinned, Shape, candidate_shapes


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def req(**kw) -> Requirements:
    return Requirements.model_validate(kw)


def test_candidate_order_is_simplest_first():
    shapes = candidate_shapes(16, 8, 2, 8, True, 32, 8, 32, Pinned())
    assert shapes[0] == Shape(0, 1, 1, "none")
    assert [s.zero for s in shapes[1:4]] == [1, 2, 3]
    kinds = ["offload" if s.offload != "none" else "pp" if s.pp > 1 else "tp" if s.tp > 1 else "dp" for s in shapes]
    # DP/ZeRO, then TP, then PP, then offload
    assert kinds == sorted(kinds, key=["dp", "tp", "pp", "offload"].index)
    assert all(s.tp <= 8 for s in shapes)


def test_no_tp_without_nvlink():
    shapes = candidate_shapes(4, 4, 1, 1, True, 32, 32, 32, Pinned())
    assert all(s.tp == 1 for s in shapes)
    assert any(s.pp > 1 for s in shapes)  # PP inside a PCIe box is allowed


def test_small_model_uses_ddp(cat):
    e = estimate(req(model={"preset": "gpt2-124m"}), cat, "a100-80gb-sxm", 8)
    assert e.plan.zero_stage == 0 and e.plan.tp == 1 and e.plan.pp == 1 and e.plan.framework == "PyTorch DDP"
    assert e.plan.activation_checkpointing == "none"
    one = estimate(req(model={"preset": "gpt2-124m"}), cat, "a100-80gb-sxm", 1)
    assert one.plan.framework == "PyTorch (single GPU)"


def test_7b_full_on_8_gpus_needs_sharding(cat):
    e = estimate(req(model={"preset": "llama-2-7b"}, training={"micro_batch": 1}), cat, "a100-80gb-sxm", 8)
    assert e.feasible and e.plan.zero_stage >= 1
    assert e.plan.dp * e.plan.tp * e.plan.pp == 8


def test_70b_on_64_h100_shards_without_offload(cat):
    e = estimate(req(model={"preset": "llama-2-70b"}), cat, "h100-sxm", 64)
    assert e.feasible and e.plan.offload == "none"
    assert e.plan.zero_stage == 3 or e.plan.tp > 1 or e.plan.pp > 1


def test_pinned_plan_is_kept(cat):
    e = estimate(req(model={"preset": "llama-2-7b"},
                     training={"micro_batch": 2, "activation_checkpointing": "selective",
                               "parallel": {"zero_stage": 1, "tp": 2, "pp": 1}}), cat, "h100-sxm", 8)
    p = e.plan
    assert (p.zero_stage, p.tp, p.pp, p.micro_batch, p.activation_checkpointing) == (1, 2, 1, 2, "selective")
    assert p.dp == 4 and p.framework == "Megatron-LM TP=2 + ZeRO-1"


def test_impossible_pinned_tp_is_a_problem_not_an_exception(cat):
    e = estimate(req(model={"preset": "llama-2-7b"}, training={"parallel": {"tp": 3}}), cat, "h100-sxm", 8)
    assert not e.feasible and any("tp" in p for p in e.problems)


def test_checkpointing_chosen_to_fit(cat):
    # Llama-3-8B at 8k context: the activations of one sequence do not fit without recompute on 8x A100-40GB
    e = estimate(req(model={"preset": "llama-3-8b"}), cat, "a100-40gb-sxm", 8)
    assert e.feasible and e.plan.activation_checkpointing == "full"
    assert any("activation checkpointing: full (chosen to fit)" in a for a in e.assumptions)


def test_micro_batch_is_power_of_two_and_grad_accum_covers_global_batch(cat):
    e = estimate(req(model={"preset": "gpt2-124m"}, training={"global_batch": 100}), cat, "h100-sxm", 4)
    mb = e.plan.micro_batch
    assert mb & (mb - 1) == 0
    assert mb * e.plan.dp * e.plan.grad_accum >= 100


def test_offload_is_last_resort_and_reports_host_ram(cat):
    e = estimate(req(model={"preset": "llama-2-13b"}), cat, "rtx-4090", 1)
    if e.feasible:
        assert e.plan.offload != "none" and e.memory.host_ram_gib > 100


# ---- context / expert / virtual-pipeline parallelism (issue 11) ----------------------------------


def _llama(par: dict, **tr) -> Requirements:
    return Requirements.model_validate({
        "model": {"preset": "llama-2-7b", "seq_len": 16384},
        "training": {"method": "pretrain", "micro_batch": 1, "global_batch": 64, "activation_checkpointing": "full",
                     "parallel": {"offload": "none", **par}, **tr},
        "data": {"tokens": 1e10}})


def test_context_parallel_splits_activations_and_sequences():
    cat = load_catalog()
    one = estimate(_llama({"zero_stage": 1, "tp": 1, "pp": 1}), cat, "h100-sxm", 8)
    cp2 = estimate(_llama({"zero_stage": 1, "tp": 1, "pp": 1, "cp": 2}), cat, "h100-sxm", 8)
    assert cp2.plan.cp == 2 and cp2.feasible
    assert cp2.memory.breakdown.activations == pytest.approx(one.memory.breakdown.activations / 2, rel=1e-6)
    # 4 data-parallel replicas instead of 8: twice the accumulation for the same global batch
    assert cp2.plan.grad_accum == 2 * one.plan.grad_accum
    # auto: the simplest stack that runs CP, and the estimate says so
    assert cp2.plan.stack in ("deepspeed", "megatron", "torchtitan") and one.plan.stack == "pytorch"
    assert any(a.startswith("stack: ") and "auto" in a for a in cp2.assumptions)


def test_extra_dimensions_that_cannot_run_are_problems_in_words():
    cat = load_catalog()
    e = estimate(_llama({"zero_stage": 1, "tp": 1, "pp": 1, "ep": 2}), cat, "h100-sxm", 8)
    assert not e.feasible and any("training.parallel.ep" in p and "mixture-of-experts" in p for p in e.problems)
    e = estimate(_llama({"zero_stage": 1, "tp": 1, "pp": 1, "vp": 2}), cat, "h100-sxm", 8)
    assert not e.feasible and any("training.parallel.vp" in p for p in e.problems)
    e = estimate(_llama({"zero_stage": 1, "tp": 1, "pp": 1, "cp": 3}), cat, "h100-sxm", 8)
    assert not e.feasible and any("training.parallel.cp" in p for p in e.problems)


def test_interleaved_pipeline_shrinks_the_bubble():
    cat = load_catalog()
    base = {"zero_stage": 1, "tp": 2, "pp": 4}
    plain = estimate(_llama({**base, "vp": 1}), cat, "h100-sxm", 16)
    inter = estimate(_llama({**base, "vp": 2}), cat, "h100-sxm", 16)
    assert inter.plan.vp == 2 and inter.feasible and plain.plan.vp == 1
    assert inter.time.wall_hours < plain.time.wall_hours
    # a configured layout with vp left open keeps plain 1F1B (a published layout without vp ran that way)
    assert estimate(_llama(base), cat, "h100-sxm", 16).plan.vp == 1


def test_planner_interleaves_its_own_pipelines_where_it_pays():
    cat = load_catalog()
    gpt3 = {"layers": 96, "hidden": 12288, "heads": 96, "vocab": 51200, "seq_len": 2048, "mlp": "gelu",
            "norm": "layer", "bias": True}
    r = Requirements.model_validate({"model": gpt3, "training": {"method": "pretrain", "global_batch": 1536},
                                     "data": {"tokens": 3e11}})
    e = estimate(r, cat, "a100-80gb-sxm", 1024)
    p = e.plan
    assert e.feasible and p.pp > 1 and p.vp > 1
    assert 96 % (p.pp * p.vp) == 0 and p.grad_accum % p.pp == 0  # Megatron-LM's rule for interleaving
    r1 = r.model_copy(update={"training": r.training.model_copy(update={"parallel": ParallelSpec(
        tp=p.tp, pp=p.pp, zero_stage=p.zero_stage, vp=1)})})
    assert estimate(r1, cat, "a100-80gb-sxm", 1024).time.wall_hours > e.time.wall_hours


def test_stack_that_cannot_run_the_layout_is_a_problem():
    cat = load_catalog()
    e = estimate(_llama({"zero_stage": 1, "tp": 2, "pp": 1}, stack="pytorch"), cat, "h100-sxm", 8)
    assert not e.feasible and any(p.startswith("training.stack:") for p in e.problems)
    ok = estimate(_llama({"zero_stage": 1, "tp": 2, "pp": 1}, stack="megatron"), cat, "h100-sxm", 8)
    assert ok.feasible and ok.plan.stack == "megatron"
    assert all(a.stack != "megatron" for a in ok.stack_alternatives)
    assert {a.stack for a in ok.stack_alternatives} <= {"torchtitan", "mindspeed"}


def test_planner_never_picks_a_pipeline_with_fewer_micro_batches_than_stages():
    cat = load_catalog()
    r = Requirements.model_validate({
        "model": {"params_b": 175, "layers": 96, "hidden": 12288, "heads": 96, "seq_len": 2048},
        "training": {"method": "pretrain", "global_batch": 1536}, "data": {"tokens": 3e11}})
    for n in (512, 1024):
        e = estimate(r, cat, "a100-80gb-sxm", n)
        if e.plan.pp > 1:
            assert e.plan.grad_accum >= e.plan.pp, (n, e.plan)
