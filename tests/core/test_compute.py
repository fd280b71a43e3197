"""FLOPs and the efficiency (MFU) model against published anchors."""

from __future__ import annotations

import pytest

from gpuwiz.core.catalog import load_catalog
from gpuwiz.core.compute import hardware_flops_per_token, model_flops_per_token
from gpuwiz.core.estimate import estimate
from gpuwiz.core.models import Requirements


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def req(**kw) -> Requirements:
    return Requirements.model_validate(kw)


def test_six_n_d_plus_attention():
    n, L, h, s = 6.74e9, 32, 4096, 4096
    assert model_flops_per_token(n, L, h, s) == 6 * n + 12 * L * h * s  # PaLM App. B
    # attention term is s/(6h) of the dense part for a dense model with P ≈ 12·L·h² (research note §4.4)
    p = 12 * 24 * 2048**2
    assert model_flops_per_token(p, 24, 2048, 2048) / (6 * p) == pytest.approx(1 + 2048 / (6 * 2048))
    assert model_flops_per_token(n, L, h, s, "lora") == 4 * n + 12 * L * h * s
    # full recompute: one more forward → 8·N (+ attention forward)
    assert hardware_flops_per_token(n, L, h, s, "full", "full") == 8 * n + 16 * L * h * s


def test_total_pflop_is_6nd_for_short_context(cat):
    e = estimate(req(model={"preset": "llama-2-7b", "seq_len": 128}, data={"tokens": 1e9}), cat, "h100-sxm", 8)
    assert e.time.total_pflop == pytest.approx(6 * e.model.params_active * 1e9 / 1e15, rel=0.01)


def test_moe_uses_active_params(cat):
    e = estimate(req(model={"preset": "mixtral-8x7b", "seq_len": 128}, data={"tokens": 1e9}), cat, "h100-sxm", 64)
    assert e.time.total_pflop == pytest.approx(6 * 12.9e9 * 1e9 / 1e15, rel=0.02)


def _mfu(cat, gpu, count, **kw) -> float:
    return estimate(req(**kw), cat, gpu, count).throughput.mfu


def test_mfu_anchors(cat):
    # MosaicML llm-foundry: 7B, s=2048, 8x A100-80GB FSDP bf16 → MFU 0.64; 8x H100 → 0.46 (§3.9)
    kw = dict(model={"preset": "llama-2-7b", "seq_len": 2048}, training={"method": "pretrain", "global_batch": 512},
              data={"tokens": 1e10})
    a100 = _mfu(cat, "a100-80gb-sxm", 8, **kw)
    h100 = _mfu(cat, "h100-sxm", 8, **kw)
    assert 0.40 <= a100 <= 0.68
    assert 0.30 <= h100 <= 0.50
    # 70B on 64 GPUs: MosaicML A100 0.53, H100 0.43
    kw70 = dict(model={"preset": "llama-2-70b", "seq_len": 2048}, training={"method": "pretrain", "global_batch": 1024},
                data={"tokens": 1e10})
    assert 0.30 <= _mfu(cat, "a100-80gb-sxm", 64, **kw70) <= 0.60
    assert 0.25 <= _mfu(cat, "h100-sxm", 64, **kw70) <= 0.50


def test_resnet50_a100_throughput_anchor(cat):
    # NVIDIA DeepLearningExamples: 1x A100-80GB AMP 2470 img/s
    e = estimate(req(model={"preset": "resnet-50"}, training={"micro_batch": 256}, data={"samples": 1.28e6}),
                 cat, "a100-80gb-sxm", 1)
    assert 1500 <= (e.throughput.samples_per_s_per_gpu or 0) <= 3500


def test_efficiency_depends_on_the_right_things(cat):
    base = dict(model={"preset": "llama-2-7b", "seq_len": 2048}, training={"method": "pretrain", "global_batch": 256,
                "activation_checkpointing": "full", "parallel": {"zero_stage": 3}}, data={"tokens": 1e10})
    m = _mfu(cat, "h100-sxm", 8, **base)
    # long context lowers MFU
    long = {**base, "model": {"preset": "llama-2-7b", "seq_len": 32768}}
    assert _mfu(cat, "h100-sxm", 8, **long) < m
    # small models reach lower MFU
    small = {**base, "model": {"preset": "gpt2-124m", "seq_len": 2048}}
    assert _mfu(cat, "h100-sxm", 8, **small) < m
    # fp8 gives more tokens/s than bf16 on a GPU with fp8
    t_bf16 = estimate(req(**base), cat, "h100-sxm", 8).throughput.tokens_per_s_per_gpu
    fp8 = {**base, "training": {**base["training"], "precision": "fp8"}}
    assert estimate(req(**fp8), cat, "h100-sxm", 8).throughput.tokens_per_s_per_gpu > t_bf16
    # consumer cards reach a lower fraction of peak than datacenter parts of similar era
    q = dict(model={"preset": "llama-2-7b", "seq_len": 2048}, training={"method": "qlora", "micro_batch": 1,
             "activation_checkpointing": "full"}, data={"tokens": 1e8})
    assert _mfu(cat, "rtx-4090", 1, **q) < _mfu(cat, "l40s", 1, **q)
    # LoRA runs at a lower MFU than full training
    lora = {**base, "training": {**base["training"], "method": "lora"}}
    assert _mfu(cat, "h100-sxm", 8, **lora) < m


def test_pcie_without_p2p_slower_than_nvlink_for_ddp(cat):
    # 1.3B, short sequences, no accumulation: the 2.6 GB gradient all-reduce is exposed on PCIe
    kw = dict(model={"params_b": 1.3, "seq_len": 512}, data={"tokens": 1e9},
              training={"parallel": {"zero_stage": 0}, "micro_batch": 1, "global_batch": 4})
    nv = estimate(req(**kw), cat, "a100-80gb-sxm", 4).throughput
    pc = estimate(req(**kw), cat, "a100-80gb-pcie", 4).throughput
    assert pc.mfu < nv.mfu


def test_pipeline_bubble_costs_time(cat):
    kw = dict(model={"preset": "llama-2-13b", "seq_len": 2048}, data={"tokens": 1e9},
              training={"micro_batch": 1, "global_batch": 16, "activation_checkpointing": "full"})
    pp = estimate(req(**{**kw, "training": {**kw["training"], "parallel": {"pp": 8, "tp": 1, "zero_stage": 0}}}),
                  cat, "h100-sxm", 8)
    z3 = estimate(req(**{**kw, "training": {**kw["training"], "parallel": {"zero_stage": 3, "offload": "none"}}}),
                  cat, "h100-sxm", 8)
    assert pp.plan.pp == 8 and pp.time.wall_hours > z3.time.wall_hours
