"""Form fields of the step screens, and how one edited field becomes new Requirements.

Each field names a path into ``Requirements`` (``("training", "method")``). An edit is applied to
a plain dict copy of the current (last valid) requirements and validated as a whole with
``Requirements.model_validate``; on failure the pydantic message for that path comes back and the
requirements stay as they were. Fields are independent: an invalid field never blocks another.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from pydantic import ValidationError

from gpuwiz.core import models as m
from gpuwiz.core.whatif import fmt_human, fmt_plain
from gpuwiz.tui.stepnames import STEP_IDS, STEP_TITLES

__all__ = ["STEPS", "STEP_IDS", "STEP_TITLES", "FieldSpec", "StepSpec", "apply_edit", "display", "get_value"]

Path_t = tuple[str, ...]
NONE = "__none__"  # Select value standing for "unset / automatic"


@dataclass(frozen=True)
class FieldSpec:
    path: Path_t
    label: str
    kind: Literal["text", "select"] = "text"
    placeholder: str = ""
    options: tuple[tuple[str, str], ...] = ()  # (label, value) for selects
    optional: bool = True  # selects: offer "auto"/"unset"
    none_label: str = "auto"
    bytes_unit: bool = False  # numbers shown without K/M/B suffixes (those mean bytes here)
    help: str = ""

    @property
    def id(self) -> str:
        return "f-" + "-".join(self.path).replace("_", "-")


@dataclass(frozen=True)
class StepSpec:
    id: str
    title: str
    intro: str
    fields: tuple[FieldSpec, ...] = field(default_factory=tuple)


def _lit(t: Any) -> tuple[tuple[str, str], ...]:
    return tuple((str(v), str(v)) for v in get_args(t))


YES_NO = (("no", "false"), ("yes", "true"))

MODEL_STEP = StepSpec(
    "model", "Model", "What do you train? Pick a preset, or describe the architecture.",
    (
        FieldSpec(("model", "preset"), "Preset", "select", none_label="custom (fields below)"),
        FieldSpec(("model", "hf_config"), "HF config.json", placeholder="path to a Hugging Face config.json"),
        FieldSpec(("model", "params_b"), "Params (B)", placeholder="billions, e.g. 7 or 70"),
        FieldSpec(("model", "family"), "Family", "select", options=_lit(m.Family)),
        FieldSpec(("model", "layers"), "Layers", placeholder="e.g. 32"),
        FieldSpec(("model", "hidden"), "Hidden size", placeholder="e.g. 4096"),
        FieldSpec(("model", "seq_len"), "Sequence length", placeholder="tokens, e.g. 4096"),
        FieldSpec(("training", "method"), "Method", "select", options=_lit(m.Method), optional=False),
        FieldSpec(("training", "precision"), "Precision", "select", options=_lit(m.Precision), optional=False),
        FieldSpec(("training", "optimizer"), "Optimizer", "select", options=_lit(m.Optimizer), optional=False),
        FieldSpec(("training", "micro_batch"), "Micro batch", placeholder="auto"),
        FieldSpec(("training", "global_batch"), "Global batch", placeholder="auto (sequences/samples)"),
        FieldSpec(("training", "activation_checkpointing"), "Checkpointing", "select", options=_lit(m.Checkpointing)),
        FieldSpec(("training", "lora_rank"), "LoRA rank", placeholder="16"),
    ),
)

DATA_STEP = StepSpec(
    "data", "Data", "How much data, and how many passes over it?",
    (
        FieldSpec(("data", "tokens"), "Tokens", placeholder="e.g. 2T, 500B, 20M"),
        FieldSpec(("data", "samples"), "Samples", placeholder="images/clips, e.g. 1.28M"),
        FieldSpec(("data", "epochs"), "Epochs", placeholder="1"),
        FieldSpec(("data", "dataset_gb"), "Dataset size (GB)", placeholder="e.g. 150 or 2 TB", bytes_unit=True),
        FieldSpec(("data", "sample_kb"), "Sample size (KB)", placeholder="e.g. 110", bytes_unit=True),
    ),
)

SCHEDULE_STEP = StepSpec(
    "schedule", "Schedule", "How often do you train, and by when must a run finish?",
    (
        FieldSpec(("schedule", "runs_per_month"), "Runs per month", placeholder="1"),
        FieldSpec(("schedule", "deadline_days"), "Deadline (days)", placeholder="none"),
    ),
)

DEPLOY_STEP = StepSpec(
    "deploy", "Deploy", "Rent or buy, and the constraints around it.",
    (
        FieldSpec(("deployment", "mode"), "Rent or buy", "select", options=_lit(m.DeployMode), optional=False),
        FieldSpec(("deployment", "objective"), "Optimise for", "select", options=_lit(m.Objective), optional=False),
        FieldSpec(("deployment", "budget_usd"), "Budget (USD)", placeholder="none, e.g. 250K"),
        FieldSpec(("deployment", "horizon_years"), "Horizon (years)", placeholder="3"),
        FieldSpec(("deployment", "electricity_usd_per_kwh"), "Electricity $/kWh", placeholder="catalog default"),
        FieldSpec(("deployment", "country"), "Country", placeholder="US"),
        FieldSpec(("deployment", "data_sensitivity"), "Data sensitivity", "select", options=_lit(m.Sensitivity),
                  optional=False),
        FieldSpec(("deployment", "site"), "Site", "select", options=_lit(m.Site), optional=False),
        FieldSpec(("deployment", "used_hardware"), "Used hardware", "select", options=YES_NO, optional=False),
        FieldSpec(("deployment", "require_cuda"), "CUDA only", "select", options=YES_NO, optional=False),
        FieldSpec(("hardware", "gpu"), "Pin GPU", "select"),
        FieldSpec(("hardware", "count"), "Pin GPU count", placeholder="auto"),
    ),
)

STEPS: tuple[StepSpec, ...] = (MODEL_STEP, DATA_STEP, SCHEDULE_STEP, DEPLOY_STEP)
assert (*tuple(s.id for s in STEPS), "result") == STEP_IDS


def get_value(req: m.Requirements, path: Path_t) -> Any:
    node: Any = req
    for part in path:
        if node is None:
            return None
        node = getattr(node, part)
    return node


def display(spec: FieldSpec, value: Any) -> str:
    """The text an Input shows, or the value a Select holds, for a requirement value."""
    if spec.kind == "select":
        if value is None:
            return NONE
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return fmt_plain(value) if spec.bytes_unit else fmt_human(value)
    return str(value)


def _set(data: dict[str, Any], path: Path_t, value: Any, unset: bool) -> None:
    node = data
    for part in path[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    if unset:
        node.pop(path[-1], None)
    else:
        node[path[-1]] = value
    # an all-empty optional section goes back to None (keeps saved configs minimal)
    if len(path) == 2 and path[0] in ("hardware", "calibration"):
        section = data.get(path[0])
        if isinstance(section, dict) and all(v is None for v in section.values()):
            data[path[0]] = None


def _error_for(exc: ValidationError, path: Path_t) -> str:
    errors = exc.errors()
    for err in errors:
        loc = tuple(str(p) for p in err["loc"])
        if loc[: len(path)] == path:
            return _clean(err["msg"])
    return _clean(errors[0]["msg"]) if errors else "invalid value"


def _clean(msg: str) -> str:
    msg = msg.removeprefix("Value error, ")
    return msg[:1].lower() + msg[1:] if msg else msg


def apply_edit(req: m.Requirements, spec: FieldSpec, raw: str) -> tuple[m.Requirements | None, str | None]:
    """(new requirements, None) or (None, why the value is not accepted)."""
    raw = raw.strip()
    unset = raw == "" or raw == NONE
    value: Any = raw
    if spec.kind == "select" and raw in ("true", "false"):
        value = raw == "true"
    data = req.model_dump()
    _set(data, spec.path, value, unset)
    try:
        return m.Requirements.model_validate(data), None
    except ValidationError as exc:
        return None, _error_for(exc, spec.path)
