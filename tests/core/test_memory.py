"""Memory model: ZeRO worked example, Korthikanti activations, bytes per parameter, LoRA/QLoRA."""

from __future__ import annotations

import pytest

from gpuwiz.core.catalog import load_catalog
from gpuwiz.core.estimate import estimate, prepare
from gpuwiz.core.memory import (
    head_activation_bytes,
    layer_activation_bytes,
    model_state_bytes_per_gpu,
    plan_memory,
    state_bytes,
)
from gpuwiz.core.models import Requirements
from gpuwiz.core.units import GIB


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def req(**kw) -> Requirements:
    return Requirements.model_validate(kw)


def test_zero_paper_worked_example():
    # Rajbhandari et al. 2019, Fig. 1: Ψ = 7.5B, N_d = 64, K = 12 → 120 / 31.4 / 16.6 / 1.9 GB per GPU
    psi = 7.5e9
    got = [model_state_bytes_per_gpu(psi, 64, z) / 1e9 for z in (0, 1, 2, 3)]
    assert got[0] == pytest.approx(120.0)
    assert round(got[1], 1) == 31.4
    assert round(got[2], 1) == 16.6
    assert round(got[3], 1) == 1.9


def test_bytes_per_param_regimes():
    assert sum(state_bytes("bf16", "adamw")) == 16  # ZeRO K = 12
    assert sum(state_bytes("bf16", "adamw-8bit")) == 10  # Transformer Math 101
    assert sum(state_bytes("bf16", "sgd")) == 12
    assert sum(state_bytes("fp32", "adamw")) == 16  # 4 + 4 + 8 (Ultra-Scale Playbook)


def test_korthikanti_per_layer_hand_computed():
    s, h, a = 2048, 4096, 32
    # Table 2 (no parallelism, no recompute): s·b·h·(34 + 5·a·s/h) = 8,388,608 × (34 + 80)
    assert layer_activation_bytes(s, h, a, 4 * h, "gelu", flash=False, ckpt="none") == 956_301_312
    # selective recompute (or FlashAttention) drops the 5as/h term: 34·s·b·h
    assert layer_activation_bytes(s, h, a, 4 * h, "gelu", flash=False, ckpt="selective") == 285_212_672
    assert layer_activation_bytes(s, h, a, 4 * h, "gelu", flash=True, ckpt="none") == 285_212_672
    # full recompute keeps the layer input 2·s·b·h
    assert layer_activation_bytes(s, h, a, 4 * h, "gelu", flash=True, ckpt="full") == 2 * s * h
    # TP + SP + selective: 34·s·b·h / t
    assert layer_activation_bytes(s, h, a, 4 * h, "gelu", True, "selective", tp=4) == 285_212_672 / 4
    # SwiGLU stores more per ffn unit than GELU
    assert layer_activation_bytes(s, h, a, 4 * h, "swiglu", True, "none") > 285_212_672


def test_logits_memory_fp32():
    # fp32 logits for the loss 4·s·V plus bf16 logits 2·s·V: Llama-3 vocab at 8k is several GiB per sequence
    b = head_activation_bytes(8192, 4096, 128256)
    assert b >= 4 * 8192 * 128256 and b / GIB > 4


def _per_gpu(cat, gpu="h100-sxm", count=8, **kw) -> float:
    return estimate(req(**kw), cat, gpu, count).memory.per_gpu_gib


def test_more_params_never_less_memory(cat):
    last = 0.0
    for p in (0.5, 1, 3, 7, 13, 30):
        m = _per_gpu(cat, model={"params_b": p, "seq_len": 2048},
                     training={"micro_batch": 1, "activation_checkpointing": "full",
                               "parallel": {"zero_stage": 3, "offload": "none"}})
        assert m >= last
        last = m


def test_zero3_more_gpus_never_more_memory_per_gpu(cat):
    last = float("inf")
    for n in (1, 2, 4, 8, 16, 32, 64):
        m = _per_gpu(cat, count=n, model={"preset": "llama-2-13b"},
                     training={"micro_batch": 1, "activation_checkpointing": "full",
                               "parallel": {"zero_stage": 3, "offload": "none"}})
        assert m <= last + 1e-9
        last = m


def test_lora_less_than_full_and_qlora_less_than_lora(cat):
    kw = dict(model={"preset": "llama-2-7b"})
    tr = {"micro_batch": 1, "activation_checkpointing": "full", "parallel": {"zero_stage": 0}}
    full = _per_gpu(cat, count=1, training={**tr, "method": "full"}, **kw)
    lora = _per_gpu(cat, count=1, training={**tr, "method": "lora"}, **kw)
    qlora = _per_gpu(cat, count=1, training={**tr, "method": "qlora"}, **kw)
    assert qlora < lora < full
    # frozen base: 2 B/param (LoRA) vs ~4.13 bits/param (QLoRA)
    e = estimate(req(training={**tr, "method": "qlora"}, **kw), cat, "h100-sxm", 1)
    frozen_and_adapters = (6.738e9 * 4.127 / 8 + 2 * e.model.params_trainable) / GIB
    assert e.memory.breakdown.weights == pytest.approx(frozen_and_adapters, rel=0.01)
    assert e.model.params_trainable < 0.02 * e.model.params_total


def test_breakdown_sums_to_total(cat):
    e = estimate(req(model={"preset": "llama-2-7b"}), cat, "a100-80gb-sxm", 8)
    b = e.memory.breakdown
    assert b.weights + b.gradients + b.optimizer + b.activations + b.overhead == pytest.approx(e.memory.per_gpu_gib)
    assert b.overhead >= 1.0  # CUDA context alone ~1 GiB


def test_offload_moves_states_to_host(cat):
    r = req(model={"preset": "llama-2-7b"},
            training={"micro_batch": 1, "activation_checkpointing": "full",
                      "parallel": {"zero_stage": 3, "offload": "optimizer"}})
    ctx = prepare(r, cat)
    m = plan_memory(ctx.mc, 8, 8, 1, 1, 3, "optimizer", 1, "full")
    assert m.optimizer == 0 and m.gradients == 0 and m.host_per_gpu > 0
    # DeepSpeed: 16 B/param of host memory for the optimizer (x 1.5 buffer factor), split over 8 GPUs
    assert m.host_per_gpu == pytest.approx(16 * 6.738e9 / 8 * 1.5, rel=0.01)
    e = estimate(r, cat, "h100-sxm", 8)
    assert e.memory.host_ram_gib == pytest.approx(16 * 6.738e9 * 1.5 / GIB, rel=0.01)


def test_pipeline_holds_all_layers_of_activations_on_stage0(cat):
    r = req(model={"preset": "llama-2-7b"}, training={"micro_batch": 1, "activation_checkpointing": "selective"})
    ctx = prepare(r, cat)
    a1 = plan_memory(ctx.mc, 8, 8, 1, 1, 0, "none", 1, "selective", ga=8).activations
    a4 = plan_memory(ctx.mc, 8, 2, 1, 4, 0, "none", 1, "selective", ga=8).activations
    assert a4 == pytest.approx(a1 - ctx.mc.act_head, rel=0.05)  # 1F1B: p micro-batches of L/p layers
    # fewer micro-batches per step than stages: only those are in flight (2 of 4 -> half the layers' worth)
    a4_2 = plan_memory(ctx.mc, 8, 2, 1, 4, 0, "none", 1, "selective", ga=2).activations
    assert a4_2 == pytest.approx((a1 - ctx.mc.act_head) / 2, rel=0.05)
    t4 = plan_memory(ctx.mc, 8, 2, 4, 1, 0, "none", 1, "selective").activations
    assert t4 == pytest.approx(a1 / 4, rel=1e-6)


def test_nontoken_activation_scales_with_batch_and_resolution(cat):
    base = estimate(req(model={"preset": "resnet-50"}, training={"micro_batch": 32}), cat, "a100-80gb-sxm", 1)
    big = estimate(req(model={"preset": "resnet-50", "resolution": 448}, training={"micro_batch": 64}),
                   cat, "a100-80gb-sxm", 1)
    assert big.memory.breakdown.activations == pytest.approx(8 * base.memory.breakdown.activations)


def test_pure_bf16_is_8_bytes_per_param():
    # no fp32 master copy: weights 2 + grads 2 + AdamW m, v in bf16 4 (LLaMA-Factory pure_bf16, torchtune bf16)
    assert sum(state_bytes("bf16", "adamw", pure=True)) == 8.0
    assert sum(state_bytes("bf16", "adamw")) == 16.0
    assert state_bytes("fp32", "adamw", pure=True) == state_bytes("fp32", "adamw")  # no master copy anyway


def test_pure_bf16_halves_states_in_an_estimate(cat):
    base = dict(model={"preset": "llama-2-7b", "seq_len": 1024},
                training={"method": "full", "micro_batch": 1, "activation_checkpointing": "full",
                          "parallel": {"zero_stage": 0}})
    mixed = estimate(req(**base), cat, "h100-sxm", 1).memory.breakdown
    base["training"] = dict(base["training"], pure_bf16=True)
    pure = estimate(req(**base), cat, "h100-sxm", 1).memory.breakdown
    assert pure.optimizer == pytest.approx(mixed.optimizer / 3, rel=1e-6)
    assert pure.weights == pytest.approx(mixed.weights, rel=1e-6)


def test_chunked_loss_drops_the_fp32_logits():
    full = head_activation_bytes(4096, 3072, 128256)
    chunked = head_activation_bytes(4096, 3072, 128256, chunked=True)
    assert full - chunked == pytest.approx(3.5 * 4096 * 128256)  # 6·s·V → 2.5·s·V
    assert chunked > 2 * 4096 * 128256  # the bf16 logits stay


def test_activation_offload_keeps_two_layers_of_inputs(cat):
    def act(**tr):
        t = {"method": "lora", "micro_batch": 2, "activation_checkpointing": "full", "global_batch": 2, **tr}
        return estimate(req(model={"preset": "llama-3-8b", "seq_len": 2048}, training=t), cat, "rtx-4090", 1)
    on, off = act(activation_offload=True), act()
    inputs_per_layer = 2 * 2048 * 4096 * 2 / GIB  # 2·s·h bytes per sequence, micro-batch 2
    assert off.memory.breakdown.activations - on.memory.breakdown.activations == pytest.approx(
        30 * inputs_per_layer, rel=1e-6)


def test_gradients_and_activations_do_not_peak_together_without_accumulation(cat):
    t = {"method": "full", "micro_batch": 2, "activation_checkpointing": "full", "pure_bf16": True,
         "parallel": {"zero_stage": 0}}
    one = estimate(req(model={"preset": "llama-2-7b", "seq_len": 2048}, training=dict(t, global_batch=2)),
                   cat, "h200-sxm", 1).memory
    accum = estimate(req(model={"preset": "llama-2-7b", "seq_len": 2048}, training=dict(t, global_batch=16)),
                     cat, "h200-sxm", 1).memory
    assert one.per_gpu_gib < accum.per_gpu_gib
    b = one.breakdown
    assert b.gradients == 0 or b.activations == 0  # the larger of the two is shown
