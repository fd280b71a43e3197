"""Typed data: what the user asks for (Requirements, = the config file) and what the engine answers.

Everything here is a frozen pydantic model. Requirements reject unknown keys (a typo in a config
is an error, not silently ignored). Result models are plain data so that they serialise to the
JSON the CLI prints and the TUI renders.

No ``from __future__ import annotations`` here (issue 16): pydantic evaluates a string annotation by
compiling it, ~230 compiles at every start; written as expressions they come compiled from the
bytecode. A class used before its definition is quoted (``"Range | None"``).
"""

import math
import sys
import types
import typing
from collections.abc import Callable
from datetime import date, datetime
from typing import Annotated, Any, ClassVar, Final, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from gpuwiz.core.money import MoneyUSD
from gpuwiz.core.units import HumanFloat, HumanInt, SizeGB, SizeKB
from gpuwiz.i18n import _

CONFIG_VERSION: Final = 1

# Limits the engine accepts (documented in README "Limits"); past them a clear error.
MAX_PARAMS_B = 100_000.0  # 100 T parameters
MAX_GPUS = 100_000
MAX_TOKENS = 1e16
MAX_SAMPLES = 1e13
MAX_DATASET_GB = 1e8  # 100 PB
MAX_SEQ_LEN = 4_194_304  # 4M tokens
MAX_BUDGET_USD = 1e11

Family = Literal["decoder", "encoder", "encoder-decoder", "cnn", "vit", "diffusion", "speech", "moe"]
Method = Literal["pretrain", "full", "lora", "qlora"]
Precision = Literal["fp32", "tf32", "fp16", "bf16", "fp8"]
Optimizer = Literal["adamw", "adamw-8bit", "sgd"]
Checkpointing = Literal["none", "selective", "full"]
Offload = Literal["none", "optimizer", "optimizer+params"]
# Training software stack (issue 11): what each fuses, overlaps and supports is data (catalog.yaml `stacks:`)
Stack = Literal["auto", "pytorch", "hf-trainer", "deepspeed", "llm-foundry", "torchtitan", "megatron", "unsloth",
                "mindspeed"]
DeployMode = Literal["rent", "buy", "either"]
Objective = Literal["cheapest", "fastest", "perf-per-watt"]
Sensitivity = Literal["public", "internal", "confidential", "regulated"]
Site = Literal["any", "desk", "office", "server-room", "colo", "cloud"]
Mlp = Literal["swiglu", "geglu", "gelu"]
Norm = Literal["rms", "layer"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


# --------------------------------------------------------------------------------------------------
# Requirements (the config file, `version: 1`)
# --------------------------------------------------------------------------------------------------


class ModelSpec(_Strict):
    """A preset id, a Hugging Face config.json path, or explicit architecture fields.

    Explicit fields override the preset / HF config. Resolution happens in ``core.arch``.
    """

    preset: str | None = None
    hf_config: str | None = None
    name: str | None = Field(None, max_length=200)
    family: Family | None = None
    params_b: HumanFloat | None = Field(None, gt=0, le=MAX_PARAMS_B)
    layers: HumanInt | None = Field(None, ge=1, le=10_000)
    hidden: HumanInt | None = Field(None, ge=1, le=1_000_000)
    heads: HumanInt | None = Field(None, ge=1, le=100_000)
    kv_heads: HumanInt | None = Field(None, ge=1, le=100_000)
    ffn: HumanInt | None = Field(None, ge=1, le=10_000_000)
    vocab: HumanInt | None = Field(None, ge=1, le=100_000_000)
    seq_len: HumanInt | None = Field(None, ge=1, le=MAX_SEQ_LEN)
    experts: HumanInt | None = Field(None, ge=1, le=10_000)
    top_k: HumanInt | None = Field(None, ge=1, le=10_000)
    resolution: HumanInt | None = Field(None, ge=8, le=16_384)  # image side in pixels (cnn/vit/diffusion)
    # Architecture details for a model written out field by field (docs/LIMITS.md "Architecture").
    # Unset = the preset's / config.json's value, else the family default (core.arch).
    mlp: Mlp | None = None  # swiglu / geglu: gated, 3 matrices (Llama, Gemma); gelu: 2 matrices (GPT-2, BERT)
    head_dim: HumanInt | None = Field(None, ge=1, le=65_536)  # per attention head; unset = hidden / heads
    tied_embeddings: bool | None = None  # output head shares the input embedding
    norm: Norm | None = None  # rms (weight) or layer (weight + bias)
    bias: bool | None = None  # biases on every linear layer (GPT-2, BERT)
    attention_bias: bool | None = None  # biases on q, k, v and o (gpt-oss)
    qkv_bias: bool | None = None  # biases on q, k, v only (Qwen2 / Qwen2.5)
    mlp_bias: bool | None = None  # biases on the MLP / expert linears (gpt-oss experts)
    qk_norm: bool | None = None  # RMSNorm over each head's q and k (Qwen3)
    learned_positions: bool | None = None  # a learned absolute position table (GPT-2, BERT); off = RoPE
    max_positions: HumanInt | None = Field(None, ge=1, le=MAX_SEQ_LEN)  # rows of that table
    type_vocab: HumanInt | None = Field(None, ge=0, le=1_000)  # BERT token-type embeddings
    pooler: bool | None = None  # BERT pooler (dense h x h)
    # Mixture of experts (with `experts` and `top_k`)
    moe_ffn: HumanInt | None = Field(None, ge=1, le=10_000_000)  # one expert's width (HF moe_intermediate_size)
    shared_experts: HumanInt | None = Field(None, ge=0, le=1_000)  # always-on experts (HF n_shared_experts)
    shared_expert_ffn: HumanInt | None = Field(None, ge=1, le=10_000_000)  # each shared expert's size; unset = moe_ffn
    shared_expert_gate: bool | None = None  # sigmoid gate on the shared expert, Linear(h, 1) (Qwen2-MoE)
    first_k_dense: HumanInt | None = Field(None, ge=0, le=10_000)  # first k layers keep a dense MLP (DeepSeek)
    moe_layer_freq: HumanInt | None = Field(None, ge=1, le=10_000)  # layer i (from 0) is MoE when (i + 1) % freq == 0
    router_bias: bool | None = None  # router Linear(h, experts) has a bias (gpt-oss)
    # DeepSeek multi-head latent attention (MLA): set kv_lora_rank and the three head dims
    q_lora_rank: HumanInt | None = Field(None, ge=1, le=1_000_000)  # unset = q projected directly
    kv_lora_rank: HumanInt | None = Field(None, ge=1, le=1_000_000)
    qk_nope_head_dim: HumanInt | None = Field(None, ge=1, le=65_536)
    qk_rope_head_dim: HumanInt | None = Field(None, ge=1, le=65_536)
    v_head_dim: HumanInt | None = Field(None, ge=1, le=65_536)
    attention_sinks: bool | None = None  # one learned sink logit per head and layer (gpt-oss)
    # Sliding-window attention (no parameters; the attention cost): window in tokens, on how many layers
    sliding_window: HumanInt | None = Field(None, ge=1, le=MAX_SEQ_LEN)
    sliding_layers: HumanInt | None = Field(None, ge=0, le=10_000)  # unset = every layer (Mistral 7B v0.1)


class ParallelSpec(_Strict):
    zero_stage: Literal[0, 1, 2, 3] | None = None
    tp: HumanInt | None = Field(None, ge=1, le=1024)
    pp: HumanInt | None = Field(None, ge=1, le=1024)
    offload: Offload | None = None
    # issue 11: context parallel (ring attention over the sequence), expert parallel (MoE experts spread
    # over ranks), virtual pipeline stages per rank (interleaved 1F1B)
    cp: HumanInt | None = Field(None, ge=1, le=1024)
    ep: HumanInt | None = Field(None, ge=1, le=1024)
    vp: HumanInt | None = Field(None, ge=1, le=64)


# A stated training.global_batch is kept within this share: whole micro-batches per replica round it up (a step
# of 96 replicas trains 1,056 sequences for 1,024 asked: +3 %, said by the batch-rounded pitfall); past it the
# planner makes the micro-batch smaller (estimate._mb_cap_of), and a shape whose replicas alone overshoot it
# is another run, which the search drops. Judgement: practitioners round a batch to the replicas by a few per
# cent, not by 80 %.
BATCH_SLACK = 0.10


class TrainingSpec(_Strict):
    method: Method = "full"
    precision: Precision = "bf16"
    optimizer: Optimizer = "adamw"
    micro_batch: HumanInt | None = Field(None, ge=1, le=1_000_000)
    global_batch: HumanInt | None = Field(None, ge=1, le=100_000_000)
    activation_checkpointing: Checkpointing | None = None
    flash_attention: bool = True
    lora_rank: HumanInt = Field(16, ge=1, le=65_536)
    parallel: ParallelSpec | None = None
    # Pure 16-bit training: weights, gradients and optimizer states all in the training precision, no fp32
    # master copy (torchtune dtype=bf16, LLaMA-Factory pure_bf16): AdamW 2 + 2 + 4 = 8 B/param. No effect
    # for fp32/tf32 (no master copy there anyway).
    pure_bf16: bool = False
    # Fused / chunked cross-entropy (torchtune CEWithChunkedOutputLoss, Liger fused linear CE): the fp32
    # logits are never materialised for the whole sequence. Off = full fp32 logits (HF Trainer default).
    chunked_loss: bool = False
    # Activation offloading: the checkpointed layer inputs go to host memory (torchtune
    # enable_activation_offloading, Megatron/DeepSpeed cpu_checkpointing); only with full checkpointing.
    activation_offload: bool = False
    # The software stack the run uses (issue 11); `auto` picks what the plan needs and says so
    stack: Stack = "auto"


class DataSpec(_Strict):
    tokens: HumanFloat | None = Field(None, ge=1, le=MAX_TOKENS)  # a fraction of a token is no data
    samples: HumanFloat | None = Field(None, gt=0, le=MAX_SAMPLES)
    epochs: HumanFloat = Field(1.0, gt=0, le=100_000)
    dataset_gb: SizeGB | None = Field(None, gt=0, le=MAX_DATASET_GB)
    sample_kb: SizeKB | None = Field(None, gt=0, le=1e9)


class ScheduleSpec(_Strict):
    runs_per_month: HumanFloat = Field(1.0, gt=0, le=10_000)
    deadline_days: HumanFloat | None = Field(None, gt=0, le=3650)


class DeploymentSpec(_Strict):
    mode: DeployMode = "either"
    objective: Objective = "cheapest"
    budget_usd: MoneyUSD | None = Field(None, gt=0, le=MAX_BUDGET_USD)  # "$250,000", "¥1,800,000" (converted)
    horizon_years: HumanFloat = Field(3.0, gt=0, le=15)
    electricity_usd_per_kwh: MoneyUSD | None = Field(None, ge=0, le=10)
    country: str = Field("US", min_length=2, max_length=2, pattern=r"^[A-Za-z]{2}$")
    data_sensitivity: Sensitivity = "internal"
    # Optional: rent only in these ISO 3166 countries or provider region ids (e.g. [DE, eu-central-1]).
    regions: list[str] | None = Field(None, min_length=1, max_length=100)
    currency: str | None = Field(None, pattern=r"^[A-Za-z]{3}$")  # ISO 4217 shown to the user; default: the country's
    site: Site = "any"
    headroom: HumanFloat = Field(0.2, ge=0, le=0.9)  # keep this fraction of GPU memory free
    # TCO overrides (defaults come from the catalog's facility section, with sources)
    pue: HumanFloat | None = Field(None, ge=1.0, le=3.0)
    colo_usd_per_kw_month: MoneyUSD | None = Field(None, ge=0, le=10_000)
    staff_usd_per_year: MoneyUSD | None = Field(None, ge=0, le=1e8)
    utilization: HumanFloat | None = Field(None, gt=0, le=1.0)
    used_hardware: bool = False
    require_cuda: bool = False  # the training code needs CUDA (custom kernels): NVIDIA GPUs only


class HardwareSpec(_Strict):
    gpu: str | None = None
    count: HumanInt | None = Field(None, ge=1, le=MAX_GPUS)
    gpus_per_node: HumanInt | None = Field(None, ge=1, le=72)


def _iso(value: object) -> object:
    """An unquoted YAML timestamp (``measured_at: 2026-12-01T10:00:00``) arrives as a date/datetime."""
    return value.isoformat() if isinstance(value, (date, datetime)) else value


class CalibrationSpec(_Strict):
    """Measured numbers from the user's own runs; they win over the model's estimate."""

    tokens_per_s_per_gpu: HumanFloat | None = Field(None, gt=0, le=1e9)
    samples_per_s_per_gpu: HumanFloat | None = Field(None, gt=0, le=1e9)
    mfu: HumanFloat | None = Field(None, gt=0, le=1.0)
    peak_memory_gib: HumanFloat | None = Field(None, gt=0, le=10_000)
    # Where it was measured (`gpuwiz calibrate` / `gpuwiz probe` fill these in). gpu/count/gpus_per_node
    # make the measured point the calibration's reference instead of `hardware:`.
    gpu: str | None = Field(None, max_length=100)
    count: HumanInt | None = Field(None, ge=1, le=MAX_GPUS)
    gpus_per_node: HumanInt | None = Field(None, ge=1, le=72)
    step_time_s: HumanFloat | None = Field(None, gt=0, le=1e6)
    source: str | None = Field(None, max_length=500)
    measured_at: Annotated[str | None, BeforeValidator(_iso)] = Field(None, max_length=40)


class HaveSpec(_Strict):
    """Hardware the team already owns: an option at its marginal cost (power, no purchase)."""

    gpu: str = Field(max_length=100)
    count: HumanInt = Field(1, ge=1, le=MAX_GPUS)
    gpus_per_node: HumanInt | None = Field(None, ge=1, le=72)


class Requirements(_Strict):
    version: Literal[1] = CONFIG_VERSION
    model: ModelSpec = ModelSpec()
    training: TrainingSpec = TrainingSpec()
    data: DataSpec = DataSpec()
    schedule: ScheduleSpec = ScheduleSpec()
    deployment: DeploymentSpec = DeploymentSpec()
    hardware: HardwareSpec | None = None
    calibration: CalibrationSpec | None = None
    have: tuple[HaveSpec, ...] = ()


# --------------------------------------------------------------------------------------------------
# Resolved model (arch filled in from preset / HF config / explicit fields)
# --------------------------------------------------------------------------------------------------


class VisionArch(BaseModel):
    """A vision model's layer list, as architecture data (catalog ``models:`` entries, key ``vision``).

    Read by ``core.memory.vision_activation_bytes`` to count the activations autograd keeps, operator by
    operator, at any image side. ``kind``:

    * ``resnet``: torchvision ResNet v1.5 bottlenecks -- ``stages`` blocks per stage, ``widths`` the
      bottleneck (3x3) width per stage, ``expansion`` x width out (4);
    * ``convnext``: ConvNeXt blocks -- ``stages`` blocks per stage, ``widths`` channels per stage;
    * ``vit``: patch embedding (``patch`` pixels) then ``layers`` pre-norm transformer blocks
      (``hidden``, ``heads``, GELU MLP ``ffn``), ``cls_tokens`` extra tokens;
    * ``unet``: diffusers UNet2DConditionModel -- ``widths`` channels per resolution level,
      ``layers_per_block`` resnets per down level (one more per up level), ``transformer_depth``
      transformer blocks after each resnet per level (0: none), ``mid_depth`` in the middle block,
      cross-attention to ``context_tokens`` text tokens of width ``context_dim``; the latent is the image
      side / ``latent_factor`` with ``latent_channels``; heads: ``heads`` fixed, else width / ``head_dim``;
      ``companion_params``: the frozen text encoder(s) and VAE that stay on the GPU.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["resnet", "convnext", "vit", "unet"]
    stages: list[int] = Field(default_factory=list)
    widths: list[int] = Field(default_factory=list)
    expansion: int = Field(4, ge=1, le=64)
    patch: int = Field(16, ge=1, le=1024)
    cls_tokens: int = Field(1, ge=0, le=1024)
    layers: int = Field(0, ge=0, le=10_000)
    hidden: int = Field(0, ge=0, le=1_000_000)
    heads: int = Field(0, ge=0, le=100_000)
    head_dim: int = Field(0, ge=0, le=65_536)
    ffn: int = Field(0, ge=0, le=10_000_000)
    latent_factor: int = Field(8, ge=1, le=64)
    latent_channels: int = Field(4, ge=1, le=1024)
    layers_per_block: int = Field(2, ge=1, le=64)
    transformer_depth: list[int] = Field(default_factory=list)
    mid_depth: int = Field(1, ge=0, le=1_000)
    context_tokens: int = Field(77, ge=0, le=1_000_000)
    context_dim: int = Field(768, ge=0, le=1_000_000)
    # Frozen modules the training step runs and keeps on every GPU besides the trained network (a diffusion
    # model's text encoders and VAE), parameters; held in 16 bits under mixed precision, 32 in fp32
    companion_params: float = Field(0.0, ge=0, le=1e12)

    @model_validator(mode="after")
    def _complete(self) -> "VisionArch":
        """The fields its ``kind`` needs, consistent with each other (the memory model reads them as given)."""
        if self.kind in ("resnet", "convnext"):
            if not self.stages or len(self.stages) != len(self.widths):
                raise ValueError(_("a {kind} needs stages and widths of the same length (one per stage)").format(
                    kind=self.kind))
        elif self.kind == "vit":
            if not (self.layers and self.hidden and self.heads):
                raise ValueError(_("a vit needs layers, hidden and heads"))
        elif not self.widths or len(self.transformer_depth) > len(self.widths):
            raise ValueError(_("a unet needs widths (one per level) and at most one transformer_depth per level"))
        if any(v < 1 for v in (*self.stages, *self.widths)) or any(d < 0 for d in self.transformer_depth):
            raise ValueError(_("stages and widths must be >= 1, transformer_depth >= 0"))
        return self


class ResolvedModel(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    family: Family
    modality: Literal["text", "image", "audio"] = "text"
    is_token_model: bool = True
    params_total: float  # parameters (count, not billions)
    params_active: float  # per token (MoE: top_k experts)
    params_embedding: float = 0.0
    layers: int | None = None
    hidden: int | None = None
    heads: int | None = None
    kv_heads: int | None = None
    ffn: int | None = None
    vocab: int | None = None
    seq_len: int | None = None
    experts: int | None = None
    top_k: int | None = None
    mlp: Mlp = "gelu"
    # Non-token models (published per-sample figures, at `resolution`)
    train_gflops_per_sample: float | None = None
    act_gib_per_sample: float | None = None
    per_sample_basis: Literal["published", "estimate"] = "published"  # the preset's (catalog ModelPreset)
    resolution: int | None = None
    vision: VisionArch | None = None  # layer list of a vision model (per-operator activation memory)
    source: str | None = None
    # Layout details used by the exact parameter count (core.arch); defaults = Llama-style decoder
    tied_embeddings: bool = False
    norm: Literal["rms", "layer"] = "rms"
    bias: bool = False  # biases on every linear layer (GPT-2, BERT)
    qkv_bias: bool = False  # biases on q/k/v only (Qwen2)
    head_dim: int | None = None  # per attention head (core.arch sets it: hidden / heads unless given)
    max_positions: int | None = None  # learned position embeddings (GPT-2, BERT); None = RoPE
    type_vocab: int = 0  # BERT token-type embeddings
    pooler: bool = False  # BERT pooler
    # ---- Per-layer structure for the performance / memory model (core.arch fills every field) ----
    attention_bias: bool = False  # biases on q, k, v, o (gpt-oss)
    mlp_bias: bool = False  # biases on the MLP / expert linears (gpt-oss)
    qk_norm: bool = False  # per-head RMSNorm on q and k, head_dim weights each (Qwen3)
    attention_sinks: bool = False  # one sink logit per head per layer (gpt-oss)
    dense_layers: int = 0
    """Layers with a dense MLP of width ``ffn`` (all layers of a dense model; DeepSeek-V3: the first 3).

    ``ffn`` is that dense width; in a MoE model without dense layers it equals ``moe_ffn`` (as for Mixtral).
    Expert GEMMs use ``moe_ffn``, never ``ffn``."""
    moe_layers: int = 0
    """Layers with routed experts (``dense_layers + moe_layers == layers`` for token models)."""
    moe_ffn: int | None = None
    """Intermediate size of ONE routed expert (HF ``moe_intermediate_size``; Mixtral: = ``ffn``)."""
    shared_experts: int = 0
    """Always-active experts per MoE layer (DeepSeek ``n_shared_experts``, Qwen2-MoE: 1)."""
    shared_expert_ffn: int | None = None
    """Intermediate size of EACH shared expert (None when there are none)."""
    shared_expert_gate: bool = False  # Qwen2-MoE: Linear(h, 1) gate on the shared expert
    router_bias: bool = False  # gpt-oss router has a bias
    q_lora_rank: int | None = None
    """MLA query compression rank (None: q projected directly from h)."""
    kv_lora_rank: int | None = None
    """MLA key/value latent rank; set = the model uses multi-head latent attention (DeepSeek-V2/V3)."""
    qk_nope_head_dim: int | None = None
    """MLA per-head q/k width without rotary."""
    qk_rope_head_dim: int | None = None
    """MLA per-head rotary q/k width (the rotary key is shared across heads)."""
    v_head_dim: int | None = None
    """MLA per-head value width."""
    sliding_window: int | None = None
    """Sliding-window attention span in tokens (Mistral 7B: 4096; gpt-oss: 128), None = full attention."""
    sliding_layers: int = 0
    """Layers that use the window (gpt-oss: every other one); the rest attend to the whole sequence."""
    mtp_layers: int = 0
    """DeepSeek-V3 multi-token-prediction modules (HF ``num_nextn_predict_layers``): not in ``params_total``."""
    params_attention: float = 0.0
    """Parameters of one layer's attention block (projections, biases, q/k norms, sinks)."""
    params_dense_mlp: float = 0.0
    """Parameters of one dense MLP of width ``ffn`` (0 when ``dense_layers == 0``)."""
    params_expert: float = 0.0
    """Parameters of ONE routed expert (0 for dense models)."""
    default_micro_batch: int | None = None
    shape_derived: bool = False  # layers/hidden guessed from params_b (no architecture given)
    notes: tuple[str, ...] = ()  # how the model was resolved (goes into Estimate.assumptions)


# --------------------------------------------------------------------------------------------------
# Results: plain frozen dataclasses (issue 16). The engine builds them from values it computed, so they
# need no validation, and building ~25 pydantic schemas at import was a quarter of a CLI start. They
# keep the part of the pydantic API the project uses on results (model_dump, model_dump_json,
# model_copy), and model_dump(mode="json") gives what pydantic gave: a number in a float field is a
# float, a whole float in an int field an int, a non-finite float None (tests/core/test_result_types.py).
# --------------------------------------------------------------------------------------------------

_R = TypeVar("_R", bound="Result")
_T = TypeVar("_T")
_Conv = Callable[[Any, bool], Any]


class _Factory:
    __slots__ = ("make",)

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make


def field(*, default_factory: Callable[[], _T]) -> _T:
    """A field default made fresh for each result (``items: list[str] = field(default_factory=list)``)."""
    return _Factory(default_factory)  # type: ignore[return-value]


@typing.dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(field,))
class Result:
    """Base of the result types: keyword construction, frozen, compared and hashed by value, and
    pydantic-style dump and copy. The fields are the class's annotations; a class attribute is a
    field's default. No code is generated per class (dataclasses compile ~5 functions per class: a
    plain frozen dataclass cost more at import than the pydantic model it replaced)."""

    __slots__ = ()
    _names: ClassVar[tuple[str, ...]] = ()
    _static: ClassVar[dict[str, Any]] = {}
    _factories: ClassVar[tuple[tuple[str, Callable[[], Any]], ...]] = ()
    _required: ClassVar[frozenset[str]] = frozenset()
    _fieldset: ClassVar[frozenset[str]] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        names = tuple(cls.__dict__.get("__annotations__", {}))  # noqa: RUF063 - own fields, as strings
        own = cls.__dict__
        cls._names = names
        cls._static = {n: own[n] for n in names if n in own and not isinstance(own[n], _Factory)}
        cls._factories = tuple((n, own[n].make) for n in names if isinstance(own.get(n), _Factory))
        cls._required = frozenset(n for n in names if n not in own)
        cls._fieldset = frozenset(names)

    def __init__(self, **values: Any) -> None:
        cls = type(self)
        if not cls._required <= values.keys() or not values.keys() <= cls._fieldset:
            missing = sorted(cls._required - values.keys())
            unknown = sorted(values.keys() - cls._fieldset)
            raise TypeError(f"{cls.__name__}: missing {missing}, unknown {unknown}")
        d = self.__dict__
        d.update(cls._static)
        for name, make in cls._factories:
            if name not in values:
                d[name] = make()
        d.update(values)

    @classmethod
    def from_fields(cls: type[_R], fixed: dict[str, Any], /, **values: Any) -> _R:
        """``cls(**fixed, **values)`` for a caller whose ``fixed`` (kept between calls; ``fields_of``)
        and ``values`` give every field: without ``__init__``'s keyword checks and defaults (a hot path
        builds dozens of these per answer; tests/core/test_fast_construction)."""
        new = object.__new__(cls)
        d = new.__dict__
        d.update(fixed)
        d.update(values)
        return new

    @classmethod
    def fields_of(cls, **values: Any) -> dict[str, Any]:
        """The class's defaults with ``values``: the part of a value ``from_fields`` is given to keep."""
        if not values.keys() <= cls._fieldset or cls._factories:
            raise TypeError(f"{cls.__name__}: unknown {sorted(values.keys() - cls._fieldset)} or field factories")
        return {**cls._static, **values}

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: cannot delete {name!r}")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(self.__dict__[n] == other.__dict__[n] for n in self._names)

    def __hash__(self) -> int:
        return hash((type(self), *(self.__dict__[n] for n in self._names)))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={self.__dict__[n]!r}' for n in self._names)})"

    def model_dump(self, *, mode: Literal["python", "json"] = "python") -> dict[str, Any]:
        """The fields as plain data, nested results as dicts (``mode="json"``: JSON-ready values)."""
        j = mode == "json"
        d = self.__dict__
        return {name: conv(d[name], j) for name, conv in _dump_plan(type(self))}

    def model_dump_json(self) -> str:
        import json

        return json.dumps(self.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":"))

    def model_copy(self: _R, *, update: dict[str, Any] | None = None) -> _R:
        """A copy with ``update`` applied (no validation, as pydantic's model_copy)."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        if update:
            unknown = update.keys() - self._fieldset
            if unknown:
                raise TypeError(f"{type(self).__name__}: unknown field(s) {sorted(unknown)}")
            new.__dict__.update(update)
        return new


_PLANS: dict[type[Result], tuple[tuple[str, _Conv], ...]] = {}


def _own_hints(cls: type[Result]) -> dict[str, Any]:
    """The class's own field annotations as types: what typing.get_type_hints gives for them, at a fifth of
    its cost (it walks the MRO and strips every annotation again; a result's fields are its own)."""
    glob = sys.modules[cls.__module__].__dict__
    own: dict[str, Any] = cls.__dict__.get("__annotations__", {})  # noqa: RUF063 - own fields only
    return {name: eval(tp, glob, dict(vars(cls))) if isinstance(tp, str) else tp for name, tp in own.items()}


def _dump_plan(cls: type[Result]) -> tuple[tuple[str, _Conv], ...]:
    """Per result class: each field's name and how its value becomes plain data (from its annotation)."""
    plan = _PLANS.get(cls)
    if plan is None:
        hints = _own_hints(cls)
        skip: frozenset[str] = getattr(cls, "_dump_exclude", frozenset())  # pydantic's Field(exclude=True)
        plan = _PLANS[cls] = tuple((name, _converter(hints[name])) for name in cls._names if name not in skip)
    return plan


def _same(v: Any, j: bool) -> Any:
    return v


def _float(v: Any, j: bool) -> Any:
    if type(v) is int:
        return float(v)
    if j and type(v) is float and not math.isfinite(v):
        return None
    return v


def _int(v: Any, j: bool) -> Any:
    return int(v) if type(v) is float and v.is_integer() else v


def _bool(v: Any, j: bool) -> Any:
    return bool(v) if type(v) is int else v


def _plain(v: Any, j: bool) -> Any:
    """Any value, by its runtime type (where the annotation says nothing more)."""
    if isinstance(v, Result):
        return v.model_dump(mode="json" if j else "python")
    if isinstance(v, list | tuple):
        out = [_plain(x, j) for x in v]
        return out if j or isinstance(v, list) else tuple(out)
    if isinstance(v, dict):
        return {k: _plain(x, j) for k, x in v.items()}
    return _float(v, j) if type(v) is float else v


def _converter(tp: Any) -> _Conv:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Annotated:  # the metadata says nothing about the dump (get_type_hints dropped it)
        return _converter(args[0])
    if tp is float:
        return _float
    if tp is int:
        return _int
    if tp is bool:
        return _bool
    if tp is str or origin is Literal:
        return _same
    if isinstance(tp, type) and issubclass(tp, Result):
        return _plain
    if origin in (typing.Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        if len(members) == 1:
            inner = _converter(members[0])
            return lambda v, j: None if v is None else inner(v, j)
        return _plain
    if origin in (list, tuple) and args:
        item = _converter(args[0])
        as_tuple = origin is tuple
        return lambda v, j: [item(x, j) for x in v] if j or not as_tuple else tuple(item(x, j) for x in v)
    if origin is dict and len(args) == 2:
        value = _converter(args[1])
        return lambda v, j: {k: value(x, j) for k, x in v.items()}
    return _plain


# --------------------------------------------------------------------------------------------------
# Estimate (one GPU type x count)
# --------------------------------------------------------------------------------------------------


class ModelInfo(Result):
    name: str
    family: Family
    params_total: float
    params_active: float
    params_trainable: float


class MemoryBreakdown(Result):
    weights: float = 0.0  # GiB per GPU
    gradients: float = 0.0
    optimizer: float = 0.0
    activations: float = 0.0
    overhead: float = 0.0  # CUDA context, framework, comm buckets, fragmentation


class Memory(Result):
    per_gpu_gib: float
    capacity_gib: float
    usable_gib: float  # capacity x (1 - headroom)
    breakdown: MemoryBreakdown
    fits: bool
    headroom_frac: float  # free fraction of capacity left by the estimate (can be negative)
    host_ram_gib: float = 0.0  # pinned host memory needed by CPU offload (per node)
    per_gpu_gib_range: "Range | None" = None  # P10-P90; "fits" is decided at the point (P50) estimate
    p90_exceeds_capacity: bool = False  # the P90 end of the range is above the card's memory


class Plan(Result):
    gpus: int
    gpus_per_node: int
    nodes: int
    dp: int
    tp: int = 1
    pp: int = 1
    zero_stage: int = 0
    offload: Offload = "none"
    micro_batch: int = 1
    grad_accum: int = 1
    activation_checkpointing: Checkpointing = "none"
    framework: str = "PyTorch DDP"
    # issue 11: the stack assumed (never "auto": the one auto picked) and the extra parallel dimensions
    stack: str = "pytorch"
    cp: int = 1
    ep: int = 1
    vp: int = 1
    # the most samples a step may train (estimate.batch_most: a stated training.global_batch within BATCH_SLACK, or
    # the default grown with the replicas up to what a run like this uses), and whether the batch was defaulted
    batch_limit: int = 0
    batch_defaulted: bool = True

    @property
    def replicas(self) -> int:
        """Data-parallel replicas: a context-parallel group shares each micro-batch (``dp`` counts all of it)."""
        return max(1, self.dp // max(1, self.cp))

    @property
    def global_batch(self) -> int:
        """The batch a step trains: whole micro-batches, accumulated, on every replica."""
        return self.micro_batch * self.grad_accum * self.replicas


class Range(Result):
    """A P10-P90 range around a point estimate (from the cross-validated residuals, core.ranges)."""

    low: float
    high: float


class StackAlternative(Result):
    """The same run on another stack that supports it."""

    stack: str
    name: str
    wall_hours: float
    gpu_hours: float
    units_per_s_per_gpu: float  # tokens/s (token models) or samples/s per GPU
    feasible: bool
    change: float  # wall-time ratio against the assumed stack − 1 (−0.3 = 30 % faster)


class Throughput(Result):
    tokens_per_s_per_gpu: float | None = None
    samples_per_s_per_gpu: float | None = None
    mfu: float
    peak_tflops: float  # per GPU, dense, at the training precision
    achieved_tflops: float  # per GPU, model FLOPs
    step_time_s: float | None = None
    range: Range | None = None  # P10-P90 of the headline per-GPU figure (tokens/s, else samples/s)


class Time(Result):
    wall_hours: float
    gpu_hours: float
    total_pflop: float  # model FLOPs of one run, in 1e15
    wall_hours_range: Range | None = None  # P10-P90
    gpu_hours_range: Range | None = None


class Estimate(Result):
    gpu: str
    gpu_name: str
    model: ModelInfo
    memory: Memory
    plan: Plan
    throughput: Throughput
    time: Time
    feasible: bool  # fits in memory (and a plan exists)
    problems: list[str] = field(default_factory=list)  # why not feasible, in words
    assumptions: list[str] = field(default_factory=list)
    # issue 11: ranges and stacks
    range_basis: str | None = None  # which validation groups set the ranges, in words
    # the model family's published runs behind the speed range when too few to set it (core.ranges: the range
    # then comes from the other groups); None when the family's group set it, or no range applies
    family_runs_validated: int | None = None
    cost_multipliers: Range | None = None  # cost per run P10-P90 = point cost × (low, high)
    stack_alternatives: list[StackAlternative] = field(default_factory=list)


# --------------------------------------------------------------------------------------------------
# Recommendation
# --------------------------------------------------------------------------------------------------

Severity = Literal["block", "high", "medium", "info"]
SEVERITY_ORDER: dict[str, int] = {"block": 0, "high": 1, "medium": 2, "info": 3}  # worst first


class Pitfall(Result):
    id: str
    severity: Severity
    message: str
    source: str


class BomLine(Result):
    item: str
    qty: int
    unit_usd: float | None = None
    total_usd: float | None = None
    note: str = ""


class RentedInstance(Result):
    """Host resources of a rented instance (None where the offer does not publish them)."""

    vcpus: int | None = None
    ram_gib: float | None = None
    local_nvme_tb: float | None = None


USED_TIER = "-used"  # a build tier's suffix when its GPUs are priced used (core.system sizes them)


def tier_bought_used(tier: str) -> bool:
    """Whether a build tier (``Build.tier``, ``system.Sizing.tier``) prices its GPUs used."""
    return tier.endswith(USED_TIER)


class Build(Result):
    gpu: str
    gpu_name: str
    gpus_per_node: int
    nodes: int
    cpu: str
    cpu_count: int = 1  # sockets per node
    cpu_cores: int = 0  # per node
    pcie_lanes: int = 0  # per node
    ram_gb: int = 0  # per node
    storage: list[str] = field(default_factory=list)
    network: str = ""
    psu_w: int | None = 0  # per node; None for a rented instance
    power_w: int = 0  # sustained, per node
    heat_kw: float = 0.0  # whole build
    site: str = ""
    # where it lives, as a fact (desk | office | server-room | colo | cloud); ``site`` is the sentence
    # shown (translated). Not in the JSON: the sentence says it there.
    site_kind: str = ""
    _dump_exclude = frozenset({"site_kind"})
    software: list[str] = field(default_factory=list)
    bom: list[BomLine] = field(default_factory=list)
    capex_usd: float = 0.0
    # Sizing numbers behind the choices (core.system), for reports and pitfall messages
    chassis: str | None = ""  # None for a rented instance
    chassis_kind: str | None = None  # desktop | workstation | server | hgx
    rented: bool = False  # a cloud instance shape, not hardware to buy
    instance: RentedInstance | None = None  # rented: the instance's host resources
    tier: str = "standard"  # standard | lean (small-budget build), + USED_TIER when its GPUs are priced used
    psu_needed_w: int | None = None  # per node, the PSU-margin rule's need
    cpu_cores_needed: int = 0  # per node (data-loader rule)
    pcie_lanes_needed: int = 0  # per node
    vram_gb: float = 0.0  # total GPU memory per node, decimal GB
    storage_tb: float = 0.0  # local capacity per node (fast + bulk)
    storage_needed_tb: float = 0.0  # dataset copies + checkpoints + free space, whole build
    checkpoint_gb: float = 0.0  # one full training checkpoint
    read_gbps_needed: float = 0.0  # data pipeline, per node
    read_gbps: float = 0.0  # what the fast tier gives, per node
    network_gbps_per_gpu: float = 0.0  # inter-node (multi-node builds); 0 for single node
    rdma: bool = False
    max_power_w: int = 0  # per node, worst case (PSU sizing)

    @property
    def capex_known(self) -> bool:
        """Every line of the bill of materials has a price (a GPU the catalog has no price for leaves the GPUs, and a
        server priced as a share of them, unknown: the capex is then what the priced lines add up to)."""
        return all(x.total_usd is not None for x in self.bom)


class Alternative(Result):
    gpu: str
    gpu_name: str
    count: int
    nodes: int
    wall_hours: float
    cost_per_run_usd: float
    reason: str
    # a box bought for the desk that draws more than one office circuit carries: it needs a dedicated circuit
    dedicated_circuit: bool = False
    # it fits only inside the memory headroom asked (deployment.headroom): a near tie goes to a build that keeps it
    tight_memory: bool = False


class CloudOption(Result):
    provider: str
    instance: str
    gpu: str
    gpus_per_instance: int
    instances: int
    region: str = ""
    usd_per_hour: float  # all instances, on demand
    cost_per_run_usd: float  # on demand
    cost_per_run_spot_usd: float | None = None  # incl. checkpoint-and-restart overhead
    cost_per_run_reserved_usd: float | None = None
    cost_per_year_usd: float
    source: str = ""
    note: str = ""  # how the instances hold the job (idle GPUs in a bigger box, a split over the network)
    country: str = ""  # ISO 3166 alpha-2 of the offer's data centre
    tier: str = ""  # hyperscaler | neocloud | marketplace-secure | marketplace-community
    currency: str = "USD"  # the offer's own currency (its price_local)
    price_per_hour_local: float | None = None  # all instances, on demand, in ``currency``
    observed: str = ""  # when the price was true (ISO date / month / year)
    tradeoff: str = ""  # what renting it accepts for internal/public data (community host, data abroad)

    def reserved_wins(self, overhead_hours: float = 0.0) -> bool:
        """A 1-year reservation is cheaper per run than on demand, once the hours a rented run waits before it
        trains (provisioning, data staging) are counted: on demand they are paid at the hourly rate, on a
        reservation (billed all year) they are already paid -- as the ranking and the rent total count them."""
        return (self.cost_per_run_reserved_usd is not None
                and self.cost_per_run_reserved_usd < self.cost_per_run_usd + overhead_hours * self.usd_per_hour)


class OnPremTCO(Result):
    capex_usd: float
    power_usd_per_year: float
    space_usd_per_year: float
    maintenance_usd_per_year: float
    staff_usd_per_year: float
    residual_value_usd: float
    total_usd: float  # over the horizon, net of residual value
    usd_per_gpu_hour: float  # per delivered GPU-hour at the expected utilisation
    utilization: float


class MonthPoint(Result):
    month: int
    rent_usd: float
    buy_usd: float

    @staticmethod
    def series(months: int, rent_per_month: float, buy_at_start: float, buy_per_month: float) -> list["MonthPoint"]:
        """Month 0 to ``months``: the cumulative cost of renting (``round(rent_per_month * m, 2)``) and
        of owning (``round(buy_at_start + buy_per_month * m, 2)``), each point made without the keyword
        checks of ``Result``'s ``__init__`` (a cost analysis makes one per month of the horizon;
        tests/core/test_fast_construction)."""
        new = object.__new__
        out: list[MonthPoint] = []
        for m in range(months + 1):
            p = new(MonthPoint)
            p.__dict__.update(month=m, rent_usd=round(rent_per_month * m, 2),
                              buy_usd=round(buy_at_start + buy_per_month * m, 2))
            out.append(p)
        return out


class RentOffer(Result):
    """The cloud offer the verdict prices."""

    provider: str
    instance: str
    region: str = ""
    country: str = ""  # ISO 3166 alpha-2
    tier: str | None = None  # hyperscaler | neocloud | marketplace-secure | marketplace-community (offer data)
    instances: int
    gpus_per_instance: int
    usd_per_hour: float  # all instances, on demand
    overhead_hours: float = 0.0  # per run, paid at the rate: provisioning, image pull, dataset staging
    egress_usd: float = 0.0  # per run: the trained weights out of the cloud
    # per run: the run's share of keeping the dataset in object storage between runs (a year's storage
    # at cloud_storage_usd_per_tb_month over the year's runs); the owned build carries its disks instead
    storage_usd: float = 0.0


class CostAnalysis(Result):
    cloud: list[CloudOption] = field(default_factory=list)
    onprem: OnPremTCO | None = None
    verdict: Literal["rent", "buy", "hybrid"]
    verdict_reason: str
    breakeven_utilization: float | None = None
    payback_months: float | None = None
    rent_usd_per_gpu_hour: float | None = None
    flip_inputs: list[str] = field(default_factory=list)
    monthly: list[MonthPoint] = field(default_factory=list)
    buy_option: str = ""  # the owned build the on-prem TCO describes, in words
    rent_option: str = ""  # the cloud offer the rent side describes, in words
    rent_usd_total: float | None = None  # renting over the horizon
    hybrid_usd_total: float | None = None  # own part, rent the rest, over the horizon
    rent_offer: RentOffer | None = None  # the offer the verdict prices
    buy_wins_only_by_resale: bool = False  # buying is cheaper over the horizon only because of resale value
    # A rent verdict priced on a community marketplace host (whose owner sets the price and may withdraw the machine)
    # that owning would beat on the cheapest data-centre offer of the same build: that offer over the horizon, and
    # its name ("" / None otherwise: the verdict does not rest on a marketplace price)
    datacentre_rent_usd_total: float | None = None
    datacentre_rent_option: str = ""


class ParetoPoint(Result):
    """One build on the time / cost front: nothing else is both faster and cheaper per run."""

    gpu: str
    count: int
    nodes: int
    wall_hours: float
    cost_per_run_usd: float
    rented: bool
    # it ends past the deadline's slack, or the slow (P90) end of its time range misses the deadline (recommend.tight):
    # the ranking puts it after the builds that end in time, so it can be faster and cheaper than the pick
    late: bool = False
    owned: bool = False  # hardware the team already has (have:): its cost per run is the energy alone (core.owned)


class BindingConstraint(Result):
    """What stops a build (nothing fits), or what the pick had to give up (a run past the slack)."""

    kind: Literal["budget", "deadline", "memory", "policy", "site"]
    message: str


class OwnedPick(Result):
    """Owned hardware (``have:``) that does the run: the part of the fleet the run takes (core.owned), ending with
    slack before the deadline and keeping up with the month's runs. The answer's build and verdict are then for
    adding capacity beside it."""

    gpu: str
    gpu_name: str
    count: int  # GPUs the run takes
    owned: int  # GPUs of this type the team owns
    nodes: int
    gpus_per_node: int
    wall_hours: float
    energy_usd: float  # per run: what owning adds (no purchase)


class Recommendation(Result):
    objective: Objective
    found: bool  # False: nothing feasible; see suggestions
    build: Build | None = None  # what to get: a rented instance shape when the verdict is rent
    buy_build: Build | None = None  # the best build to own (priced in cost.onprem); = build when buying
    estimate: Estimate | None = None
    cost_per_run_usd: float | None = None
    cost_per_run_usd_range: Range | None = None  # P10-P90: the point cost x estimate.cost_multipliers
    alternatives: list[Alternative] = field(default_factory=list)
    cost: CostAnalysis | None = None
    pitfalls: list[Pitfall] = field(default_factory=list)
    # builds the search looked at: each GPU x GPUs per node x nodes sized, and one for each GPU type ruled out whole
    # before sizing (export rule, site, no price, ...); ``dropped`` never adds up to more
    candidates_considered: int = 0
    dropped: dict[str, int] = field(default_factory=dict)  # reason -> count
    suggestions: list[str] = field(default_factory=list)  # what would make it work
    pareto: list[ParetoPoint] = field(default_factory=list)  # time / cost front, fastest first
    binding_constraint: BindingConstraint | None = None
    assumptions: list[str] = field(default_factory=list)  # what the recommender assumed (turnaround)
    market: "MarketStatus | None" = None  # which offers the data policy allowed, and the export rules that apply
    currency: "CurrencyInfo | None" = None  # the user's currency; every *_usd field stays in USD
    owned_pick: OwnedPick | None = None  # owned hardware that does the run: use it; the rest is to add capacity


class CurrencyInfo(Result):
    """The currency money is shown in: ``usd_rate`` USD per unit (catalog fx), as of ``observed``."""

    code: str
    usd_rate: float
    observed: str
    source: str = ""


class ExportFact(Result):
    rule: str  # catalog export_rules id
    kind: Literal["hardware-purchase", "remote-access"]
    effect: Literal["prohibited", "license-required", "not-controlled"]
    summary: str
    source: str
    observed: str


class JurisdictionOption(Result):
    """The run the same question finds on offers in the user's own data-protection jurisdiction (no community
    hosts), beside a pick rented abroad with confidential data (core.recommend ``_in_jurisdiction``)."""

    gpu: str
    gpu_name: str
    count: int
    provider: str
    instance: str
    region: str = ""
    country: str = ""
    wall_hours: float
    cost_per_run_usd: float


class MarketStatus(Result):
    """Offer eligibility for the chosen GPU class under the user's data policy (core/market.py)."""

    data_sensitivity: Sensitivity
    jurisdiction: str  # "EU", "CN", "GB", ... where regulated data may go
    regions: list[str] = field(default_factory=list)
    gpu: str = ""  # the GPU class checked (the recommendation's)
    gpus: int = 0
    offers_for_gpu: int = 0  # catalog offers of this GPU type that hold the job
    compliant_for_gpu: int = 0
    excluded: dict[str, int] = field(default_factory=dict)  # rule -> offers of this GPU it excluded
    no_compliant_offer: bool = False  # offers exist for this GPU but none the policy allows
    closest_compliant: str = ""  # "8x NVIDIA H20 on Alibaba Cloud (cn-beijing)", or "" if none
    closest_compliant_id: str = ""  # its catalog id
    export: list[ExportFact] = field(default_factory=list)  # rules that apply to this user and GPU
    # confidential data on a pick rented outside the jurisdiction: the run kept inside it (None: none found,
    # when in_jurisdiction_checked; not looked for otherwise)
    in_jurisdiction: JurisdictionOption | None = None
    in_jurisdiction_checked: bool = False

