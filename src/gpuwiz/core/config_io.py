"""Config files: load (safe, versioned, line-numbered errors), dump and atomic save.

A config is the YAML form of :class:`~gpuwiz.core.models.Requirements` (``version: 1``). Problems
come back as one line each: ``FILE:LINE: field.path: what is wrong``; unknown keys and unknown
preset / GPU ids get a did-you-mean. Saving writes only what differs from the defaults and
round-trips exactly: ``loads(dumps(x)) == x``.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from gpuwiz.core.catalog import Catalog, did_you_mean
from gpuwiz.core.errors import GpuwizError, format_problem
from gpuwiz.core.models import CONFIG_VERSION, Requirements
from gpuwiz.core.yamlio import LineMap, atomic_write_text, dotted, parse, read_text
from gpuwiz.i18n import N_, _, current_language

MAX_CONFIG_BYTES = 1_000_000
MAX_PROBLEMS = 20  # problems reported for one file; the rest are counted


def _short(value: Any) -> str:
    text = repr(value)
    text = "".join(ch if ch.isprintable() else "?" for ch in text)
    return text if len(text) <= 40 else text[:37] + "..."


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The pydantic model class that owns the mapping at ``loc`` (for did-you-mean on keys)."""
    cls: type[BaseModel] = Requirements
    for part in loc:
        field = cls.model_fields.get(part) if isinstance(part, str) else None
        if field is None:
            return None
        ann = field.annotation
        nxt: type[BaseModel] | None = None
        for cand in getattr(ann, "__args__", (ann,)):
            if isinstance(cand, type) and issubclass(cand, BaseModel):
                nxt = cand
        if nxt is None:
            return None
        cls = nxt
    return cls


# pydantic's messages by error type, as templates of its ``ctx`` (used when the interface is not
# English: in English pydantic's own words are kept as they are)
_PYDANTIC_WORDS: dict[str, str] = {
    "greater_than_equal": N_("must be at least {ge}"),
    "greater_than": N_("must be more than {gt}"),
    "less_than_equal": N_("must be at most {le}"),
    "less_than": N_("must be less than {lt}"),
    "float_parsing": N_("must be a number"), "float_type": N_("must be a number"),
    "int_parsing": N_("must be a whole number"), "int_type": N_("must be a whole number"),
    "int_from_float": N_("must be a whole number"),
    "bool_parsing": N_("must be true or false"), "bool_type": N_("must be true or false"),
    "string_type": N_("must be text"),
    "literal_error": N_("must be one of {expected}"),
    "missing": N_("is required"),
    "dict_type": N_("must be a mapping (key: value lines)"),
    "list_type": N_("must be a list"),
    "finite_number": N_("must be a finite number"),
}


def _ctx_text(value: Any) -> str:
    """A limit as pydantic writes it (``0``, not ``0.0``)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _choices_text(expected: str) -> str:
    """pydantic's list of allowed values ("'a', 'b' or 'c'") in the current language's words ("'a'、'b' 或
    'c'"); as it is when it is not such a list."""
    items = expected.split(", ")
    last = items[-1].rsplit(" or ", 1)
    if len(last) != 2 or not all(x.startswith("'") and x.endswith("'") for x in (*items[:-1], *last)):
        return expected
    return _("{items} or {last}").format(items=_(", ").join([*items[:-1], last[0]]), last=last[1])


def _message(err: ErrorDetails) -> str:
    kind = err["type"]
    loc = tuple(err["loc"])
    if kind == "extra_forbidden":
        owner = _model_at(loc[:-1])
        hint = did_you_mean(str(loc[-1]), list(owner.model_fields)) if owner else ""
        return _("unknown key{hint}").format(hint=hint)
    msg: str = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    template = _PYDANTIC_WORDS.get(kind)
    if template is not None and current_language() != "en":
        try:
            ctx = {k: _ctx_text(v) for k, v in (err.get("ctx") or {}).items()}
            if kind == "literal_error" and "expected" in ctx:
                ctx["expected"] = _choices_text(ctx["expected"])
            msg = _(template).format(**ctx)
        except (KeyError, IndexError):  # a ctx without the field the template names: pydantic's words
            pass
    if kind not in ("missing",) and "input" in err and not isinstance(err["input"], (dict, list)):
        msg += _(" (got {value})").format(value=_short(err["input"]))
    return msg


def _from_validation(exc: ValidationError, name: str, lines: LineMap) -> GpuwizError:
    problems: list[str] = []
    seen: set[str] = set()
    errors = exc.errors()
    more = 0
    for n_err, err in enumerate(errors):
        if len(problems) >= MAX_PROBLEMS:  # bounded work: 99,000 unknown keys report 20 and a count
            more = len(errors) - n_err
            break
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        # drop union-branch tags pydantic inserts (e.g. 'float', 'int', 'literal[...]'), but never a
        # key the user actually wrote (a key may well contain "[")
        kept: tuple[Any, ...] = ()
        for p in loc:
            if (isinstance(p, str) and ("[" in p or p in ("float", "int", "str", "bool", "none"))
                    and not lines.has((*kept, p))):
                continue
            kept += (p,)
        loc = kept
        problem = format_problem(name, lines.line(loc), dotted(loc) or None, _message(err))
        if problem not in seen:  # one line per problem, de-duplicated (a set: linear), in file order
            seen.add(problem)
            problems.append(problem)
    if more:
        problems.append(format_problem(name, None, None, _("... and {n} more problem(s) not shown").format(n=more)))
    return GpuwizError(problems[0], problems=problems)


def _check_numbers(data: Any, path: tuple[Any, ...], name: str, lines: LineMap) -> None:
    """NaN / inf from YAML (.nan, .inf) are never meaningful in a config."""
    if isinstance(data, dict):
        for k, v in data.items():
            _check_numbers(v, (*path, k), name, lines)
    elif isinstance(data, list):
        for i, v in enumerate(data):
            _check_numbers(v, (*path, i), name, lines)
    elif isinstance(data, float) and not math.isfinite(data):
        raise GpuwizError(format_problem(name, lines.line(path), dotted(path),
                                         _("must be a finite number (not NaN or infinity)")))
    elif isinstance(data, str) and not data.isprintable():
        # ESC / BEL / bidi overrides in a value would be echoed to terminals and reports
        bad = next(ch for ch in data if not ch.isprintable())
        raise GpuwizError(format_problem(name, lines.line(path), dotted(path),
                                         _("contains the control character {char}; remove it").format(
                                             char=ascii(bad))))


def requirements_from_data(data: Any, name: str = "<config>", lines: LineMap | None = None,
                           *, catalog: Catalog | None = None, base_dir: Path | None = None) -> Requirements:
    lines = lines or LineMap()
    if data is None:
        raise GpuwizError(_("{name}: empty file (expected a gpuwiz config with `version: 1`)").format(name=name))
    if not isinstance(data, dict):
        raise GpuwizError(format_problem(name, lines.line(()), None,
                                         _("a config must be a YAML mapping, not a {kind}").format(
                                             kind=type(data).__name__)))
    if "version" not in data:
        raise GpuwizError(format_problem(name, 1, "version", _("missing; add `version: 1` at the top")))
    version = data["version"]
    if isinstance(version, bool) or not isinstance(version, (int, float, str)):
        raise GpuwizError(format_problem(name, lines.line(("version",)), "version",
                                         _("must be a whole number such as 1 (got {value})").format(
                                             value=_short(version))))
    if isinstance(version, int) and not isinstance(version, bool) and version > CONFIG_VERSION:
        raise GpuwizError(format_problem(
            name, lines.line(("version",)), "version",
            _("config is version {version}, this gpuwiz reads version {known} (upgrade gpuwiz)").format(
                version=version, known=CONFIG_VERSION)))
    _check_numbers(data, (), name, lines)
    model = data.get("model")
    if base_dir is not None and isinstance(model, dict) and isinstance(model.get("hf_config"), str):
        hf = Path(os.path.expanduser(model["hf_config"]))  # (Path.expanduser raises for ~unknownuser)
        try:
            if not hf.is_absolute() and (base_dir / hf).exists():
                data = {**data, "model": {**model, "hf_config": str((base_dir / hf).resolve())}}
        except (OSError, ValueError):  # a name over PATH_MAX, a NUL: the HF reader says what is wrong
            pass
    try:
        req = Requirements.model_validate(data, context={"fx": fx_rates(catalog)})
    except ValidationError as exc:
        raise _from_validation(exc, name, lines) from None
    if catalog is not None:
        check_references(req, catalog, name, lines)
    return req


def fx_rates(catalog: Catalog | None = None) -> dict[str, float]:
    """USD per unit of each catalog currency, for money written in another currency in a config."""
    if catalog is None:
        from gpuwiz.core.catalog import load_catalog

        catalog = load_catalog()
    return {code: fx.usd_per_unit for code, fx in catalog.fx.items()}


def check_references(req: Requirements, catalog: Catalog, name: str = "<config>",
                     lines: LineMap | None = None) -> None:
    """Unknown preset / GPU ids, with a did-you-mean."""
    lines = lines or LineMap()
    if req.model.preset is not None:
        ids = [m.id for m in catalog.models]
        if req.model.preset not in ids:
            raise GpuwizError(format_problem(
                name, lines.line(("model", "preset")), "model.preset",
                _("unknown preset {id}{hint}").format(id=repr(req.model.preset),
                                                     hint=did_you_mean(req.model.preset, ids))))
    if req.hardware is not None and req.hardware.gpu is not None:
        ids = [g.id for g in catalog.gpus]
        if req.hardware.gpu not in ids:
            raise GpuwizError(format_problem(
                name, lines.line(("hardware", "gpu")), "hardware.gpu",
                _("unknown GPU {id}{hint}").format(id=repr(req.hardware.gpu),
                                                  hint=did_you_mean(req.hardware.gpu, ids))))
    gpu_ids = [g.id for g in catalog.gpus]
    refs: list[tuple[tuple[str | int, ...], str | None]] = [
        (("calibration", "gpu"), req.calibration.gpu if req.calibration else None)]
    refs += [(("have", i, "gpu"), h.gpu) for i, h in enumerate(req.have)]
    for path, gid in refs:
        if gid is not None and gid not in gpu_ids:
            raise GpuwizError(format_problem(name, lines.line(path), dotted(path),
                                             _("unknown GPU {id}{hint}").format(id=repr(gid),
                                                                                hint=did_you_mean(gid, gpu_ids))))


def loads_config(text: str, name: str = "<config>", *, catalog: Catalog | None = None,
                 base_dir: Path | None = None) -> Requirements:
    data, lines = parse(text, name)
    return requirements_from_data(data, name, lines, catalog=catalog, base_dir=base_dir)


def load_config(path: str | os.PathLike[str], *, catalog: Catalog | None = None) -> Requirements:
    """Load and validate a config file. Raises GpuwizError with one line per problem."""
    text = read_text(path, max_bytes=MAX_CONFIG_BYTES)
    return loads_config(text, str(path), catalog=catalog, base_dir=Path(path).resolve().parent)


def _tidy(value: Any) -> Any:
    """Whole floats as ints (``epochs: 2``, ``tokens: 20000000``): they load back as the same float."""
    if isinstance(value, dict):
        return {k: _tidy(v) for k, v in value.items()}
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


def config_data(req: Requirements) -> dict[str, Any]:
    """The minimal dict for ``req``: only values that differ from the defaults."""
    data = _tidy(req.model_dump(mode="json", exclude_defaults=True))
    return {"version": req.version, **{k: v for k, v in data.items() if k != "version"}}


class _Dumper(yaml.SafeDumper):
    pass


def _str_repr(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=None)


_Dumper.add_representer(str, _str_repr)


CONFIG_HEADER = "# gpuwiz config - edit freely; `gpuwiz FILE` opens it, `gpuwiz recommend FILE` answers it\n"


def dumps_config(req: Requirements, header: str | None = None) -> str:
    """The config as YAML, after ``header`` (comment lines: ``leading_comments`` of the file it replaces) or
    gpuwiz's one-line header."""
    body = yaml.dump(config_data(req), Dumper=_Dumper, sort_keys=False, default_flow_style=False,
                     allow_unicode=True, width=100)
    return (header or CONFIG_HEADER) + body


def leading_comments(text: str) -> str:
    """The comment lines (and blank lines between them) a YAML file starts with, ending in a newline; '' when it
    starts otherwise. A save keeps them: the lines people write to say what a config is for."""
    kept: list[str] = []
    for line in text.splitlines():
        if line.startswith("#") or (kept and not line.strip()):
            kept.append(line)
        else:
            break
    while kept and not kept[-1].strip():
        kept.pop()
    return "".join(f"{line}\n" for line in kept)


def save_config(req: Requirements, path: str | os.PathLike[str]) -> None:
    """Atomic save (temp file beside it, fsync, rename); the old file survives any failure."""
    atomic_write_text(path, dumps_config(req))
