"""Form fields of the step screens, and how one edited field becomes new Requirements.

A field is one declarative line: ``F("training.method", "Method", "help")``. Everything else comes
from the pydantic schema: a ``Literal`` becomes a dropdown offering exactly its values, a ``bool``
a yes/no dropdown, an optional field gets an "auto"/"unset" choice, and a field's default is shown
as the placeholder of an empty input (so typing replaces it). Adding a config key to the wizard is
adding one ``F(...)`` to a step below.

An edit is applied to a plain dict copy of the current (last valid) requirements and validated as a
whole with ``Requirements.model_validate``; on failure a message in words comes back and the
requirements stay as they were. Fields are independent: an invalid field never blocks another.
"""

from __future__ import annotations

import re
import types
from collections.abc import Collection
from dataclasses import KW_ONLY, dataclass, field
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from gpuwiz.core import models as m
from gpuwiz.core.whatif import fmt_human, fmt_plain
from gpuwiz.i18n import N_, _
from gpuwiz.tui.stepnames import STEP_IDS, STEP_TITLES

__all__ = [
    "STEPS",
    "STEP_IDS",
    "STEP_TITLES",
    "F",
    "FieldSpec",
    "StepSpec",
    "all_fields",
    "apply_edit",
    "display",
    "get_value",
    "literal_values",
    "schema_field",
]

Path_t = tuple[str, ...]
NONE = "__none__"  # Select value standing for "unset / automatic"
YES_NO = ((N_("no"), "false"), (N_("yes"), "true"))
_SHOWN_WORDS = (N_("auto"), N_("unset"))  # none_label defaults: translated where shown


def _unwrap_optional(ann: Any) -> tuple[Any, bool]:
    """(the annotation without ``None`` and ``Annotated``, whether ``None`` was allowed)."""
    optional = False
    if get_origin(ann) in (Union, types.UnionType):
        args = [a for a in get_args(ann) if a is not type(None)]
        if len(args) == 1:
            ann, optional = args[0], len(args) < len(get_args(ann))
    if get_origin(ann) is Annotated:
        ann = get_args(ann)[0]
    return ann, optional


def schema_field(path: Path_t) -> Any:
    """The pydantic FieldInfo of ``path`` in ``Requirements`` (KeyError for an unknown path)."""
    model: type[BaseModel] = m.Requirements
    for part in path[:-1]:
        inner, _ = _unwrap_optional(model.model_fields[part].annotation)
        if not (isinstance(inner, type) and issubclass(inner, BaseModel)):
            raise KeyError(path)
        model = inner
    return model.model_fields[path[-1]]


def literal_values(path: Path_t) -> tuple[Any, ...] | None:
    """The values the schema allows at ``path`` when it is a Literal (None otherwise)."""
    inner, _ = _unwrap_optional(schema_field(path).annotation)
    if get_origin(inner) is Literal:
        return get_args(inner)
    return None


@dataclass(frozen=True)
class FieldSpec:
    path: Path_t
    label: str
    help: str = ""  # one line under the focused field: meaning, unit, example
    _: KW_ONLY
    kind: Literal["text", "select"] = "text"
    placeholder: str = ""
    options: tuple[tuple[str, str], ...] = ()  # (label, value) for selects
    optional: bool = True  # selects: offer "auto"/"unset"
    none_label: str = "auto"
    source: Literal["", "presets", "gpus"] = ""  # selects filled from the catalog
    bytes_unit: bool = False  # numbers shown without K/M/B suffixes (those mean bytes here)
    integer: bool = False  # a whole-number field: shown as 2,048 (not 2.048K)
    default: Any = None  # the schema's default (shown as placeholder, never typed into the input)
    parse: Literal["", "schedule", "list", "have"] = ""  # a field-specific reading of the typed text

    @property
    def id(self) -> str:
        return "f-" + "-".join(self.path).replace("_", "-")


def F(dotted: str, label: str, help: str = "", *, placeholder: str = "", none_label: str = "auto",
      source: Literal["", "presets", "gpus"] = "",
      parse: Literal["", "schedule", "list", "have"] = "") -> FieldSpec:
    """One form field, its kind, options and default derived from the schema at ``dotted``."""
    path = tuple(dotted.split("."))
    info = schema_field(path)
    inner, optional = _unwrap_optional(info.annotation)
    default = info.get_default(call_default_factory=True)
    bytes_unit = path[-1].endswith(("_gb", "_kb"))
    if source:
        return FieldSpec(path, label, help, kind="select", optional=optional, none_label=none_label, source=source,
                         default=default)
    if get_origin(inner) is Literal:
        opts = tuple((str(v), str(v)) for v in get_args(inner))
        return FieldSpec(path, label, help, kind="select", options=opts, optional=optional, none_label=none_label,
                         default=default)
    if inner is bool:
        return FieldSpec(path, label, help, kind="select", options=YES_NO, optional=optional, default=default)
    integer = inner is int
    if not placeholder:
        placeholder = N_("none") if default is None else _plain(default, bytes_unit, integer)
    elif default is not None and default != ():  # (an empty list's default is the placeholder's "none")
        placeholder = f"{placeholder} (default {_plain(default, bytes_unit, integer)})"
    return FieldSpec(path, label, help, placeholder=placeholder, bytes_unit=bytes_unit, integer=integer,
                     default=default, parse=parse)


def _plain(v: Any, bytes_unit: bool, integer: bool = False) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, list):
        return ", ".join(str(x) for x in v)
    if integer and isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, (int, float)):
        return fmt_plain(v) if bytes_unit else fmt_human(v)
    return str(v)


def shown_placeholder(spec: FieldSpec) -> str:
    """The placeholder in the interface language (``e.g. 7 (default 1)`` is translated in parts)."""
    head, sep, tail = spec.placeholder.partition(" (default ")
    if not sep:
        return _(head)
    return _("{text} (default {value})").format(text=_(head), value=tail.removesuffix(")"))


@dataclass(frozen=True)
class StepSpec:
    id: str
    title: str
    intro: str
    fields: tuple[FieldSpec, ...] = field(default_factory=tuple)


MODEL_STEP = StepSpec(
    "model", "Model", "What do you train? Pick a preset, or describe the architecture.",
    (
        F("model.preset", "Preset", "a known model; its layers, hidden size and sequence length fill in",
          source="presets", none_label="custom (fields below)"),
        F("model.hf_config", "HF config.json", "path to a Hugging Face config.json, e.g. ./llama/config.json",
          placeholder="path to a Hugging Face config.json"),
        F("model.params_b", "Params (B)", "parameters in billions, e.g. 7 or 70", placeholder="e.g. 7 or 70"),
        F("model.family", "Family", "the architecture kind; decoder = GPT/Llama-style"),
        F("model.layers", "Layers", "transformer blocks, e.g. 32", placeholder="e.g. 32"),
        F("model.hidden", "Hidden size", "width of the model, e.g. 4096", placeholder="e.g. 4096"),
        F("model.seq_len", "Sequence length", "tokens per sample, e.g. 4096 or 8K", placeholder="e.g. 4096"),
        F("model.mlp", "MLP", "feed-forward kind: swiglu (Llama, Mistral, Qwen), geglu (Gemma), gelu (GPT-2, BERT)"),
        F("training.method", "Method", "pretrain from scratch, full fine-tune, LoRA or QLoRA adapters"),
        F("training.precision", "Precision", "number format of the training maths; bf16 is the usual choice"),
        F("training.optimizer", "Optimizer", "AdamW keeps 2 states per parameter, SGD one, 8-bit AdamW less"),
        F("training.micro_batch", "Micro batch", "sequences per GPU per step; empty = gpuwiz picks",
          placeholder="auto"),
        F("training.global_batch", "Global batch", "sequences (or samples) per optimizer step; empty = auto",
          placeholder="auto"),
        F("training.activation_checkpointing", "Checkpointing",
          "recompute activations to save memory: none, selective or full"),
        F("training.lora_rank", "LoRA rank", "rank of the LoRA adapters (LoRA/QLoRA only), e.g. 16"),
        F("training.stack", "Software stack", "the training software; auto = what the plan needs (said in the result)"),
        F("training.parallel.cp", "Context parallel", "split each long sequence over this many GPUs; empty = 1",
          placeholder="auto"),
        F("training.parallel.ep", "Expert parallel", "spread MoE experts over this many GPUs; empty = 1",
          placeholder="auto"),
        F("training.parallel.vp", "Virtual stages", "interleaved pipeline stages per GPU (Megatron); empty = 1",
          placeholder="auto"),
    ),
)

DATA_STEP = StepSpec(
    "data", "Data", "How much data, and how many passes over it?",
    (
        F("data.tokens", "Tokens", "training tokens per epoch, at least 1; e.g. 2T, 500B, 20M",
          placeholder="e.g. 2T, 500B, 20M"),
        F("data.samples", "Samples", "images/clips per epoch (vision/speech), e.g. 1.28M",
          placeholder="e.g. 1.28M"),
        F("data.epochs", "Epochs", "passes over the data, e.g. 1 or 3"),
        F("data.dataset_gb", "Dataset size (GB)", "size on disk in GB; '2 TB' is read as 2000",
          placeholder="e.g. 150 or 2 TB"),
        F("data.sample_kb", "Sample size (KB)", "average size of one sample in KB, e.g. 110",
          placeholder="e.g. 110"),
    ),
)

SCHEDULE_STEP = StepSpec(
    "schedule", "Schedule", "How often do you train, and by when must a run finish?",
    (
        F("schedule.runs_per_month", "Runs per month",
          "a number, or: once (one run over the horizon), daily, weekly, 3 per month", parse="schedule",
          placeholder="1, once, weekly, daily, 3 per month"),
        F("schedule.deadline_days", "Deadline (days)", "a run must finish within this many days; empty = none",
          placeholder="none"),
    ),
)

DEPLOY_STEP = StepSpec(
    "deploy", "Deploy", "Rent or buy, and the constraints around it.",
    (
        F("deployment.mode", "Rent or buy", "rent cloud GPUs, buy a server, or let gpuwiz compare (either)"),
        F("deployment.objective", "Optimise for", "what 'best' means: lowest cost, shortest time, or per watt"),
        F("deployment.budget_usd", "Budget (USD)", "the most you will spend, in US dollars, e.g. $250,000 or 250K",
          placeholder="none, e.g. $250,000"),
        F("deployment.horizon_years", "Horizon (years)", "how long you will use the hardware, e.g. 3"),
        F("deployment.electricity_usd_per_kwh", "Electricity $/kWh", "your power price, e.g. 0.15",
          placeholder="catalog default"),
        F("deployment.country", "Country", "two-letter country code, e.g. US, DE, JP (export rules, prices)"),
        F("deployment.currency", "Currency", "ISO code money is shown in, e.g. CNY, EUR; empty = the country's",
          placeholder="auto"),
        F("deployment.data_sensitivity", "Data sensitivity", "confidential/regulated data rules out some clouds"),
        F("deployment.regions", "Rent only in", "countries or cloud regions, comma-separated, e.g. DE, FR, "
          "eu-central-1; empty = anywhere", placeholder="anywhere, e.g. DE, eu-central-1", parse="list"),
        F("deployment.site", "Site", "where a bought machine would live (noise, power, cooling differ)"),
        F("deployment.used_hardware", "Used hardware", "allow second-hand GPUs in bought builds"),
        F("deployment.require_cuda", "CUDA only", "yes if your code needs CUDA (custom kernels): NVIDIA only"),
        F("have", "Owned GPUs", "GPUs you already own, priced at their energy alone, e.g. 8x h100-sxm, 2x rtx-4090",
          placeholder="none, e.g. 8x h100-sxm", parse="have"),
        F("hardware.gpu", "Pin GPU", "use this GPU type instead of the automatic pick", source="gpus"),
        F("hardware.count", "Pin GPU count", "use exactly this many GPUs; empty = automatic", placeholder="auto"),
    ),
)

STEPS: tuple[StepSpec, ...] = (MODEL_STEP, DATA_STEP, SCHEDULE_STEP, DEPLOY_STEP)
assert (*tuple(s.id for s in STEPS), "result") == STEP_IDS


def all_fields() -> tuple[FieldSpec, ...]:
    return tuple(f for s in STEPS for f in s.fields)


def get_value(req: m.Requirements, path: Path_t) -> Any:
    node: Any = req
    for part in path:
        if node is None:
            return None
        node = getattr(node, part)
    return node


def display(spec: FieldSpec, value: Any) -> str:
    """The text an Input shows, or the value a Select holds, for a requirement value.

    An Input whose value is the schema's default is empty: the default is its placeholder, so that
    typing replaces it instead of appending to it."""
    if spec.kind == "select":
        if value is None:
            return NONE
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)
    if value is None or (spec.default is not None and value == spec.default):
        return ""
    if spec.parse == "have":  # owned hardware: "8x h100-sxm, 2x rtx-4090"
        return ", ".join(f"{h.count}x {h.gpu}" for h in value)
    return _plain(value, spec.bytes_unit, spec.integer)


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


_WORDS: tuple[tuple[str, str], ...] = (
    (r"^input should be greater than or equal to (\S+)$", N_(r"must be at least \1")),
    (r"^input should be greater than (\S+)$", N_(r"must be more than \1")),
    (r"^input should be less than or equal to (\S+)$", N_(r"must be at most \1")),
    (r"^input should be less than (\S+)$", N_(r"must be less than \1")),
    (r"^input should be a valid (number|integer).*$", N_(r"must be a number, e.g. 7, 1.5B or 2T")),
    (r"^input should be a valid string.*$", N_(r"must be text")),
    (r"^string should match pattern .*$", N_(r"has the wrong form")),
    (r"^string should have at least (\d+) characters?$", N_(r"must have at least \1 characters")),
    (r"^string should have at most (\d+) characters?$", N_(r"must have at most \1 characters")),
    (r"^input should be (.*)$", N_(r"must be \1")),
)


def _words(msg: str) -> str:
    """A pydantic message as a sentence a user reads ("must be at least 1")."""
    msg = msg.removeprefix("Value error, ")
    msg = msg[:1].lower() + msg[1:] if msg else msg
    for pat, rep in _WORDS:
        new, n = re.subn(pat, _(rep), msg)
        if n:
            return new
    return msg


def _error_for(exc: ValidationError, path: Path_t) -> str:
    errors = exc.errors()
    for err in errors:
        loc = tuple(str(p) for p in err["loc"])
        if loc[: len(path)] == path:
            return _words(err["msg"])
    return _words(errors[0]["msg"]) if errors else _("invalid value")


_SCHEDULE_WORDS = {"daily": 30.0, "every day": 30.0, "weekly": 52 / 12, "every week": 52 / 12,
                   "monthly": 1.0, "every month": 1.0, "fortnightly": 26 / 12}
_PER = re.compile(r"^\s*(\S+)\s*(?:runs?\s*)?(?:per|a|/|every)\s*(day|week|month|year|quarter)\s*$", re.IGNORECASE)
_PER_UNIT = {"day": 30.0, "week": 52 / 12, "month": 1.0, "quarter": 1 / 3, "year": 1 / 12}


def parse_schedule(raw: str, horizon_years: float) -> Any:
    """``once`` (a single run over the horizon), ``daily``, ``weekly``, ``3 per month`` → runs per month."""
    s = raw.strip().lower()
    if s in ("once", "one run", "a single run"):
        return 1.0 / (12.0 * horizon_years)
    if s in _SCHEDULE_WORDS:
        return _SCHEDULE_WORDS[s]
    mt = _PER.match(s)
    if mt:
        from gpuwiz.core.units import parse_number

        n = parse_number(mt.group(1))
        if isinstance(n, float):
            return n * _PER_UNIT[mt.group(2)]
    return raw


_REGION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._-]{1,63}$")


def parse_list(raw: str, known: Collection[str] | None) -> list[str] | str:
    """``DE, fr, eu-central-1`` → ``["DE", "FR", "eu-central-1"]``, or why an item is refused.

    An item is a two-letter country code (shown upper case) or a cloud region id; with ``known``
    (the catalog's region ids) an unknown region id is refused, with the nearest one: a typo would
    otherwise rule out every offer."""
    items = [x.strip() for x in raw.split(",")]
    out: list[str] = []
    lower = {k.lower(): k for k in known} if known is not None else None
    for item in items:
        if not item:
            continue
        if len(item) == 2 and item.isalpha():
            out.append(item.upper())
            continue
        if not _REGION_ID.match(item):
            return _("{item!r} is neither a two-letter country code nor a region id").format(item=item)
        if lower is not None and item.lower() not in lower:
            return _("{item!r}: no cloud offer in the catalog has this region{hint}").format(
                item=item, hint=_nearest(item, lower))
        out.append(lower[item.lower()] if lower is not None else item)
    return list(dict.fromkeys(out))


def _nearest(item: str, lower: dict[str, str]) -> str:
    """' (did you mean ID?)' with the known id nearest to ``item`` (``lower``: the known ids by their lower case),
    or '' when none is near: what a list field says of an id it does not know."""
    import difflib

    near = difflib.get_close_matches(item.lower(), list(lower), n=1, cutoff=0.6)
    return _(" (did you mean {id}?)").format(id=lower[near[0]]) if near else ""


_OWNED = re.compile(r"^(?:(\d+)\s*[x×*]\s*)?([A-Za-z][A-Za-z0-9._-]*)$")  # (catalog GPU ids start with a letter)


def parse_have(raw: str, known: Collection[str] | None,
               current: tuple[m.HaveSpec, ...] = ()) -> list[dict[str, Any]] | str:
    """``8x h100-sxm, 2x rtx-4090`` → ``[{gpu: h100-sxm, count: 8}, {gpu: rtx-4090, count: 2}]`` (``have:``), or
    why an item is refused. A bare id is one GPU; with ``known`` (the catalog's GPU ids) an unknown id is refused,
    with the nearest. An item the config already holds with the same GPU and count keeps its gpus_per_node (a key
    this field does not show)."""
    lower = {k.lower(): k for k in known} if known is not None else None
    out: list[dict[str, Any]] = []
    for item in (x.strip() for x in raw.split(",")):
        if not item:
            continue
        got = _OWNED.match(item)
        if got is None:
            return _("{item!r} is not a count and a GPU id, e.g. 8x h100-sxm").format(item=item)
        count = int(got.group(1)) if got.group(1) else 1
        gpu = got.group(2)
        if lower is not None:
            if gpu.lower() not in lower:
                return _("{item!r}: no GPU in the catalog has this id{hint}").format(item=gpu,
                                                                                  hint=_nearest(gpu, lower))
            gpu = lower[gpu.lower()]
        row: dict[str, Any] = {"gpu": gpu, "count": count}
        kept = next((h for h in current if h.gpu == gpu and h.count == count and h.gpus_per_node), None)
        if kept is not None:
            row["gpus_per_node"] = kept.gpus_per_node
        out.append(row)
    return out


def apply_edit(req: m.Requirements, spec: FieldSpec, raw: str,
               known: Collection[str] | None = None) -> tuple[m.Requirements | None, str | None]:
    """(new requirements, None) or (None, why the value is not accepted). ``known``: the values a
    list field may hold besides country codes (the catalog's region ids)."""
    raw = raw.strip()
    unset = raw == "" or raw == NONE
    value: Any = raw
    if spec.kind == "select" and raw in ("true", "false"):
        value = raw == "true"
    elif spec.parse == "schedule" and not unset:
        value = parse_schedule(raw, req.deployment.horizon_years)
    elif spec.parse == "list" and not unset:
        value = parse_list(raw, known)
        if isinstance(value, str):
            return None, value
        unset = not value
    elif spec.parse == "have" and not unset:
        value = parse_have(raw, known, req.have)
        if isinstance(value, str):
            return None, value
        unset = not value
    data = req.model_dump()
    _set(data, spec.path, value, unset)
    try:
        return m.Requirements.model_validate(data), None
    except ValidationError as exc:
        return None, _error_for(exc, spec.path)


