"""P10-P90 ranges around the engine's point estimates, from its cross-validated residuals.

``gpuwiz validate --ranges`` (the sibling ``gpuwiz.validation`` package, never imported from here)
predicts every published run leaving its source out and records the residual ``q`` = published /
predicted speed (throughput; whole runs as predicted / published GPU-hours) and published / predicted
peak memory, grouped by GPU generation, model family, stack and scale. The table is generated data
(``gpuwiz/data/ranges.yaml``), read once and cached.

An estimate's range is built from the groups it matches: each dimension whose group has at least
``MIN_GROUP`` residuals contributes its P10 and P90, and the range is their geometric mean (the groups'
quantiles averaged in log space; their union -- the widest of them -- held 92 % of the held-out
residuals instead of the 80 % a P10-P90 range should, measured 2026-12-01 by ``gpuwiz validate``); a dimension whose
group is smaller (a new GPU generation, a stack without published runs) is skipped and the range says
so; with no usable group the pooled residuals are used.
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.models import Range
from gpuwiz.i18n import N_, _

MIN_GROUP = 5
DIMENSIONS: tuple[str, ...] = ("generation", "family", "stack", "scale")
RangeKind = Literal["throughput", "memory"]


class GroupRange(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    n: int = Field(ge=0)
    p10: float = Field(gt=0)
    p50: float = Field(gt=0)
    p90: float = Field(gt=0)


class RangeTable(BaseModel):
    """Residual quantiles per kind: ``{"overall": GroupRange, "<dimension>": {key: GroupRange}}``."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    version: int = 1
    source: str
    throughput: dict[str, GroupRange | dict[str, GroupRange]] = Field(default_factory=dict)
    memory: dict[str, GroupRange | dict[str, GroupRange]] = Field(default_factory=dict)


class Spread(BaseModel):
    """Multipliers on a point estimate: low = x·p10, high = x·p90 (for times: x/p90 .. x/p10)."""

    model_config = ConfigDict(frozen=True)
    p10: float
    p90: float
    basis: str  # which groups set it, in words ("generation ampere (n=170), family decoder LLM (n=180)")
    # the same as facts, for the text in the interface language (basis_text): (dimension, group, n)
    used: tuple[tuple[str, str, int], ...] = ()  # dimension "" with group "": all published runs
    missing: tuple[tuple[str, str, int], ...] = ()


# Group label of a model family (the validation tables and the range table use these words)
FAMILY_LABEL: dict[str, str] = {
    "decoder": "decoder LLM", "encoder": "encoder (BERT)", "encoder-decoder": "encoder-decoder", "cnn": "CNN",
    "diffusion": "diffusion UNet", "vit": "ViT", "moe": "MoE", "speech": "speech",
}


def scale_group(gpus: int) -> str:
    if gpus <= 1:
        return "1 GPU"
    if gpus <= 8:
        return "2-8 GPUs"
    if gpus <= 256:
        return "9-256 GPUs"
    return "> 256 GPUs"


# range_for's answers per table (a table is immutable; a few exist per process: the bundled one,
# and the validation harness's leave-one-out tables), each keyed by the group keys it reads.
_SPREADS: dict[int, tuple[RangeTable, dict[tuple[str, tuple[str | None, ...]], Spread | None]]] = {}
_MAX_TABLES = 8


def range_for(table: RangeTable, kind: RangeKind, keys: dict[str, str]) -> Spread | None:
    """The spread for an estimate with these group keys (see module docstring); None without data."""
    memo = _SPREADS.get(id(table))
    if memo is None or memo[0] is not table:
        if len(_SPREADS) >= _MAX_TABLES:
            _SPREADS.clear()
        memo = _SPREADS[id(table)] = (table, {})
    key = (kind, tuple(keys.get(dim) for dim in DIMENSIONS))
    if key in memo[1]:
        return memo[1][key]
    out = memo[1][key] = _range_for(table, kind, keys)
    return out


def _range_for(table: RangeTable, kind: RangeKind, keys: dict[str, str]) -> Spread | None:
    part = table.throughput if kind == "throughput" else table.memory
    used: list[tuple[str, GroupRange]] = []
    missing: list[str] = []
    facts_used: list[tuple[str, str, int]] = []
    facts_missing: list[tuple[str, str, int]] = []
    for dim in DIMENSIONS:
        groups = part.get(dim)
        key = keys.get(dim)
        g = groups.get(key) if isinstance(groups, dict) and key is not None else None
        if isinstance(g, GroupRange) and g.n >= MIN_GROUP:
            used.append((f"{dim} {key}", g))
            facts_used.append((dim, str(key), g.n))
        elif key is not None:
            missing.append(f"{dim} {key} ({g.n if isinstance(g, GroupRange) else 0} entries)")
            facts_missing.append((dim, key, g.n if isinstance(g, GroupRange) else 0))
    if not used:
        overall = part.get("overall")
        if not isinstance(overall, GroupRange) or overall.n < MIN_GROUP:
            return None
        used = [("all published runs", overall)]
        facts_used = [("", "", overall.n)]
    lo = math.exp(sum(math.log(g.p10) for _, g in used) / len(used))
    hi = math.exp(sum(math.log(g.p90) for _, g in used) / len(used))
    basis = ", ".join(f"{name} (n={g.n})" for name, g in used)
    if missing:
        basis += "; too few entries for " + ", ".join(missing) + ": the groups above"
    return Spread(p10=lo, p90=hi, basis=basis, used=tuple(facts_used), missing=tuple(facts_missing))


DIMENSION_LABEL: dict[str, str] = {"generation": N_("generation"), "family": N_("family"), "stack": N_("stack"),
                                   "scale": N_("scale")}


def basis_text(spread: Spread) -> str:
    """``spread.basis`` in the interface language (the English ``basis`` stays in the JSON)."""
    def group(dim: str, key: str) -> str:
        return _("{dimension} {group}").format(dimension=_(DIMENSION_LABEL.get(dim, dim)), group=key)

    text = ", ".join(_("{group} (n={n})").format(group=group(d, k) if d else _("all published runs"), n=n)
                        for d, k, n in spread.used)
    if spread.missing:
        text = _("{used}; too few entries for {missing}: the groups above").format(
            used=text, missing=", ".join(_("{group} ({n} entries)").format(group=group(d, k), n=n)
                                            for d, k, n in spread.missing))
    return text


def group_keys(*, generation: str, family: str, stack: str, gpus: int) -> dict[str, str]:
    """The group keys of an estimate (the same words the validation harness records for a run)."""
    return {"generation": generation, "family": FAMILY_LABEL.get(family, family), "stack": stack,
            "scale": scale_group(gpus)}


def around(x: float, spread: Spread, *, inverse: bool = False) -> Range:
    """The P10-P90 range of a figure: speeds and memory scale by the ratio, times by its inverse."""
    if inverse:
        return Range(low=x / spread.p90, high=x / spread.p10)
    return Range(low=x * spread.p10, high=x * spread.p90)


def _num(v: float) -> str:
    a = abs(v)
    if a >= 100:
        return f"{v:,.0f}"
    if a >= 1:
        return f"{v:.1f}"
    return f"{v:.2g}"


def fmt_range(x: float, lo: float | None, hi: float | None, unit: str = "") -> str:
    """'4.6 h (3.9-5.8 h)'; the point alone when there is no range. For reports and the TUI alike."""
    u = f" {unit}" if unit else ""
    if lo is None or hi is None:
        return f"{_num(x)}{u}"
    return f"{_num(x)}{u} ({_num(lo)}–{_num(hi)}{u})"


def parse_table(text: str, where: str) -> RangeTable:
    try:
        raw = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # C parser: 10x faster
        return RangeTable.model_validate(raw)
    except (yaml.YAMLError, ValidationError) as exc:
        raise GpuwizError(f"{where}: not a valid range table ({str(exc).splitlines()[0]})") from None


@lru_cache(maxsize=1)
def bundled_ranges() -> RangeTable | None:
    """The range table shipped in the package, or None when it has not been generated."""
    try:  # a plain file beside the package: importlib.resources' readers import zipfile (~3 ms of a CLI run)
        text = (Path(__file__).parent.parent / "data" / "ranges.yaml").read_text(encoding="utf-8")
    except FileNotFoundError:
        from importlib import resources

        f = resources.files("gpuwiz").joinpath("data/ranges.yaml")  # a zipped install, or none generated
        if not f.is_file():
            return None
        text = f.read_text(encoding="utf-8")
    return parse_table(text, "gpuwiz/data/ranges.yaml")
