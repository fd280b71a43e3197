"""Launch files per target: pure functions from a ``Job`` to ``LaunchFile``s (name + text).

Each target maps the plan's fields to its own options through ONE table (``*_FIELDS`` below: target key,
how to get the value from the ``Plan``, which ``Plan`` field it carries). The readers in
``gpuwiz.launch.readers`` walk the same tables backwards, so a new plan field (context or expert
parallelism, say) is one row per target, and the round trip covers it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import yaml

from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.models import Plan
from gpuwiz.launch.job import PARTITION_MAX_HOURS, TIME_P90_ERROR, Job, slurm_time, time_limit_hours

TARGETS = ("torchrun", "accelerate", "deepspeed", "megatron", "slurm", "kubernetes", "skypilot")

Value = int | str | bool | float
Getter = Callable[[Plan], Value]


@dataclass(frozen=True, slots=True)
class LaunchFile:
    name: str
    text: str
    executable: bool = False


@dataclass(frozen=True, slots=True)
class Row:
    """One plan field in one target: ``key`` (a flag, a dotted JSON/YAML path or an env name)."""

    key: str
    get: Getter
    field: str | None  # the Plan field it carries (None: derived, e.g. the global batch)
    read: Callable[[object], Value] | None = None  # target value -> plan value (default: as is)


def _offload_opt(p: Plan) -> str:
    return "cpu" if p.offload in ("optimizer", "optimizer+params") else "none"


def _offload_param(p: Plan) -> str:
    return "cpu" if p.offload == "optimizer+params" else "none"


# ---- the tables ----------------------------------------------------------------------------------

# Environment variables the generic launchers (torchrun, Slurm, Kubernetes, SkyPilot) export for the
# user's training script.
ENV_FIELDS: tuple[Row, ...] = (
    Row("GPUWIZ_DP", lambda p: p.dp, "dp"),
    Row("GPUWIZ_TP", lambda p: p.tp, "tp"),
    Row("GPUWIZ_PP", lambda p: p.pp, "pp"),
    Row("GPUWIZ_CP", lambda p: p.cp, "cp"),
    Row("GPUWIZ_EP", lambda p: p.ep, "ep"),
    Row("GPUWIZ_VP", lambda p: p.vp, "vp"),
    Row("GPUWIZ_ZERO_STAGE", lambda p: p.zero_stage, "zero_stage"),
    Row("GPUWIZ_OFFLOAD", lambda p: p.offload, "offload"),
    Row("GPUWIZ_MICRO_BATCH", lambda p: p.micro_batch, "micro_batch"),
    Row("GPUWIZ_GRAD_ACCUM", lambda p: p.grad_accum, "grad_accum"),
    Row("GPUWIZ_ACTIVATION_CHECKPOINTING", lambda p: p.activation_checkpointing, "activation_checkpointing"),
    Row("GPUWIZ_GLOBAL_BATCH", lambda p: p.global_batch, None),
)

# DeepSpeed ds_config.json (key names checked against DeepSpeed 0.19.8's config classes in the tests).
DEEPSPEED_FIELDS: tuple[Row, ...] = (
    Row("train_micro_batch_size_per_gpu", lambda p: p.micro_batch, "micro_batch"),
    Row("gradient_accumulation_steps", lambda p: p.grad_accum, "grad_accum"),
    Row("train_batch_size", lambda p: p.micro_batch * p.grad_accum * p.dp, None),
    Row("zero_optimization.stage", lambda p: p.zero_stage, "zero_stage"),
    Row("zero_optimization.offload_optimizer.device", _offload_opt, "offload",
        lambda v: "optimizer" if v == "cpu" else "none"),
    Row("zero_optimization.offload_param.device", _offload_param, "offload",
        lambda v: "optimizer+params" if v == "cpu" else "none"),
)

_FSDP_SHARDING = {0: "NO_SHARD", 1: "SHARD_GRAD_OP", 2: "SHARD_GRAD_OP", 3: "FULL_SHARD"}
_FSDP_STAGE = {"NO_SHARD": 0, "SHARD_GRAD_OP": 2, "FULL_SHARD": 3}

# accelerate config YAML, FSDP plugin (accelerate 1.15 key names) ...
ACCELERATE_FSDP_FIELDS: tuple[Row, ...] = (
    Row("num_processes", lambda p: p.dp, "dp"),
    Row("fsdp_config.fsdp_sharding_strategy", lambda p: _FSDP_SHARDING[p.zero_stage], "zero_stage",
        lambda v: _FSDP_STAGE.get(str(v), 0)),
    Row("fsdp_config.fsdp_offload_params", lambda p: p.offload != "none", "offload",
        lambda v: "optimizer+params" if v else "none"),
    Row("fsdp_config.fsdp_activation_checkpointing", lambda p: p.activation_checkpointing != "none",
        "activation_checkpointing", lambda v: "full" if v else "none"),
)
# ... and DeepSpeed plugin
ACCELERATE_DEEPSPEED_FIELDS: tuple[Row, ...] = (
    Row("num_processes", lambda p: p.dp, "dp"),
    Row("deepspeed_config.zero_stage", lambda p: p.zero_stage, "zero_stage"),
    Row("deepspeed_config.offload_optimizer_device", _offload_opt, "offload",
        lambda v: "optimizer" if v == "cpu" else "none"),
    Row("deepspeed_config.offload_param_device", _offload_param, "offload",
        lambda v: "optimizer+params" if v == "cpu" else "none"),
    Row("deepspeed_config.gradient_accumulation_steps", lambda p: p.grad_accum, "grad_accum"),
)

_RECOMPUTE = {"none": None, "selective": "selective", "full": "full"}
_MEGATRON_SHARDING = {2: "optim_grads", 3: "optim_grads_params"}
# Megatron-LM / Megatron-Core options (names checked against Megatron-LM's argument list in the tests).
# A value of True is a bare flag; None or False leaves the option out.
MEGATRON_FIELDS: tuple[Row, ...] = (
    Row("--tensor-model-parallel-size", lambda p: p.tp, "tp"),
    Row("--pipeline-model-parallel-size", lambda p: p.pp, "pp"),
    Row("--context-parallel-size", lambda p: p.cp, "cp"),
    Row("--expert-model-parallel-size", lambda p: p.ep, "ep"),
    Row("--virtual-pipeline-model-parallel-size",
        lambda p: p.vp if p.vp > 1 else 0, "vp", lambda v: int(str(v)) if v else 1),
    Row("--micro-batch-size", lambda p: p.micro_batch, "micro_batch"),
    Row("--global-batch-size", lambda p: p.global_batch, None),
    Row("--sequence-parallel", lambda p: p.tp > 1, None),
    Row("--use-distributed-optimizer", lambda p: p.zero_stage == 1, "zero_stage", lambda v: 1 if v else 0),
    Row("--use-megatron-fsdp", lambda p: p.zero_stage >= 2, None),
    Row("--data-parallel-sharding-strategy", lambda p: _MEGATRON_SHARDING.get(p.zero_stage, ""), "zero_stage",
        lambda v: {"optim_grads": 2, "optim_grads_params": 3}.get(str(v), 0)),
    Row("--recompute-granularity", lambda p: _RECOMPUTE[p.activation_checkpointing] or "",
        "activation_checkpointing", lambda v: str(v) if v in ("full", "selective") else "none"),
    Row("--recompute-method", lambda p: "uniform" if p.activation_checkpointing == "full" else "", None),
    Row("--recompute-num-layers", lambda p: 1 if p.activation_checkpointing == "full" else 0, None),
    Row("--optimizer-cpu-offload", lambda p: p.offload == "optimizer", "offload",
        lambda v: "optimizer" if v else "none"),
)

# SkyPilot accelerator names (`sky show-gpus`) for catalog GPU ids; others fall back to the id.
SKYPILOT_ACCELERATORS = {
    "v100-16gb-sxm2": "V100", "v100-32gb-sxm2": "V100-32GB", "t4": "T4", "a10": "A10", "l4": "L4",
    "l40s": "L40S", "a100-40gb-pcie": "A100", "a100-40gb-sxm": "A100", "a100-80gb-pcie": "A100-80GB",
    "a100-80gb-sxm": "A100-80GB", "h100-pcie": "H100", "h100-sxm": "H100", "h100-nvl": "H100",
    "h200-sxm": "H200", "b200": "B200", "rtx-4090": "RTX4090", "rtx-3090": "RTX3090",
    "rtx-a6000": "RTXA6000", "rtx-6000-ada": "RTX6000-Ada", "mi300x": "MI300X",
}
# SkyPilot cloud names for catalog providers (providers SkyPilot does not drive: no `cloud:` line).
SKYPILOT_CLOUDS = {
    "AWS": "aws", "GCP": "gcp", "Azure": "azure", "Lambda": "lambda", "RunPod": "runpod", "Vast.ai": "vast",
    "OCI": "oci", "Nebius": "nebius", "Paperspace": "paperspace", "Fluidstack": "fluidstack", "Cudo": "cudo",
    "DigitalOcean": "do", "IBM": "ibm", "SCP": "scp", "Hyperbolic": "hyperbolic",
}
# Kubernetes extended-resource name of each vendor's device plugin.
K8S_GPU_RESOURCE = {"nvidia": "nvidia.com/gpu", "amd": "amd.com/gpu", "intel": "habana.ai/gaudi"}

DEFAULT_IMAGE = "nvcr.io/nvidia/pytorch:25.01-py3"  # FILL IN: your training image
MASTER_PORT = 29500
PRE_TIMEOUT_S = 600  # signal the job this long before the time limit, to checkpoint and requeue


# ---- helpers -------------------------------------------------------------------------------------


def table_values(rows: tuple[Row, ...], plan: Plan) -> dict[str, Value]:
    return {r.key: r.get(plan) for r in rows}


def _nest(flat: dict[str, Value]) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in flat.items():
        node = out
        *parents, last = key.split(".")
        for part in parents:
            child = node.setdefault(part, {})
            assert isinstance(child, dict)
            node = child
        node[last] = value
    return out


def _hours(h: float) -> str:
    return f"{h:,.1f} h" + (f" ({h / 24:,.1f} days)" if h >= 48 else "")


def header(job: Job, prefix: str, what: str, fill_in: list[str], extra: list[str] | None = None) -> str:
    """The comment block every generated file starts with."""
    p = job.plan
    lines = [
        f"Generated by gpuwiz from {job.config_name}: {what}.",
        f"gpuwiz assumed: {job.model_name} ({job.family}, {job.method}, {job.precision}) on "
        f"{job.gpus}x {job.gpu_name}, {job.nodes} node(s) x {job.gpus_per_node} GPUs.",
        f"Plan: {p.framework}; dp={p.dp} tp={p.tp} pp={p.pp} ZeRO-{p.zero_stage} offload={p.offload}; "
        f"micro-batch {p.micro_batch} x accumulation {p.grad_accum} x dp {p.dp} = global batch {job.global_batch}; "
        f"activation checkpointing {p.activation_checkpointing}.",
        f"Estimate: {_hours(job.wall_hours)} per run ({job.gpu_hours:,.0f} GPU-hours); upper range "
        f"{_hours(job.upper_hours)} (+{TIME_P90_ERROR:.0%}, the estimator's p90 error).",
    ]
    if job.batch_asked and job.batch_asked != job.global_batch:
        lines.append(f"The config asks for a global batch of {job.batch_asked:,}: {p.replicas} data-parallel replicas "
                     f"cannot split it into whole micro-batches, so these files train {job.global_batch:,} a step "
                     f"(the recommendation's batch-rounded warning). Set training.global_batch to "
                     f"{job.global_batch}, or choose a GPU count whose replicas divide {job.batch_asked:,}.")
    if job.step_time_s:
        lines.append(f"Expected step time ~{job.step_time_s:.2f} s; compare with your first steps "
                     "(`gpuwiz calibrate LOG` turns a log into a calibration: section).")
    lines += extra or []
    lines.append("You must fill in: " + "; ".join(fill_in) + ".")
    return "".join(f"{prefix} {line}\n" for line in lines) + f"{prefix}\n"


def _shell_env(job: Job) -> str:
    vals = table_values(ENV_FIELDS, job.plan)
    return "".join(f"export {k}={v}\n" for k, v in vals.items())


def nccl_env(job: Job) -> dict[str, str]:
    """NCCL settings for the fabric the build has (RDMA/InfiniBand or plain Ethernet)."""
    env = {"NCCL_DEBUG": "WARN"}
    if job.nodes > 1:
        if job.rdma:
            env.update({"NCCL_IB_DISABLE": "0", "NCCL_NET_GDR_LEVEL": "PHB", "NCCL_IB_HCA": "mlx5",
                        "NCCL_SOCKET_IFNAME": "eth0"})
        else:
            env.update({"NCCL_IB_DISABLE": "1", "NCCL_SOCKET_IFNAME": "eth0"})
    return env


def _nccl_shell(job: Job) -> str:
    notes = {"NCCL_IB_HCA": "  # FILL IN: your HCAs (`ibv_devices`)",
             "NCCL_SOCKET_IFNAME": "  # FILL IN: the interface between nodes (`ip -br addr`)"}
    return "".join(f"export {k}={v}{notes.get(k, '')}\n" for k, v in nccl_env(job).items())


def refusal(target: str, job: Job) -> str | None:
    """Why ``target`` cannot run this plan (one line), or None."""
    p = job.plan
    if target not in TARGETS:
        return f"launch: unknown target {target!r} ({', '.join(TARGETS)})"
    model_parallel = p.tp > 1 or p.pp > 1 or p.cp > 1 or p.ep > 1
    dims = f"tp={p.tp}, pp={p.pp}, cp={p.cp}, ep={p.ep}"
    # An adapter fine-tune laid out with model parallelism runs on NeMo's PEFT recipes (Megatron-Core), which
    # gpuwiz does not write; neither the Megatron-LM script nor the data-parallel targets can run it, so neither
    # refusal sends the user to the other.
    adapters_mp = (job.method in ("lora", "qlora") and model_parallel
                   and target in ("megatron", "accelerate", "deepspeed"))
    if adapters_mp:
        return (f"launch --target {target}: the plan is {job.method.upper()} fine-tuning with model parallelism "
                f"({dims}), which runs on NeMo's PEFT recipes (Megatron-Core) and gpuwiz does not write those; "
                "or set training.parallel to tp 1, pp 1, ep 1 (an FSDP / ZeRO plan) for --target accelerate")
    if target == "megatron":
        if not job.is_token_model:
            return (f"launch --target megatron: Megatron-LM trains transformer language models; "
                    f"{job.model_name} is a {job.family} model (use --target torchrun or accelerate)")
        if job.method in ("lora", "qlora"):
            return (f"launch --target megatron: the plan is {job.method.upper()} fine-tuning, which Megatron-LM "
                    "does not do (use --target accelerate, or NeMo's PEFT recipes)")
        if p.offload == "optimizer+params":
            return ("launch --target megatron: the plan offloads parameters to the CPU, which Megatron-LM does not "
                    "do (use --target deepspeed)")
    if target in ("accelerate", "deepspeed") and model_parallel:
        return (f"launch --target {target}: the plan uses tensor/pipeline/context/expert parallelism "
                f"({dims}); use --target megatron")
    if target == "deepspeed" and job.vendor == "intel":
        return "launch --target deepspeed: Gaudi needs Habana's DeepSpeed fork; use --target torchrun"
    return None


def generate(target: str, job: Job) -> list[LaunchFile]:
    """The files for ``target``; GpuwizError (one line) when the target cannot run the plan."""
    why = refusal(target, job)
    if why:
        raise GpuwizError(why)
    return _GENERATORS[target](job)


# ---- torchrun ------------------------------------------------------------------------------------


def _torchrun_cmd(job: Job, nnodes: str, node_rank: str | None, endpoint: str, rdzv_id: str) -> str:
    parts = ["torchrun", f"--nnodes={nnodes}", f"--nproc-per-node={job.gpus_per_node}"]
    if job.nodes == 1 and node_rank is None:
        parts.append("--standalone")
    else:
        parts += ["--rdzv-backend=c10d", f"--rdzv-endpoint={endpoint}", f"--rdzv-id={rdzv_id}"]
        if node_rank is not None:
            parts.append(f"--node-rank={node_rank}")
    parts.append("--max-restarts=3")
    return " \\\n  ".join(parts)


def torchrun(job: Job) -> list[LaunchFile]:
    fill = ["TRAIN_SCRIPT (your training script) and its data paths"]
    if job.nodes > 1:
        fill.append("MASTER_ADDR (the first node's address; run this script on every node)")
    text = "#!/usr/bin/env bash\n" + header(job, "#", "a torchrun launch script", fill,
                                             ["The plan reaches your script as GPUWIZ_* environment variables."])
    text += "set -euo pipefail\n\n"
    text += 'TRAIN_SCRIPT="${TRAIN_SCRIPT:-train.py}"  # FILL IN\n'
    if job.nodes > 1:
        text += 'MASTER_ADDR="${MASTER_ADDR:?set MASTER_ADDR to the address of the first node}"\n'
        text += f'MASTER_PORT="${{MASTER_PORT:-{MASTER_PORT}}}"\n'
        text += 'RDZV_ID="${RDZV_ID:-' + job.slug + '}"\n'
    text += "\n" + _shell_env(job) + _nccl_shell(job) + "\n"
    cmd = _torchrun_cmd(job, str(job.nodes), None, "${MASTER_ADDR}:${MASTER_PORT}", "${RDZV_ID}")
    text += f'exec {cmd} \\\n  "$TRAIN_SCRIPT" "$@"\n'
    return [LaunchFile("launch.sh", text, executable=True)]


# ---- accelerate ----------------------------------------------------------------------------------


def _mixed_precision(job: Job) -> str:
    return {"bf16": "bf16", "fp16": "fp16", "fp8": "fp8"}.get(job.precision, "no")


def accelerate_plugin(plan: Plan) -> str:
    """Which accelerate plugin carries the plan: FSDP for sharded in-GPU plans, DeepSpeed for ZeRO-1
    and optimizer-only offload (FSDP offloads parameters and optimizer together), none for DDP."""
    if plan.offload == "optimizer" or plan.zero_stage == 1:
        return "DEEPSPEED"
    if plan.zero_stage >= 2 or plan.offload == "optimizer+params":
        return "FSDP"
    return "MULTI_GPU" if plan.dp > 1 else "NO"


def accelerate(job: Job) -> list[LaunchFile]:
    p = job.plan
    kind = accelerate_plugin(p)
    cfg: dict[str, object] = {
        "compute_environment": "LOCAL_MACHINE",
        "distributed_type": kind,
        "mixed_precision": _mixed_precision(job),
        "num_machines": job.nodes,
        "num_processes": p.dp,
        "machine_rank": 0,
        "main_training_function": "main",
        "rdzv_backend": "static" if job.nodes == 1 else "c10d",
        "same_network": True,
        "use_cpu": False,
        "debug": False,
    }
    if job.nodes > 1:
        cfg["main_process_ip"] = "FILL-IN.first-node.address"
        cfg["main_process_port"] = MASTER_PORT
    rows: tuple[Row, ...] = ()
    if kind == "FSDP":
        rows = ACCELERATE_FSDP_FIELDS
        cfg["fsdp_config"] = {"fsdp_version": 1, "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
                              "fsdp_state_dict_type": "SHARDED_STATE_DICT", "fsdp_use_orig_params": True,
                              "fsdp_sync_module_states": True, "fsdp_cpu_ram_efficient_loading": True}
    elif kind == "DEEPSPEED":
        rows = ACCELERATE_DEEPSPEED_FIELDS
        cfg["deepspeed_config"] = {"zero3_init_flag": p.zero_stage == 3,
                                   "deepspeed_multinode_launcher": "standard"}
    nested = _nest(table_values(rows, p)) if rows else {}
    for key, value in nested.items():
        if isinstance(value, dict):
            section = cfg.setdefault(key, {})
            assert isinstance(section, dict)
            section.update(value)
        else:
            cfg[key] = value
    extra = [f"accelerate plugin: {kind}"
             + ("" if kind != "FSDP" else "; gradient accumulation: pass gradient_accumulation_steps="
                f"{p.grad_accum} to Accelerator()")]
    if p.activation_checkpointing != "none" and kind != "FSDP":
        extra.append(f"activation checkpointing ({p.activation_checkpointing}): call "
                     "model.gradient_checkpointing_enable() in your script")
    fill = ["your training script (`accelerate launch --config_file accelerate_config.yaml train.py`)"]
    if job.nodes > 1:
        fill.append("main_process_ip, and machine_rank on each node")
    text = header(job, "#", "an accelerate config", fill, extra)
    text += yaml.safe_dump(cfg, sort_keys=False)
    return [LaunchFile("accelerate_config.yaml", text)]


# ---- deepspeed -----------------------------------------------------------------------------------


def ds_config(job: Job) -> dict[str, object]:
    p = job.plan
    cfg = _nest(table_values(DEEPSPEED_FIELDS, p))
    if job.precision in ("bf16", "fp8"):
        cfg["bf16"] = {"enabled": True}
    elif job.precision == "fp16":
        cfg["fp16"] = {"enabled": True, "loss_scale": 0, "initial_scale_power": 16, "loss_scale_window": 1000,
                       "hysteresis": 2, "min_loss_scale": 1}
    zero = cfg["zero_optimization"]
    assert isinstance(zero, dict)
    zero.update({"overlap_comm": True, "contiguous_gradients": True})
    for part in ("offload_optimizer", "offload_param"):
        sect = zero.get(part)
        if isinstance(sect, dict) and sect.get("device") == "cpu":
            sect["pin_memory"] = True
    if p.zero_stage == 3:
        zero["stage3_gather_16bit_weights_on_model_save"] = True
    cfg.update({"gradient_clipping": 1.0, "steps_per_print": 100, "wall_clock_breakdown": False})
    return cfg


def deepspeed(job: Job) -> list[LaunchFile]:
    cfg = ds_config(job)
    p = job.plan
    extra = ["ds_config.json carries no comments (JSON has none): this script's header is its notes.",
             f"train_batch_size {job.global_batch} = micro {p.micro_batch} x accumulation {p.grad_accum} x dp {p.dp}."]
    if job.precision == "fp8":
        extra.append("fp8: ds_config runs bf16; fp8 GEMMs come from Transformer Engine in your model code.")
    if p.activation_checkpointing != "none":
        extra.append(f"activation checkpointing ({p.activation_checkpointing}): enable it in the model "
                     "(model.gradient_checkpointing_enable() or deepspeed.checkpointing).")
    fill = ["TRAIN_SCRIPT and its data paths (it must call deepspeed.initialize(config='ds_config.json'))"]
    if job.nodes > 1:
        fill.append(f"hostfile: one line per node, `HOST slots={job.gpus_per_node}`")
    text = "#!/usr/bin/env bash\n" + header(job, "#", "a DeepSpeed launch script + ds_config.json", fill, extra)
    text += "set -euo pipefail\n\n"
    text += 'TRAIN_SCRIPT="${TRAIN_SCRIPT:-train.py}"  # FILL IN\n'
    text += _nccl_shell(job) + "\n"
    cmd = ["deepspeed", f"--num_nodes={job.nodes}", f"--num_gpus={job.gpus_per_node}"]
    if job.nodes > 1:
        cmd += ["--hostfile=hostfile", f"--master_port={MASTER_PORT}"]
    text += "exec " + " \\\n  ".join(cmd)
    text += ' \\\n  "$TRAIN_SCRIPT" --deepspeed --deepspeed_config ds_config.json "$@"\n'
    files = [LaunchFile("ds_config.json", json.dumps(cfg, indent=2) + "\n"),
             LaunchFile("launch_deepspeed.sh", text, executable=True)]
    if job.nodes > 1:
        hosts = header(job, "#", "a DeepSpeed hostfile", ["one line per node: its address and slots"])
        hosts += "".join(f"node{i + 1:03d} slots={job.gpus_per_node}  # FILL IN\n" for i in range(min(job.nodes, 4)))
        if job.nodes > 4:
            hosts += f"# ... {job.nodes} lines in all\n"
        files.append(LaunchFile("hostfile", hosts))
    return files


# ---- megatron ------------------------------------------------------------------------------------


def megatron_args(job: Job) -> list[str]:
    """The Megatron-LM argument list for the plan (flags and values, in order)."""
    out: list[str] = []
    for key, value in table_values(MEGATRON_FIELDS, job.plan).items():
        if value is True:
            out.append(key)
        elif value is False or value == "" or value == 0:
            continue  # an option the plan does not use
        else:
            out += [key, str(value)]
    if job.precision in ("bf16", "fp8"):
        out.append("--bf16")
    elif job.precision == "fp16":
        out.append("--fp16")
    if job.precision == "fp8":
        out += ["--fp8", "hybrid"]
    if job.seq_len:
        out += ["--seq-length", str(job.seq_len)]
    return out


def megatron(job: Job) -> list[LaunchFile]:
    args = megatron_args(job)
    p = job.plan
    fill = ["MEGATRON (your Megatron-LM checkout)", "the model-shape flags (--num-layers, --hidden-size, ...)",
            "DATA_PATH and TOKENIZER", "CHECKPOINT_DIR (shared storage)"]
    if job.nodes > 1:
        fill.append("MASTER_ADDR; run on every node with NODE_RANK set (or use --target slurm)")
    extra = ["Megatron derives gradient accumulation from the global batch: "
             f"{job.global_batch} / (micro {p.micro_batch} x dp {p.dp}) = {p.grad_accum}."]
    if p.zero_stage >= 2:
        extra.append(f"ZeRO-{p.zero_stage} maps to Megatron FSDP (--use-megatron-fsdp, sharding "
                     f"{_MEGATRON_SHARDING[p.zero_stage]}).")
    text = "#!/usr/bin/env bash\n" + header(job, "#", "a Megatron-LM (Megatron-Core) pre-training launch", fill, extra)
    text += "set -euo pipefail\n\n"
    text += 'MEGATRON="${MEGATRON:-$HOME/Megatron-LM}"  # FILL IN\n'
    text += 'DATA_PATH="${DATA_PATH:?set DATA_PATH to your preprocessed data prefix}"\n'
    text += 'TOKENIZER="${TOKENIZER:?set TOKENIZER to your tokenizer model}"\n'
    text += 'CHECKPOINT_DIR="${CHECKPOINT_DIR:-$PWD/checkpoints}"\n'
    text += f'MASTER_ADDR="${{MASTER_ADDR:-localhost}}"\nMASTER_PORT="${{MASTER_PORT:-{MASTER_PORT}}}"\n'
    text += 'NODE_RANK="${NODE_RANK:-0}"\n'
    text += _nccl_shell(job) + "export CUDA_DEVICE_MAX_CONNECTIONS=1\n\n"
    text += "PARALLEL_ARGS=(\n" + "".join(f"  {a}\n" for a in _pairs(args)) + ")\n"
    text += ("MODEL_ARGS=(  # FILL IN: the model's shape\n  --num-layers 32 --hidden-size 4096 "
             "--num-attention-heads 32\n)\n")
    text += ("IO_ARGS=(\n  --data-path \"$DATA_PATH\" --tokenizer-type HuggingFaceTokenizer "
             "--tokenizer-model \"$TOKENIZER\"\n  --save \"$CHECKPOINT_DIR\" --load \"$CHECKPOINT_DIR\" "
             "--save-interval 1000\n)\n\n")
    text += (f"exec torchrun --nnodes={job.nodes} --nproc-per-node={job.gpus_per_node} --node-rank=\"$NODE_RANK\" \\\n"
             "  --master-addr=\"$MASTER_ADDR\" --master-port=\"$MASTER_PORT\" \\\n"
             "  \"$MEGATRON/pretrain_gpt.py\" \"${PARALLEL_ARGS[@]}\" \"${MODEL_ARGS[@]}\" \"${IO_ARGS[@]}\" \"$@\"\n")
    nemo = header(job, "#", "NeMo 2 recipe overrides (`nemo llm pretrain --factory RECIPE $(grep -v '^#' "
                  "nemo_overrides.txt)`)", ["RECIPE (e.g. llama3_8b)"])
    nemo += "".join(f"{k}={v}\n" for k, v in nemo_overrides(job).items())
    return [LaunchFile("megatron_pretrain.sh", text, executable=True), LaunchFile("nemo_overrides.txt", nemo)]


def nemo_overrides(job: Job) -> dict[str, Value]:
    p = job.plan
    return {
        "trainer.num_nodes": job.nodes,
        "trainer.devices": job.gpus_per_node,
        "trainer.strategy.tensor_model_parallel_size": p.tp,
        "trainer.strategy.pipeline_model_parallel_size": p.pp,
        "trainer.strategy.context_parallel_size": p.cp,
        "trainer.strategy.expert_model_parallel_size": p.ep,
        "trainer.strategy.virtual_pipeline_model_parallel_size": p.vp if p.vp > 1 else "null",
        "trainer.strategy.sequence_parallel": p.tp > 1,
        "data.micro_batch_size": p.micro_batch,
        "data.global_batch_size": job.global_batch,
    }


def _pairs(args: list[str]) -> list[str]:
    """Group ``--flag value`` pairs on one line each."""
    out: list[str] = []
    for a in args:
        if out and not a.startswith("--") and " " not in out[-1]:
            out[-1] += " " + a
        else:
            out.append(a)
    return out


# ---- slurm ---------------------------------------------------------------------------------------


def slurm(job: Job) -> list[LaunchFile]:
    limit, capped = time_limit_hours(job)
    allocations = -(-job.upper_hours // PARTITION_MAX_HOURS) if capped else 1
    extra = [f"Time limit {slurm_time(limit)} = upper range x 1.1 + 30 min"
             + (f", capped at a typical partition maximum of {PARTITION_MAX_HOURS:g} h: the run needs about "
                f"{allocations:.0f} allocations, chained by --requeue and checkpoint-resume" if capped else ""),
             f"Total: {_hours(job.upper_hours)} at the upper range, {job.gpus} GPUs "
             f"({job.gpus * job.upper_hours:,.0f} GPU-hours).",
             f"CPUs per task: the build's {job.cpu_cores_per_node} cores per node (one task per node runs torchrun).",
             f"Pre-timeout: Slurm sends USR1 {PRE_TIMEOUT_S} s before the limit; the handler requeues the job, "
             "which resumes from CHECKPOINT_DIR."]
    fill = ["--partition and --account", "TRAIN_SCRIPT and its data paths",
            "CHECKPOINT_DIR on shared storage; your script saves there and resumes when GPUWIZ_RESUME=1"]
    if job.nodes > 1:
        fill.append("NCCL_SOCKET_IFNAME" + (" and NCCL_IB_HCA" if job.rdma else ""))
    text = "#!/bin/bash\n" + header(job, "#", "a Slurm batch script (srun + torchrun)", fill, extra)
    directives = [
        ("job-name", job.slug), ("nodes", str(job.nodes)), ("ntasks-per-node", "1"),
        ("gpus-per-node", str(job.gpus_per_node)), ("cpus-per-task", str(max(1, job.cpu_cores_per_node))),
        ("time", slurm_time(limit)), ("requeue", None), ("signal", f"B:USR1@{PRE_TIMEOUT_S}"),
        ("open-mode", "append"), ("output", "%x-%j.out"), ("exclusive", None),
        ("partition", "FILL-IN"), ("account", "FILL-IN"),
    ]
    text += "".join(f"#SBATCH --{k}" + (f"={v}" if v is not None else "") + "\n" for k, v in directives)
    text += "\nset -euo pipefail\n\n"
    text += 'TRAIN_SCRIPT="${TRAIN_SCRIPT:-train.py}"  # FILL IN\n'
    text += 'export CHECKPOINT_DIR="${CHECKPOINT_DIR:-$SLURM_SUBMIT_DIR/checkpoints}"  # FILL IN: shared storage\n'
    text += 'mkdir -p "$CHECKPOINT_DIR"\n'
    text += ('if [ -n "$(ls -A "$CHECKPOINT_DIR" 2>/dev/null)" ]; then export GPUWIZ_RESUME=1; '
             "else export GPUWIZ_RESUME=0; fi\n\n")
    text += _shell_env(job) + _nccl_shell(job) + "\n"
    text += ('MASTER_ADDR="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)"\n'
             f"MASTER_PORT={MASTER_PORT}\n\n")
    text += ("requeue() {\n"
             "  echo \"gpuwiz: time limit near; requeueing $SLURM_JOB_ID (resumes from $CHECKPOINT_DIR)\"\n"
             "  kill -TERM \"$SRUN_PID\" 2>/dev/null || true  # let the script save a checkpoint\n"
             "  wait \"$SRUN_PID\" || true\n  scontrol requeue \"$SLURM_JOB_ID\"\n}\ntrap requeue USR1\n\n")
    # No --node-rank: $SLURM_NODEID would expand here, in the batch shell, to 0 on every node; the c10d
    # rendezvous assigns node ranks itself.
    cmd = _torchrun_cmd(job, "$SLURM_NNODES", None, "$MASTER_ADDR:$MASTER_PORT", "$SLURM_JOB_ID")
    text += "srun --kill-on-bad-exit=1 " + cmd.replace("\n  ", "\n    ") + ' \\\n    "$TRAIN_SCRIPT" &\n'
    text += 'SRUN_PID=$!\nwait "$SRUN_PID"\n'
    return [LaunchFile("job.sbatch", text, executable=True)]


# ---- kubernetes ----------------------------------------------------------------------------------


def _k8s_env(job: Job) -> list[dict[str, str]]:
    env = {k: str(v) for k, v in table_values(ENV_FIELDS, job.plan).items()}
    env.update(nccl_env(job))
    return [{"name": k, "value": v} for k, v in env.items()]


def _k8s_resources(job: Job) -> dict[str, dict[str, object]]:
    res = K8S_GPU_RESOURCE.get(job.vendor, "nvidia.com/gpu")
    cpu = max(1, job.cpu_cores_per_node - 2)  # leave two cores to the kubelet and system daemons
    mem = max(8, int(job.ram_gb_per_node * 0.8))
    return {"limits": {res: job.gpus_per_node}, "requests": {res: job.gpus_per_node, "cpu": cpu, "memory": f"{mem}G"}}


def _shm() -> tuple[dict[str, object], dict[str, object]]:
    return ({"name": "dshm", "mountPath": "/dev/shm"}, {"name": "dshm", "emptyDir": {"medium": "Memory"}})


def kubernetes(job: Job) -> list[LaunchFile]:
    name = job.slug
    mount, vol = _shm()
    cmd = ["torchrun", "train.py"]  # the runtime sets --nnodes/--nproc-per-node/rendezvous
    runtime = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainingRuntime",
        "metadata": {"name": f"{name}-runtime", "labels": {"trainer.kubeflow.org/framework": "torch"}},
        "spec": {
            "mlPolicy": {"numNodes": job.nodes, "torch": {}},
            "template": {"spec": {"replicatedJobs": [{
                "name": "node",
                "template": {
                    "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                    "spec": {"template": {"spec": {
                        "containers": [{"name": "node", "image": DEFAULT_IMAGE, "volumeMounts": [mount]}],
                        "volumes": [vol]}}}}}]}},
        },
    }
    trainjob = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {
            "runtimeRef": {"name": f"{name}-runtime", "kind": "TrainingRuntime"},
            "trainer": {"image": DEFAULT_IMAGE, "command": cmd, "numNodes": job.nodes,
                        "numProcPerNode": job.gpus_per_node, "resourcesPerNode": _k8s_resources(job),
                        "env": _k8s_env(job)},
        },
    }
    fill = ["the image (with your training code) and the command", "a PersistentVolumeClaim for data and checkpoints"]
    extra = ["Kubeflow Trainer v2: a TrainingRuntime (shared memory for the data loaders) and a TrainJob that uses it.",
             "/dev/shm: an in-memory emptyDir (the container default of 64 MB breaks PyTorch data loaders)."]
    t2 = header(job, "#", "a Kubeflow Trainer v2 TrainJob", fill, extra)
    t2 += yaml.safe_dump_all([runtime, trainjob], sort_keys=False)

    def replica(n: int) -> dict[str, object]:
        return {"replicas": n, "restartPolicy": "OnFailure", "template": {"spec": {
            "containers": [{"name": "pytorch", "image": DEFAULT_IMAGE, "command": cmd,
                            "resources": _k8s_resources(job), "env": _k8s_env(job), "volumeMounts": [mount]}],
            "volumes": [vol]}}}

    specs: dict[str, object] = {"Master": replica(1)}
    if job.nodes > 1:
        specs["Worker"] = replica(job.nodes - 1)
    pytorchjob = {
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": name},
        "spec": {"nprocPerNode": str(job.gpus_per_node), "runPolicy": {"cleanPodPolicy": "None"},
                 "pytorchReplicaSpecs": specs},
    }
    t1 = header(job, "#", "a Kubeflow Training Operator v1 PyTorchJob (clusters that still run v1)", fill,
                [f"One Master + {job.nodes - 1} Worker pod(s), {job.gpus_per_node} GPUs each; /dev/shm in memory."])
    t1 += yaml.safe_dump(pytorchjob, sort_keys=False)
    return [LaunchFile("trainjob.yaml", t2), LaunchFile("pytorchjob.yaml", t1)]


# ---- skypilot ------------------------------------------------------------------------------------


def skypilot_accelerator(gpu: str) -> str:
    return SKYPILOT_ACCELERATORS.get(gpu, gpu.upper())


def skypilot(job: Job) -> list[LaunchFile]:
    acc = f"{skypilot_accelerator(job.gpu)}:{job.gpus_per_node}"
    resources: dict[str, object] = {"accelerators": acc}
    cloud = SKYPILOT_CLOUDS.get(job.provider) if job.renting else None
    if cloud:
        resources["cloud"] = cloud
        if job.region and cloud not in ("vast",):
            resources["region"] = job.region
    use_spot = bool(job.renting and job.spot_usd_per_run is not None and job.on_demand_usd_per_run is not None
                    and job.spot_usd_per_run < job.on_demand_usd_per_run)
    resources["use_spot"] = use_spot
    env = {k: str(v) for k, v in table_values(ENV_FIELDS, job.plan).items()}
    env.update(nccl_env(job))
    run = (
        'MASTER_ADDR=$(echo "$SKYPILOT_NODE_IPS" | head -n1)\n'
        "torchrun --nnodes=$SKYPILOT_NUM_NODES --nproc-per-node=$SKYPILOT_NUM_GPUS_PER_NODE "
        f"--node-rank=$SKYPILOT_NODE_RANK --master-addr=$MASTER_ADDR --master-port={MASTER_PORT} train.py\n"
    )
    task = {"name": job.slug, "num_nodes": job.nodes, "resources": resources, "envs": env,
            "workdir": ".", "setup": "pip install -r requirements.txt  # FILL IN\n", "run": run}
    where = (f"{job.provider} {job.instance} ({job.region})" if job.renting else
             "any cloud SkyPilot finds (gpuwiz's verdict was to own the hardware)")
    extra = [f"Chosen offer: {where}; {'spot' if use_spot else 'on-demand'}"
             + (f" (spot ${job.spot_usd_per_run:,.0f} vs on-demand ${job.on_demand_usd_per_run:,.0f} per run)"
                if job.spot_usd_per_run is not None and job.on_demand_usd_per_run is not None else "") + ".",
             f"Duration: {_hours(job.wall_hours)} estimated, {_hours(job.upper_hours)} upper range. A task YAML has "
             "no duration field: sky_launch.py passes it to SkyPilot (Task.set_time_estimator) so the optimizer "
             "prices the whole job, not one hour."]
    if use_spot:
        extra.append("Spot: preemptions restart the job; save checkpoints to a bucket and resume from them.")
    fill = ["setup (install your code) and the run command's train.py",
            "file_mounts / storage for data and checkpoints"]
    text = header(job, "#", "a SkyPilot task", fill, extra) + yaml.safe_dump(task, sort_keys=False)
    hours = {skypilot_accelerator(job.gpu): job.wall_hours}
    launcher = header(job, "#", "a SkyPilot launcher that tells the optimizer how long the job runs",
                      ["the cluster name, if you want another"])
    launcher += f'''"""Launch task.yaml with gpuwiz's time estimate (SkyPilot otherwise prices one hour)."""

import sky

# Hours per run on {job.gpus}x {job.gpu_name} (gpuwiz's estimate); other accelerators scale by peak
# throughput only if you add them here.
HOURS = {json.dumps(hours)}
FALLBACK_HOURS = {job.upper_hours:.2f}  # the upper range, for accelerators gpuwiz did not estimate


def estimate_seconds(resources: "sky.Resources") -> float:
    names = list((resources.accelerators or {{}}).keys())
    return 3600.0 * (HOURS.get(names[0], FALLBACK_HOURS) if names else FALLBACK_HOURS)


if __name__ == "__main__":
    task = sky.Task.from_yaml("task.yaml")
    task.set_time_estimator(estimate_seconds)
    sky.launch(task, cluster_name="{job.slug}")
'''
    return [LaunchFile("task.yaml", text), LaunchFile("sky_launch.py", launcher)]


_GENERATORS: dict[str, Callable[[Job], list[LaunchFile]]] = {
    "torchrun": torchrun, "accelerate": accelerate, "deepspeed": deepspeed, "megatron": megatron,
    "slurm": slurm, "kubernetes": kubernetes, "skypilot": skypilot,
}
