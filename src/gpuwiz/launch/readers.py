"""Read a DeepSpeed / accelerate / Megatron config back into plan fields (the same tables, backwards).

``read_*`` return ``{plan field: value}`` for the fields the target carries; ``expected(rows, plan)``
gives the same dict from a Plan, so ``read_x(generated) == expected(...)`` is the round trip. The
readers take text a user may have edited: malformed input is a one-line GpuwizError.
"""

from __future__ import annotations

import json
import shlex

import yaml

from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.models import Plan
from gpuwiz.launch.targets import (
    ACCELERATE_DEEPSPEED_FIELDS,
    ACCELERATE_FSDP_FIELDS,
    DEEPSPEED_FIELDS,
    MEGATRON_FIELDS,
    Row,
    Value,
)

# Fields several rows carry (offload: optimizer and params) merge to the strongest reading.
_ORDER: dict[str, tuple[Value, ...]] = {
    "offload": ("none", "optimizer", "optimizer+params"),
    "zero_stage": (0, 1, 2, 3),
    "activation_checkpointing": ("none", "selective", "full"),
}


def _merge(out: dict[str, Value], field: str, value: Value) -> None:
    order = _ORDER.get(field)
    if (field in out and order is not None and value in order and out[field] in order
            and order.index(value) <= order.index(out[field])):
        return
    out[field] = value


def expected(rows: tuple[Row, ...], plan: Plan) -> dict[str, Value]:
    """What a reader of ``rows`` should give back for ``plan`` (fields the target can carry)."""
    out: dict[str, Value] = {}
    for r in rows:
        if r.field is None:
            continue
        raw = r.get(plan)
        _merge(out, r.field, r.read(raw) if r.read else raw)
    return out


def _lookup(data: object, dotted: str) -> object:
    node = data
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _read_rows(rows: tuple[Row, ...], data: object, name: str) -> dict[str, Value]:
    out: dict[str, Value] = {}
    for r in rows:
        if r.field is None:
            continue
        raw = _lookup(data, r.key)
        if raw is None:
            if r.read is not None:  # an absent option reads as "not used"
                _merge(out, r.field, r.read(None))
            continue
        if not isinstance(raw, (int, str, bool, float)):
            raise GpuwizError(f"{name}: {r.key}: expected a value, got {type(raw).__name__}")
        _merge(out, r.field, r.read(raw) if r.read else raw)
    return out


def read_deepspeed(text: str, name: str = "ds_config.json") -> dict[str, Value]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GpuwizError(f"{name}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise GpuwizError(f"{name}: expected a JSON object")
    out = _read_rows(DEEPSPEED_FIELDS, data, name)
    tbs, mb, ga = data.get("train_batch_size"), out.get("micro_batch"), out.get("grad_accum")
    if isinstance(tbs, int) and isinstance(mb, int) and isinstance(ga, int) and mb * ga > 0:
        if tbs % (mb * ga):
            raise GpuwizError(f"{name}: train_batch_size {tbs} is not micro-batch {mb} x accumulation {ga} x dp")
        out["dp"] = tbs // (mb * ga)
    return out


def read_accelerate(text: str, name: str = "accelerate_config.yaml") -> dict[str, Value]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise GpuwizError(f"{name}: not valid YAML: {' '.join(str(exc).split())}") from None
    if not isinstance(data, dict):
        raise GpuwizError(f"{name}: expected a mapping")
    kind = data.get("distributed_type")
    if kind == "FSDP":
        return _read_rows(ACCELERATE_FSDP_FIELDS, data, name)
    if kind == "DEEPSPEED":
        return _read_rows(ACCELERATE_DEEPSPEED_FIELDS, data, name)
    procs = data.get("num_processes")
    return {"dp": procs if isinstance(procs, int) else 1, "zero_stage": 0, "offload": "none"}


def megatron_tokens(text: str) -> list[str]:
    """The options inside the launch script's PARALLEL_ARGS=( ... ) array."""
    start = text.find("PARALLEL_ARGS=(")
    end = text.find(")", start)
    if start < 0 or end < 0:
        raise GpuwizError("megatron_pretrain.sh: no PARALLEL_ARGS=( ... ) array")
    body = "\n".join(line.split("#", 1)[0] for line in text[start + len("PARALLEL_ARGS=("):end].splitlines())
    try:
        return shlex.split(body)
    except ValueError as exc:
        raise GpuwizError(f"megatron_pretrain.sh: PARALLEL_ARGS: {exc}") from None


def read_megatron(text: str, world_size: int) -> dict[str, Value]:
    """Plan fields from the Megatron argument list; dp and accumulation follow from the world size."""
    toks = megatron_tokens(text)
    opts: dict[str, object] = {}
    i = 0
    while i < len(toks):
        key = toks[i]
        if i + 1 < len(toks) and not toks[i + 1].startswith("--"):
            opts[key] = toks[i + 1]
            i += 2
        else:
            opts[key] = True
            i += 1
    out: dict[str, Value] = {}
    for r in MEGATRON_FIELDS:
        if r.field is None:
            continue
        raw = opts.get(r.key)
        if raw is None:
            if r.read is not None:
                _merge(out, r.field, r.read(None))
            continue
        value: Value = raw if isinstance(raw, (bool, str)) else str(raw)
        if r.read is None and isinstance(value, str) and value.isdigit():
            value = int(value)
        _merge(out, r.field, r.read(value) if r.read else value)
    tp, pp, cp, mb = out.get("tp", 1), out.get("pp", 1), out.get("cp", 1), out.get("micro_batch", 1)
    gb = opts.get("--global-batch-size")
    if (isinstance(tp, int) and isinstance(pp, int) and isinstance(cp, int) and isinstance(mb, int)
            and isinstance(gb, str) and gb.isdigit()):
        dp = max(1, world_size // (tp * pp))  # gpuwiz's Plan.dp includes the context-parallel group
        out["dp"] = dp
        out["grad_accum"] = max(1, int(gb) // (mb * max(1, dp // cp)))
    return out
