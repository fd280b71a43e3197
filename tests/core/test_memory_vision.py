"""Memory per operator for vision models (issue 11): ResNet / ConvNeXt / ViT / diffusion UNet layer lists
(catalog ``vision:``) counted by ``core.memory.vision_activation_bytes``.

Published measured peaks: Hugging Face PEFT README, "Parameter Efficient Tuning of Diffusion Models"
(CompVis/stable-diffusion-v1-4 DreamBooth on one A100 80GB, the README's command: --resolution=512
--train_batch_size=1 --with_prior_preservation, default fp32, no xformers flag): full fine-tuning 27.5 GB,
LoRA 15.5 GB, LoRA + gradient checkpointing 8.12 GB (PEFT's tracker: torch.cuda.max_memory_allocated, so no
CUDA context). NVIDIA DeepLearningExamples ResNet-50 v1.5 trains 256 images per 16 GB V100 with AMP.
No measured peak was found for ConvNeXt or ViT; those are checked by hand counts and properties.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuwiz.core.catalog import load_catalog
from gpuwiz.core.estimate import estimate
from gpuwiz.core.memory import PARAMS, LayerShape, layer_activation_parts, vision_activation_bytes
from gpuwiz.core.models import Requirements, VisionArch
from gpuwiz.core.units import GIB

VISION_PRESETS = ("resnet-50", "resnet-101", "resnet-152", "convnext-tiny", "convnext-base", "vit-b-16",
                  "stable-diffusion-1.5", "stable-diffusion-2.1", "sdxl")


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def arch(cat, preset: str) -> VisionArch:
    m = next(m for m in cat.models if m.id == preset)
    assert m.vision is not None, preset
    return m.vision


def req(**kw) -> Requirements:
    return Requirements.model_validate(kw)


# ---- hand counts ------------------------------------------------------------------------------------


def test_resnet_bottleneck_stage_by_operator():
    # one stage of one bottleneck at 8x8 after a 64-wide stem: side 32 -> stem conv /2 = 16 -> pool /2 = 8
    a = VisionArch(kind="resnet", stages=(1,), widths=(64,), expansion=4)
    side = 32
    stem = 3 * 32 * 32 + 2 * 64 * 16 * 16  # image + conv output (BN input) + ReLU output (pool input)
    # block input 64·64 + conv1/ReLU1 64·64 each + conv2/ReLU2 64·64 each + conv3 256·64 + shortcut conv 256·64
    block = 64 * 64 + 2 * 64 * 64 + 2 * 64 * 64 + 256 * 64 + 256 * 64
    head = 256 * 64
    idx = 64 * 8 * 8  # int64 max-pool indices, 8 bytes each
    assert vision_activation_bytes(a, side, "none", True, 2.0) == 2 * (stem + block + head) + 8 * idx
    # fp32 doubles everything but the indices; BatchNorm runs in 16 bits under autocast (no fp32 copies)
    assert vision_activation_bytes(a, side, "none", True, 4.0) == 4 * (stem + block + head) + 8 * idx


def test_convnext_block_keeps_twelve_c_per_pixel():
    a1 = VisionArch(kind="convnext", stages=(1,), widths=(96,))
    a2 = VisionArch(kind="convnext", stages=(2,), widths=(96,))
    d = vision_activation_bytes(a2, 224, "none", True, 4.0) - vision_activation_bytes(a1, 224, "none", True, 4.0)
    assert d == 4 * 12 * 96 * 56 * 56  # dwconv in/out, LN out (C each), fc1 out + GELU out (4C each), fc2 out
    # under autocast the LayerNorm keeps an fp32 copy of its input: one more 16-bit element per channel
    d = vision_activation_bytes(a2, 224, "none", True, 2.0) - vision_activation_bytes(a1, 224, "none", True, 2.0)
    assert d == 2 * (12 + 1) * 96 * 56 * 56


def test_vit_tokens_and_blocks_match_the_transformer_layer():
    a = VisionArch(kind="vit", patch=16, layers=12, hidden=768, heads=12, ffn=3072)
    t = (224 // 16) ** 2 + 1
    assert t == 197
    ls = LayerShape(hidden=768, heads=12, ffn=3072, gated=False, dropout=False)
    layer = sum(layer_activation_parts(t, ls, flash=True).values())
    # fp32: the patch embedding keeps the image, the final norm its input, each tensor 4 bytes
    assert vision_activation_bytes(a, 224, "none", True, 4.0) == 2 * (12 * layer + 2 * 3 * 224 * 224 + 2 * t * 768)
    # autocast: the two LayerNorms per block and the final one keep fp32 copies of their inputs
    amp = 12 * (layer + 2 * 2 * t * 768) + 2 * 3 * 224 * 224 + 4 * t * 768
    assert vision_activation_bytes(a, 224, "none") == amp
    # eager attention adds the softmax output a·s² per layer: fp32 (4 B) + the 16-bit copy the GEMM reads (2 B)
    assert vision_activation_bytes(a, 224, "none", flash=False) - amp == 12 * 6 * 12 * t * t
    assert vision_activation_bytes(a, 224, "none", False, 4.0) - vision_activation_bytes(a, 224, "none", True, 4.0) \
        == 12 * 4 * 12 * t * t


def test_resnet50_inside_the_dle_bound(cat):
    # DLE: 256 images per 16 GB V100 with AMP -> activations <= (16 GB - states - context) / 256 ≈ 0.055 GiB
    per = vision_activation_bytes(arch(cat, "resnet-50"), 224, "none") / GIB
    assert 0.03 < per <= 0.055
    e = estimate(req(model={"preset": "resnet-50"}, training={"micro_batch": 256, "precision": "fp16"}),
                 cat, "v100-16gb-sxm2", 1)
    assert e.memory.per_gpu_gib <= 16.0


def test_unet_grows_with_resolution_and_depth(cat):
    # SD 1.5 at 512 px works on a 64x64 latent, at 768 px on 96x96
    a = arch(cat, "stable-diffusion-1.5")
    assert vision_activation_bytes(a, 512, "none") < vision_activation_bytes(a, 768, "none")
    # SDXL's 10-deep transformers at 32x32 make it heavier per pixel than SD 1.5
    b = arch(cat, "sdxl")
    assert vision_activation_bytes(b, 1024, "none") / 4 > vision_activation_bytes(a, 512, "none")


# ---- published measured peaks (PEFT README, SD v1.4 DreamBooth) -----------------------------------------


def _sd_peak(cat, method: str, ckpt: str) -> float:
    r = req(model={"preset": "stable-diffusion-1.5"},
            training={"method": method, "precision": "fp32", "micro_batch": 2, "flash_attention": False,
                      "activation_checkpointing": ckpt, "parallel": {"zero_stage": 0, "offload": "none"}})
    e = estimate(r, cat, "a100-80gb-sxm", 1)
    return e.memory.per_gpu_gib - PARAMS.cuda_context_gib  # the tracker reports the allocator's peak


@pytest.mark.parametrize(("method", "ckpt", "published_gb", "tol"), [
    ("full", "none", 27.5, 0.15),  # the trained text encoder (123M params) is not modelled: expect below
    ("lora", "none", 15.5, 0.15),
    ("lora", "full", 8.12, 0.30),
])
def test_sd_dreambooth_peaks_within_tolerance(cat, method, ckpt, published_gb, tol):
    got = _sd_peak(cat, method, ckpt)
    want = published_gb * 1e9 / GIB
    assert abs(got / want - 1) <= tol, (got, want)


def test_companion_text_encoder_and_vae_stay_on_the_gpu(cat):
    a = arch(cat, "sdxl")
    assert a.companion_params > 8e8  # two text encoders + VAE
    base = req(model={"preset": "sdxl"}, training={"method": "lora", "micro_batch": 1})
    e = estimate(base, cat, "h100-sxm", 1)
    # frozen UNet (2 B) + companions (2 B) at least
    assert e.memory.breakdown.weights * GIB >= 2.0 * (2.57e9 + a.companion_params) * 0.99


# ---- properties -------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(preset=st.sampled_from(VISION_PRESETS), side=st.integers(32, 1024), step=st.integers(1, 256),
       ckpt=st.sampled_from(("none", "selective", "full")), flash=st.booleans())
def test_larger_image_never_lowers_activation_memory(preset, side, step, ckpt, flash):
    a = arch(load_catalog(), preset)
    assert vision_activation_bytes(a, side + step, ckpt, flash) >= vision_activation_bytes(a, side, ckpt, flash)


@pytest.mark.parametrize("preset", VISION_PRESETS)
def test_recompute_and_fused_attention_never_keep_more(cat, preset):
    a = arch(cat, preset)
    side = next(m for m in cat.models if m.id == preset).resolution or 224
    none, sel, full = (vision_activation_bytes(a, side, c, flash=False) for c in ("none", "selective", "full"))
    assert full < sel <= none
    assert vision_activation_bytes(a, side, "none", flash=True) <= none


@pytest.mark.parametrize(("small", "big"), [("resnet-50", "resnet-101"), ("resnet-101", "resnet-152"),
                                            ("convnext-tiny", "convnext-base")])
def test_deeper_network_keeps_more(cat, small, big):
    assert vision_activation_bytes(arch(cat, big), 224, "none") > vision_activation_bytes(arch(cat, small), 224, "none")


def test_estimate_reads_the_layer_list_at_the_requested_resolution(cat):
    def act(res: int | None, precision: str = "bf16") -> float:
        model = {"preset": "vit-b-16", **({"resolution": res} if res else {})}
        e = estimate(req(model=model, training={"micro_batch": 8, "precision": precision}), cat, "a100-80gb-sxm", 1)
        return e.memory.breakdown.activations
    a = arch(cat, "vit-b-16")
    assert act(None) * GIB == pytest.approx(8 * vision_activation_bytes(a, 224, "none"), rel=1e-3)
    assert act(384) > 2.9 * act(None)  # 577 tokens vs 197, attention-free terms scale with tokens
    assert act(None, "fp32") * GIB == pytest.approx(8 * vision_activation_bytes(a, 224, "none", True, 4.0), rel=1e-3)
    assert act(None, "fp32") > 1.5 * act(None)


# ---- fp32 keeps 4-byte activations (token models too) ------------------------------------------------


def test_fp32_token_layers_keep_four_byte_tensors_and_one_byte_masks(cat):
    from gpuwiz.core.arch import resolve_model
    from gpuwiz.core.memory import layer_activation_bytes, layer_shapes, memory_consts
    model = resolve_model(req(model={"preset": "bert-large", "seq_len": 512}).model, cat)
    ls, _, _ = layer_shapes(model)
    h = model.hidden or 0

    def consts(precision: str):
        return memory_consts(model, "full", precision, "adamw", False, 8, 512, None, 0.0, 1e6)
    half, full = consts("bf16"), consts("fp32")
    layer16 = layer_activation_bytes(512, h, model.heads or 0, model.ffn or 0, model.mlp, False, "none", shape=ls)
    assert half.act_layer["none"] == layer16
    # two 1-byte dropout masks (s·h each) and the 1-byte attention-dropout mask (a·s²) do not double
    assert full.act_layer["none"] == 2 * layer16 - 2 * 512 * h - (model.heads or 0) * 512 * 512
    assert full.act_layer["full"] == 2 * half.act_layer["full"]


def test_bert_large_fp32_on_v100_matches_the_hf_measurement(cat):
    # Hugging Face Transformers docs, "Model training anatomy": bert-large-uncased sequence classification,
    # batch 4, 512 tokens, fp32, AdamW, eager attention, V100 16GB: 14,949 MB by nvidia-smi (context included)
    r = req(model={"preset": "bert-large", "seq_len": 512},
            training={"precision": "fp32", "micro_batch": 4, "flash_attention": False,
                      "activation_checkpointing": "none", "parallel": {"zero_stage": 0, "offload": "none"}})
    got = estimate(r, cat, "v100-16gb-sxm2", 1).memory.per_gpu_gib
    assert abs(got / (14949e6 / GIB) - 1) <= 0.10, got


def test_an_incomplete_layer_list_is_one_line_naming_the_overlay(tmp_path):
    from gpuwiz.core.errors import GpuwizError
    over = tmp_path / "vision.yaml"
    over.write_text("models:\n- id: resnet-50\n"
                    "  vision: {kind: resnet, stages: [3, 4, 6], widths: [64, 128, 256, 512]}\n", encoding="utf-8")
    with pytest.raises(GpuwizError) as exc:
        load_catalog(over)
    msg = str(exc.value).splitlines()[0]
    assert msg.startswith(f"{over}:3:") and "vision" in msg and "same length" in msg, msg
