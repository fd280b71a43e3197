"""The estimate() contract: never raises for valid input, calibration wins, monotone, fast path agrees."""

from __future__ import annotations

import time

import pytest

from gpuwiz.core.catalog import load_catalog
from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.estimate import QuickResult, estimate, estimate_from, prepare, quick
from gpuwiz.core.models import Estimate, Requirements


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def req(**kw) -> Requirements:
    return Requirements.model_validate(kw)


def test_full_finetune_70b_does_not_fit_one_24gb_card(cat):
    e = estimate(req(model={"preset": "llama-2-70b"}, training={"method": "full"}, data={"tokens": 1e8}),
                 cat, "rtx-4090", 1)
    assert isinstance(e, Estimate)
    assert not e.feasible and not e.memory.fits
    assert e.problems and "does not fit" in e.problems[0]
    assert e.memory.per_gpu_gib > e.memory.usable_gib


def test_qlora_7b_fits_one_24gb_card(cat):
    e = estimate(req(model={"preset": "llama-2-7b"}, training={"method": "qlora"}, data={"tokens": 1e7}),
                 cat, "rtx-4090", 1)
    assert e.feasible and e.memory.fits and e.plan.offload == "none"
    assert e.memory.per_gpu_gib <= 24 * 0.8
    assert e.time.wall_hours > 0


def test_fit_rule_and_headroom(cat):
    e = estimate(req(model={"preset": "llama-2-7b"}), cat, "h100-sxm", 8)
    m = e.memory
    assert m.usable_gib == pytest.approx(m.capacity_gib * 0.8)
    assert m.fits == (m.per_gpu_gib <= m.usable_gib)
    assert m.headroom_frac == pytest.approx(1 - m.per_gpu_gib / m.capacity_gib)


def test_hardware_defaults_and_errors(cat):
    r = req(model={"preset": "gpt2-124m"}, hardware={"gpu": "a100-80gb-sxm", "count": 2})
    e = estimate(r, cat)
    assert e.gpu == "a100-80gb-sxm" and e.plan.gpus == 2 and e.plan.nodes == 1
    with pytest.raises(GpuwizError, match=r"^hardware\.gpu: "):
        estimate(req(model={"preset": "gpt2-124m"}), cat)
    with pytest.raises(GpuwizError, match=r"^hardware\.gpu: unknown GPU id 'h100'"):
        estimate(req(model={"preset": "gpt2-124m"}), cat, "h100", 8)


def test_nodes_from_gpus_per_node(cat):
    e = estimate(req(model={"preset": "llama-2-7b"}), cat, "h100-sxm", 20)
    assert e.plan.gpus_per_node == 8 and e.plan.nodes == 3
    e = estimate(req(model={"preset": "llama-2-7b"}), cat, "h100-sxm", 16, gpus_per_node=4)
    assert e.plan.nodes == 4


def test_more_tokens_never_less_time(cat):
    last = 0.0
    for t in (1e8, 1e9, 1e10, 1e11):
        w = estimate(req(model={"preset": "llama-2-7b"}, data={"tokens": t}), cat, "h100-sxm", 8).time.wall_hours
        assert w >= last
        last = w


def test_time_and_gpu_hours(cat):
    e = estimate(req(model={"preset": "llama-2-7b"}, data={"tokens": 1e9, "epochs": 2}), cat, "h100-sxm", 8)
    thr = e.throughput.tokens_per_s_per_gpu
    assert e.time.wall_hours == pytest.approx(2e9 / (thr * 8) / 3600)
    assert e.time.gpu_hours == pytest.approx(e.time.wall_hours * 8)
    assert e.throughput.achieved_tflops == pytest.approx(e.throughput.mfu * e.throughput.peak_tflops)


def test_samples_give_tokens_for_token_models(cat):
    a = estimate(req(model={"preset": "llama-2-7b", "seq_len": 2048}, data={"samples": 1e5}), cat, "h100-sxm", 8)
    b = estimate(req(model={"preset": "llama-2-7b", "seq_len": 2048}, data={"tokens": 2048e5}), cat, "h100-sxm", 8)
    assert a.time.wall_hours == pytest.approx(b.time.wall_hours)


def test_goodput_applies_at_scale(cat):
    r = req(model={"preset": "llama-2-70b"}, data={"tokens": 1e11})
    e = estimate(r, cat, "h100-sxm", 512)
    assert any(a.startswith("goodput") for a in e.assumptions)
    thr = e.throughput.tokens_per_s_per_gpu
    assert e.time.wall_hours == pytest.approx(1e11 / (thr * 512) / 3600 / cat.fac("goodput"))


def test_calibration_throughput_wins(cat):
    base = dict(model={"preset": "llama-2-7b"}, data={"tokens": 1e9})
    e = estimate(req(**base, calibration={"tokens_per_s_per_gpu": 1234}), cat, "h100-sxm", 8)
    assert e.throughput.tokens_per_s_per_gpu == pytest.approx(1234)
    assert e.time.wall_hours == pytest.approx(1e9 / (1234 * 8) / 3600)
    assert any("calibration" in a for a in e.assumptions)
    # with a hardware section the measurement is at that config; other candidates are scaled alike
    r = req(**base, hardware={"gpu": "a100-80gb-sxm", "count": 8}, calibration={"tokens_per_s_per_gpu": 1000})
    same = estimate(r, cat)
    assert same.throughput.tokens_per_s_per_gpu == pytest.approx(1000)
    other = estimate(r, cat, "h100-sxm", 8)
    raw_a = estimate(req(**base), cat, "a100-80gb-sxm", 8).throughput.tokens_per_s_per_gpu
    raw_h = estimate(req(**base), cat, "h100-sxm", 8).throughput.tokens_per_s_per_gpu
    assert other.throughput.tokens_per_s_per_gpu == pytest.approx(1000 * raw_h / raw_a)


def test_calibration_mfu_and_memory_win(cat):
    base = dict(model={"preset": "llama-2-7b"}, data={"tokens": 1e9})
    e = estimate(req(**base, calibration={"mfu": 0.3}), cat, "h100-sxm", 8)
    assert e.throughput.mfu == pytest.approx(0.3)
    r = req(**base, hardware={"gpu": "h100-sxm", "count": 8}, calibration={"peak_memory_gib": 70})
    e = estimate(r, cat)
    assert (e.memory.per_gpu_gib == pytest.approx(70, rel=0.02)
            or e.plan != estimate(req(**base), cat, "h100-sxm", 8).plan)
    assert any("measured peak" in a for a in e.assumptions)


def test_nontoken_models(cat):
    e = estimate(req(model={"preset": "resnet-50"}, data={"samples": 1.28e6, "epochs": 90}), cat, "a100-80gb-sxm", 8)
    assert e.feasible and e.throughput.samples_per_s_per_gpu and e.throughput.tokens_per_s_per_gpu is None
    # DeepLearningExamples: 90 epochs on 8x A100 AMP ≈ 3 h (16,621 img/s); stay within 2x
    assert 1.5 <= e.time.wall_hours <= 6
    sd = estimate(req(model={"preset": "stable-diffusion-1.5"}, data={"samples": 1e5}), cat, "rtx-4090", 1)
    assert sd.time.wall_hours > 0


def test_valid_input_never_raises(cat):
    rs = [
        req(model={"preset": m.id}, training={"method": meth, "precision": prec}, data={"tokens": 1e9})
        for m in cat.models for meth in ("full", "lora", "qlora") for prec in ("bf16", "fp8", "fp32")
    ]
    for r in rs:
        ctx = prepare(r, cat)
        for g in cat.gpus:
            for n in (1, 3, 8, 64, 4096):
                q = quick(ctx, g.id, n)
                assert q.per_gpu_gib > 0 and q.wall_hours >= 0 and q.mfu >= 0


def test_quick_agrees_with_estimate(cat):
    r = req(model={"preset": "llama-2-13b"}, data={"tokens": 1e10})
    ctx = prepare(r, cat)
    q = quick(ctx, "h100-sxm", 16)
    e = estimate_from(ctx, "h100-sxm", 16)
    assert isinstance(q, QuickResult)
    assert (q.fits, q.per_gpu_gib, q.wall_hours, q.gpu_hours, q.mfu) == (
        e.feasible, e.memory.per_gpu_gib, e.time.wall_hours, e.time.gpu_hours, e.throughput.mfu)
    assert estimate(r, cat, "h100-sxm", 16) == e


def test_assumptions_are_listed(cat):
    e = estimate(req(model={"preset": "llama-2-7b"}, data={"tokens": 1e9}), cat, "h100-sxm", 8)
    text = "\n".join(e.assumptions)
    for needle in ("FlashAttention on", "MFU", "activation checkpointing", "16 B/param", "headroom"):
        assert needle in text


def test_fast_enough(cat):
    r = req(model={"preset": "llama-2-70b"}, data={"tokens": 1e10})
    ctx = prepare(r, cat)
    cands = [(g.id, n) for g in cat.gpus for n in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)]
    t = time.perf_counter()
    for g, n in cands:
        quick(ctx, g, n)
    per = (time.perf_counter() - t) / len(cands)
    assert per < 1e-3  # generous bound for slow CI machines; bench/bench_estimate.py measures properly


def test_tight_headroom_before_cpu_offload(cat):
    # Llama-3-8B LoRA on one 24 GB card: torchtune ran it without offload; gpuwiz plans it at a smaller
    # headroom and says so, instead of offloading
    r = req(model={"preset": "llama-3-8b", "seq_len": 2048},
            training={"method": "lora", "micro_batch": 2, "activation_checkpointing": "full", "chunked_loss": True})
    e = estimate(r, cat, "rtx-4090", 1)
    assert e.plan.offload == "none"
    assert e.feasible
    assert any("tight" in a.lower() for a in e.assumptions)


def test_large_scale_prefers_model_parallel(cat):
    r = req(model={"preset": "llama-3.1-405b"}, training={"method": "pretrain"}, data={"tokens": 1e12})
    e = estimate(r, cat, "h100-sxm", 1024)
    assert e.plan.tp > 1 or e.plan.pp > 1
