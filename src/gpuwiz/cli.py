"""The `gpuwiz` command: the wizard (bare `gpuwiz` or `gpuwiz CONFIG.yaml`) and headless subcommands.

Headless paths never import Textual, so they start fast. User errors (GpuwizError) print one line
per problem on stderr and exit 2; there are no tracebacks unless GPUWIZ_DEBUG=1.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from gpuwiz import __version__
from gpuwiz.i18n import N_, _

SUBCOMMANDS = ("estimate", "recommend", "catalog", "validate", "launch", "calibrate", "probe")
EXIT_USAGE = 2
MAX_GPUS = 100_000  # = gpuwiz.core.models.MAX_GPUS (docs/LIMITS.md); not imported: --help stays fast
MAX_GPUS_PER_NODE = 72

# Glyphs the reports use, and what they become on a terminal whose encoding cannot show them
# (LANG=C, PYTHONIOENCODING=latin-1 / ascii). Anything else unencodable becomes "?".
ASCII_GLYPHS = {
    "≤": "<=", "≥": ">=", "×": "x", "→": "->", "←": "<-", "↔": "<->", "…": "...", "—": "-", "–": "-",
    "·": "*", "−": "-", "≈": "~", "±": "+/-", "µ": "u", "°": " deg", "€": "EUR", "£": "GBP", "‰": " per mille",
    "‘": "'", "’": "'", "“": '"', "”": '"', "•": "*", "✓": "ok", "✗": "x", "█": "#", "▏": "|", "│": "|",
    "─": "-", "Δ": "d", "²": "^2", "³": "^3", "½": "1/2", "\u00a0": " ", "\u2009": " ", "\u202f": " ",
}
_ERRORS_HANDLER = "gpuwiz-ascii"


def _ascii_fallback(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    bad = exc.object[exc.start:exc.end]
    return "".join(ASCII_GLYPHS.get(ch, "?") for ch in bad), exc.end


def safe_streams() -> None:
    """stdout / stderr never raise UnicodeEncodeError: unencodable glyphs degrade to ASCII."""
    import codecs

    try:
        codecs.lookup_error(_ERRORS_HANDLER)
    except LookupError:
        codecs.register_error(_ERRORS_HANDLER, _ascii_fallback)
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is None:
            continue
        try:
            reconfigure(errors=_ERRORS_HANDLER)
        except (ValueError, OSError, TypeError):  # a detached or closed stream: leave it
            pass

DESCRIPTION = N_("""\
gpuwiz tells an ML team which GPU server (or cloud instance, or cluster) to rent or buy for
training their model, and why.

  gpuwiz                         open the wizard
  gpuwiz CONFIG.yaml             open the wizard on a saved config
  gpuwiz recommend CONFIG.yaml   the recommended build, costs and warnings (text, md or json)
  gpuwiz estimate CONFIG.yaml    memory, plan and time for one GPU type and count
  gpuwiz catalog [gpus|models|clouds]
  gpuwiz catalog import skypilot PATH/vms.csv -o OVERLAY.yaml
  gpuwiz launch CONFIG.yaml --target T   launch files (torchrun, accelerate, deepspeed, megatron,
                                         slurm, kubernetes, skypilot) for the recommended plan
  gpuwiz calibrate LOG [--config CONFIG.yaml]   a calibration: section from a training log
  gpuwiz probe [--config CONFIG.yaml]   measure this machine (needs gpuwiz[probe]) -> calibration:
""")


WIZARD_EPILOG = N_("""\
subcommands (gpuwiz COMMAND --help): estimate, recommend, catalog, validate, launch, calibrate, probe

environment: NO_COLOR=1 (no colour; the focus marker is ▶ and reverse video), GPUWIZ_STATE_DIR (where
the draft and recent files live), GPUWIZ_CONFIG_DIR (where settings.yaml with key bindings lives)
keys: alt+←/alt+→ or pgup/pgdn back/next (ctrl+b is tmux's prefix), ctrl+s save, ctrl+o open, f1 help,
ctrl+p every command, ctrl+q quit
""")


# argparse's own words, from gpuwiz's catalog (argparse looks them up through its module's ``_``)
ARGPARSE_WORDS = (N_("usage: "), N_("positional arguments"), N_("options"), N_("show this help message and exit"),
                  N_("show program's version number and exit"), N_("the following arguments are required: %s"),
                  N_("unrecognized arguments: %s"), N_("expected one argument"),
                  N_("argument %(argument_name)s: %(message)s"),
                  N_("invalid choice: %(value)r (choose from %(choices)s)"))
LANG_HELP = N_("interface language: en or zh-CN (default: from LANGUAGE, LC_ALL, LC_MESSAGES, LANG)")


def lang_arg(argv: Sequence[str]) -> str | None:
    """The value of ``--lang X`` / ``--lang=X`` anywhere before ``--`` (argparse reads it again)."""
    for i, a in enumerate(argv):
        if a == "--":
            break
        if a == "--lang" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--lang="):
            return a.split("=", 1)[1]
    return None


def set_language(argv: Sequence[str]) -> None:
    """The interface language for this run (before any parser or screen is built); a bad ``--lang``
    is a one-line error (exit 2); a terminal that cannot show Chinese gets English and one line."""
    from gpuwiz import i18n

    try:
        note = i18n.setup(lang_arg(argv), getattr(sys.stdout, "encoding", None))
    except ValueError as exc:  # (no engine import here: --help stays fast)
        sys.stderr.write(f"gpuwiz: --lang: {exc}\n")
        raise SystemExit(EXIT_USAGE) from None
    if note:
        sys.stderr.write(note + "\n")
    argparse._ = _  # type: ignore[attr-defined]


def help_width() -> int:
    """= shutil.get_terminal_size().columns - 2, argparse's help width: $COLUMNS, else the terminal's, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return (columns or 80) - 2


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.add_argument("--lang", metavar="en|zh-CN", default=argparse.SUPPRESS, help=_(LANG_HELP))

    def _get_formatter(self) -> argparse.HelpFormatter:
        # the width argparse works out itself, without its `import shutil` (+ bz2, lzma, ...): every
        # add_argument makes a formatter, so each headless start paid for it
        make: Any = self.formatter_class  # every HelpFormatter takes width (typeshed's protocol names prog only)
        return make(prog=self.prog, width=help_width())  # type: ignore[no-any-return]

    def _print_message(self, message: str, file: Any = None) -> None:
        # argparse drops an OSError of its own writes (help, usage, version): to standard output they go
        # through ``emit``, so a full disk is reported as for any other output (``flush_output``)
        if message and file is sys.stdout:
            emit(message)
        else:
            super()._print_message(message, file)

    def error(self, message: str) -> NoReturn:  # one line, exit 2
        from gpuwiz.core.errors import printable

        self.exit(EXIT_USAGE, printable(f"gpuwiz: {' '.join(message.split())} (see `{self.prog} --help`)") + "\n")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _bounded_int(largest: int) -> Any:
    """An argparse type: a whole number from 1 to ``largest`` (the limits in docs/LIMITS.md)."""

    def parse(text: str) -> int:
        value = _positive_int(text)
        if value > largest:
            raise argparse.ArgumentTypeError(f"must be at most {largest:,}, got {value:,}")
        return value

    return parse


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--catalog", metavar="FILE", help=_("catalog overlay YAML (entries override by id)"))


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="gpuwiz", description=_(DESCRIPTION), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"gpuwiz {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("estimate",
                       help=_("memory per GPU, parallel plan, throughput and time for one GPU type and count"))
    p.add_argument("config", metavar="CONFIG.yaml")
    p.add_argument("--gpu", metavar="ID", help=_("GPU id from `gpuwiz catalog gpus` (overrides hardware.gpu)"))
    p.add_argument("--count", type=_bounded_int(MAX_GPUS), metavar="N", help=_("total GPUs (overrides hardware.count)"))
    p.add_argument("--gpus-per-node", type=_bounded_int(MAX_GPUS_PER_NODE), metavar="N")
    p.add_argument("--format", choices=("text", "md", "json"), default="text")
    _common(p)

    p = sub.add_parser("recommend", help=_("the recommended build with costs, rent vs buy and pitfalls"))
    p.add_argument("config", metavar="CONFIG.yaml")
    p.add_argument("--objective", choices=("cheapest", "fastest", "perf-per-watt"))
    p.add_argument("--format", choices=("text", "md", "json"), default="text")
    p.add_argument("-o", "--output", metavar="FILE", help=_("write the report to FILE (atomically) instead of stdout"))
    p.add_argument("--force", action="store_true", help=_("with -o: replace FILE if it exists (never an input)"))
    p.add_argument("--have", choices=("local",), help=_("add this machine's GPUs (found with NVML) as owned hardware"))
    _common(p)

    p = sub.add_parser("catalog", help=_("list GPUs, model presets or cloud offers; import cloud prices"))
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(section="gpus")
    csub = p.add_subparsers(dest="section", metavar="SECTION", parser_class=_Parser)
    listings = (("gpus", N_("GPUs")), ("models", N_("model presets")),
                ("clouds", N_("cloud offers, with the age of each price")))
    for name, what in listings:
        cp = csub.add_parser(name, help=_("list {what}").format(what=_(what)))
        cp.add_argument("--format", choices=("table", "json"), default=argparse.SUPPRESS)
        cp.add_argument("--catalog", metavar="FILE", default=argparse.SUPPRESS,
                        help=_("catalog overlay YAML (entries override by id)"))
    cp = csub.add_parser("import", help=_("write a catalog overlay from a price list (SkyPilot vms.csv)"))
    cp.add_argument("source", choices=("skypilot",), help=_("the price list's format"))
    cp.add_argument("path", metavar="PATH/vms.csv")
    cp.add_argument("-o", "--output", metavar="OVERLAY.yaml", required=True,
                    help=_("overlay to write (use with --catalog)"))
    cp.add_argument("--cloud", help=_("aws, gcp, azure, lambda, runpod, vast (default: the CSV's folder name)"))
    cp.add_argument("--observed", metavar="YYYY-MM-DD", help=_("when the prices were true (default: the file's date)"))
    cp.add_argument("--force", action="store_true", help=_("overwrite OVERLAY.yaml if it exists"))
    _common(p)

    p = sub.add_parser("validate", help=_("compare estimates with published training runs (writes docs/VALIDATION.md)"))
    p.add_argument("--data", metavar="FILE", help=_("published runs YAML (default: the bundled set)"))
    p.add_argument("--output", "-o", metavar="FILE", help=_("write the Markdown report here"))
    p.add_argument("--force", action="store_true", help=_("with -o: replace FILE if it exists (never an input)"))
    p.add_argument("--format", choices=("md", "json"), default="md")
    p.add_argument("--ranges", metavar="FILE",
                   help=_("also write the P10-P90 range table (src/gpuwiz/data/ranges.yaml) derived from the "
                          "cross-validated residuals"))
    _common(p)

    p = sub.add_parser("launch", help=_("write ready-to-edit launch files for the recommended plan"))
    p.add_argument("config", metavar="CONFIG.yaml")
    p.add_argument("--target", "-t", required=True, choices=LAUNCH_TARGETS)
    p.add_argument("-o", "--output", metavar="DIR", help=_("folder for the files (default: ./launch-TARGET/)"))
    p.add_argument("--force", action="store_true", help=_("replace files that already exist"))
    _common(p)

    p = sub.add_parser("calibrate", help=_("read a training log; print (or write) its calibration: section"))
    p.add_argument("log", metavar="LOG")
    p.add_argument("--config", metavar="CONFIG.yaml", help=_("the run's config (global batch, sequence length); "
                   "never edited: the section goes to stdout or -o"))
    p.add_argument("-o", "--output", metavar="FILE", help=_("write the section to FILE"))
    p.add_argument("--force", action="store_true", help=_("replace FILE if it exists"))
    p.add_argument("--log-format", choices=LOG_FORMATS, help=_("skip detection"))
    p.add_argument("--gpu", metavar="ID", help=_("the GPU the log was measured on (catalog id)"))
    p.add_argument("--count", type=_bounded_int(MAX_GPUS), metavar="N", help=_("GPUs the run used"))
    p.add_argument("--gpus-per-node", type=_bounded_int(MAX_GPUS_PER_NODE), metavar="N")
    p.add_argument("--warmup-steps", type=int, default=WARMUP_STEPS, metavar="N",
                   help=_("skip steps below N as warm-up (default {n}; the first logged step always)").format(
                       n=WARMUP_STEPS))
    _common(p)

    p = sub.add_parser("probe", help=_("measure this machine (GEMM, memory bandwidth, one training block, all-reduce)"))
    p.add_argument("--config", metavar="CONFIG.yaml",
                   help=_("probe at this config's shapes, precision and micro-batch"))
    p.add_argument("--budget-s", type=float, default=120.0, metavar="S", help=_("time budget in seconds (default 120)"))
    p.add_argument("-o", "--output", metavar="FILE", help=_("write the calibration: section to FILE"))
    p.add_argument("--force", action="store_true", help=_("replace FILE if it exists"))
    _common(p)
    return parser


# The parser's choices for `launch` and `calibrate`, spelled here so that building the parser (every
# command, --help) does not import the launch generators and the log readers (~30 ms). A test checks
# they equal gpuwiz.launch.targets.TARGETS, gpuwiz.calibrate.logs.FORMATS and DEFAULT_WARMUP_STEPS.
LAUNCH_TARGETS = ("torchrun", "accelerate", "deepspeed", "megatron", "slurm", "kubernetes", "skypilot")
LOG_FORMATS = ("hf-trainer", "jsonl", "torchtitan", "megatron", "nemo", "lightning", "deepspeed", "nvidia-smi", "dcgm")
WARMUP_STEPS = 10


def build_wizard_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="gpuwiz", usage="gpuwiz [CONFIG.yaml] [wizard options]  |  gpuwiz COMMAND ...",
                     description=_(DESCRIPTION), formatter_class=argparse.RawDescriptionHelpFormatter,
                     epilog=_(WIZARD_EPILOG))
    parser.add_argument("--version", action="version", version=f"gpuwiz {__version__}")
    parser.add_argument("config", nargs="?", metavar="CONFIG.yaml", help=_("open the wizard on this config"))
    parser.add_argument("--no-mouse", action="store_true", help=_("do not capture the mouse (plain ssh terminals)"))
    parser.add_argument("--theme", metavar="NAME", help=_("Textual theme, e.g. textual-dark, ansi-dark, ansi-light"))
    _common(parser)
    return parser


# ---- commands ------------------------------------------------------------------------------------


def _same_file(a: str, b: str) -> bool:
    try:
        sa, sb = os.stat(a), os.stat(b)
    except (OSError, ValueError):
        return os.path.realpath(a) == os.path.realpath(b)
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def check_output(output: str, inputs: dict[str, str | None], force: bool) -> None:
    """`-o FILE` never destroys an input, never replaces a link / FIFO / device / folder, and replaces
    an existing regular file only with --force. Raises a one-line GpuwizError."""
    from gpuwiz.core.errors import GpuwizError, printable
    from gpuwiz.core.yamlio import check_output_target

    shown = printable(output)
    for what, path in inputs.items():
        if path and _same_file(output, path):
            raise GpuwizError(f"{shown}: -o would overwrite the {what} it reads; give another file name")
    check_output_target(output)  # symlink, FIFO, device node, socket, folder: refused
    if os.path.lexists(output) and not force:
        raise GpuwizError(f"{shown}: already exists; add --force to replace it, or give another file name")


def _write_out(text: str, output: str | None, *, inputs: dict[str, str | None] | None = None,
               force: bool = False) -> None:
    if output:
        from gpuwiz.core.yamlio import atomic_write_text

        check_output(output, inputs or {}, force)
        atomic_write_text(output, text)
    else:
        emit(text)


def _hf_path(req: Any, config: str) -> str | None:
    """The config.json a config reads (``model.hf_config``, a file or a folder holding one)."""
    hf = getattr(req.model, "hf_config", None)
    if not hf:
        return None
    p = os.path.expanduser(str(hf))
    if not os.path.isabs(p):
        p = os.path.join(os.path.dirname(os.path.abspath(config)), p)
    return os.path.join(p, "config.json") if os.path.isdir(p) else p


def _in_config(exc: Exception, config: str) -> Exception:
    """Engine errors name a field ("model.preset: no model given"); say which file (and line)."""
    import re

    from gpuwiz.core.errors import GpuwizError, format_problem
    from gpuwiz.core.models import Requirements
    from gpuwiz.core.yamlio import load_file

    try:
        _text, lines = load_file(config)
    except GpuwizError:
        lines = None
    problems = []
    for problem in getattr(exc, "problems", [str(exc)]):
        field, sep, what = problem.partition(": ")
        if sep and re.fullmatch(r"[a-z_]+(\.[a-z0-9_]+)*", field) and field.split(".")[0] in Requirements.model_fields:
            path: tuple[str | int, ...] = tuple(field.split("."))
            line = None
            while path and lines is not None:  # the field's line, or the nearest section the file has
                if lines.has(path):
                    line = lines.line(path)
                    break
                path = path[:-1]
            problems.append(format_problem(config, line, field, what))
        elif problem.startswith(config):
            problems.append(problem)
        else:
            problems.append(format_problem(config, None, None, problem))
    return GpuwizError(problems[0], problems=problems)


def cmd_estimate(args: argparse.Namespace) -> int:
    from gpuwiz.core.catalog import load_catalog
    from gpuwiz.core.config_io import load_config
    from gpuwiz.core.estimate import estimate
    from gpuwiz.core.report import render_estimate

    catalog = load_catalog(args.catalog)
    req = load_config(args.config, catalog=catalog)
    inputs_loaded()
    if args.gpu is not None:
        from gpuwiz.core.errors import GpuwizError

        try:
            catalog.gpu(args.gpu)  # did-you-mean for an unknown id
        except GpuwizError as exc:
            raise GpuwizError(f"gpuwiz: --gpu: {exc}") from None
    from gpuwiz.core.errors import GpuwizError

    try:
        est = estimate(req, catalog, gpu=args.gpu, count=args.count, gpus_per_node=args.gpus_per_node)
    except GpuwizError as exc:
        raise _in_config(exc, args.config) from None
    emit(render_estimate(est, args.format))
    return 0


def cmd_recommend(args: argparse.Namespace) -> int:
    from gpuwiz.core.catalog import load_catalog
    from gpuwiz.core.config_io import load_config
    from gpuwiz.core.recommend import recommend
    from gpuwiz.core.report import render_recommendation

    catalog = load_catalog(args.catalog)
    req = load_config(args.config, catalog=catalog)
    inputs_loaded()
    from gpuwiz.core.errors import GpuwizError

    inputs = {"config": args.config, "catalog overlay": args.catalog, "model's config.json": _hf_path(req, args.config)}
    if args.output:
        check_output(args.output, inputs, args.force)  # before the work: fail fast
    if args.output and os.path.realpath(args.output) == os.path.realpath(args.config):
        raise GpuwizError(f"{args.output}: -o would overwrite the config with the report; give another file name")
    if args.have == "local":
        req = _have_local(req, catalog)
    try:
        rec = recommend(req, catalog, objective=args.objective)
    except GpuwizError as exc:
        raise _in_config(exc, args.config) from None
    _write_out(render_recommendation(rec, req, args.format), args.output, inputs=inputs, force=args.force)
    return 0


def _have_local(req: Any, catalog: Any) -> Any:
    """The config plus this machine's GPUs as owned hardware; says plainly when it finds none."""
    from gpuwiz.calibrate.gpus import match_gpu
    from gpuwiz.core.models import HaveSpec
    from gpuwiz.probe.inventory import detect_gpus

    inv = detect_gpus()
    if not inv.gpus:
        sys.stderr.write(f"gpuwiz: --have local: {inv.note}; recommending without owned hardware\n")
        return req
    gpu_id = match_gpu(inv.gpus[0].name, catalog)
    if gpu_id is None:
        sys.stderr.write(f"gpuwiz: --have local: found {len(inv.gpus)}x {inv.gpus[0].name}, which is not in the "
                         "catalog; recommending without it (add it with a catalog overlay)\n")
        return req
    sys.stderr.write(f"gpuwiz: --have local: {len(inv.gpus)}x {inv.gpus[0].name} ({gpu_id}) via {inv.via}\n")
    have = HaveSpec(gpu=gpu_id, count=len(inv.gpus), gpus_per_node=len(inv.gpus))
    return req.model_copy(update={"have": (*req.have, have)})


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    def fmt(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=False)).rstrip()

    return "\n".join([fmt(headers), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows]) + "\n"


def _num(x: float | None, spec: str = ".0f") -> str:
    return "-" if x is None else format(x, spec)


def cmd_catalog(args: argparse.Namespace) -> int:
    from gpuwiz.core.catalog import load_catalog

    args.section = args.section or "gpus"
    if args.section == "import":
        inputs_loaded()
        return cmd_catalog_import(args)
    catalog = load_catalog(getattr(args, "catalog", None))
    inputs_loaded()
    sections: dict[str, list[Any]] = {"gpus": catalog.gpus, "models": catalog.models, "clouds": catalog.cloud_instances}
    items = sections[args.section]
    if args.format == "json":
        from gpuwiz.core.report import to_json

        emit(to_json([e.model_dump(mode="json") for e in items]))
        return 0
    if args.section == "gpus":
        rows = [[g.id, g.name, g.segment, f"{g.memory_gib:g} GB", _num(g.bf16_tflops or g.fp16_tflops),
                 _num(g.fp8_tflops), f"{g.tdp_w:.0f} W", "yes" if g.nvlink_multi_gpu else "-",
                 _num(g.price_new_usd, ",.0f") + ("" if g.sold_new else " (last list)"), g.price_new_observed or "-",
                 _num(g.price_used_usd, ",.0f")] for g in catalog.gpus]
        text = _table(["id", "name", "segment", "memory", "bf16 TF", "fp8 TF", "TDP", "NVSwitch", "new $",
                       "price observed", "used $"], rows)
    elif args.section == "models":
        rows = [[m.id, m.name, m.family, f"{m.params_b:g}B", _num(m.layers, "d"), _num(m.hidden, "d"),
                 _num(m.seq_len, "d")] for m in catalog.models]
        text = _table(["id", "name", "family", "params", "layers", "hidden", "seq_len"], rows)
    else:
        from gpuwiz.core.market import age_months
        from gpuwiz.core.money import format_money

        today = _today()
        rows = []
        for c in catalog.cloud_instances:
            age = age_months(c.observed, today)
            rows.append([c.id, c.provider, c.instance_type, f"{c.gpu_count}x {c.gpu}", c.region, c.country, c.tier,
                         format_money(c.price_per_hour, c.currency), f"${c.price_usd_per_hour:,.2f}",
                         _num(c.spot_usd_per_hour, ",.2f"), c.observed, f"{age} mo" + (" OLD" if age > 12 else "")])
        text = _table(["id", "provider", "instance", "gpus", "region", "country", "tier", "price/h", "USD/h",
                       "spot USD/h", "observed", "age"], rows)
    emit(text)
    return 0


def _today() -> str:
    import datetime as dt

    from gpuwiz.core.errors import GpuwizError, printable

    env = os.environ.get("GPUWIZ_TODAY")
    if not env:
        return dt.date.today().isoformat()
    try:  # the catalog's price ages are counted from it: a date, or a one-line error
        return dt.date.fromisoformat(env).isoformat()
    except ValueError:
        raise GpuwizError(f"GPUWIZ_TODAY: {printable(env)!r} is not a date (YYYY-MM-DD); unset it to use "
                          "today's date") from None


def cmd_catalog_import(args: argparse.Namespace) -> int:
    import datetime as dt
    from pathlib import Path

    from gpuwiz.core import skypilot
    from gpuwiz.core.catalog import load_catalog
    from gpuwiz.core.errors import GpuwizError
    from gpuwiz.core.yamlio import atomic_write_text, read_text

    path = Path(args.path)
    cloud = (args.cloud or path.resolve().parent.name).lower()
    try:
        observed = args.observed or dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC).date().isoformat()
    except OSError:
        observed = ""
    if args.observed and not __import__("re").fullmatch(r"\d{4}(-\d{2}(-\d{2})?)?", args.observed):
        raise GpuwizError(f"--observed: {args.observed!r} is not a date (YYYY-MM-DD)")
    out = Path(args.output)
    # the one -o rule: never the CSV it reads, never a link / FIFO / device / folder, --force to replace
    check_output(args.output, {"price list": args.path}, args.force)
    text = read_text(path, max_bytes=skypilot.MAX_CSV_BYTES)
    gpu_ids = {g.id for g in load_catalog().gpus}
    res = skypilot.read_csv(text, cloud, str(path), observed=observed, retrieved=_today(),
                            source=f"SkyPilot catalog {cloud}/vms.csv ({path.name})", gpu_ids=gpu_ids)
    for problem in res.problems[:skypilot.MAX_PROBLEMS_LISTED]:
        sys.stderr.write(problem + "\n")
    if len(res.problems) > skypilot.MAX_PROBLEMS_LISTED:
        sys.stderr.write(f"{path}: ... and {len(res.problems) - skypilot.MAX_PROBLEMS_LISTED} more bad rows\n")
    for acc, n in sorted(res.unmapped.items()):
        rows = f"{n} row{'s' if n != 1 else ''}"
        sys.stderr.write(f"{path}: accelerator {acc!r} ({rows}): no catalog GPU for it, not imported\n")
    if not res.offers:
        raise GpuwizError(f"{path}: no accelerator offer could be imported ({res.rows} rows read)")
    header = (f"gpuwiz catalog import skypilot {path.name} (cloud {cloud}); observed {observed}, retrieved {_today()}\n"
              f"{len(res.offers)} offers from {res.rows} rows; use with --catalog {out.name}")
    atomic_write_text(out, skypilot.overlay_text(res, header))
    emit(f"{out}: {len(res.offers)} offers from {res.rows} rows ({res.skipped_no_accelerator} without "
                     f"an accelerator skipped, {sum(res.unmapped.values())} unmapped, {len(res.problems)} bad)\n")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    try:
        from gpuwiz.validation.harness import run_validation
    except ImportError:  # pragma: no cover - shipped with the calibration work
        from gpuwiz.core.errors import GpuwizError

        raise GpuwizError("validate: the validation module is not available in this build") from None
    inputs = {"published runs file (--data)": args.data, "catalog overlay": args.catalog}
    if args.output:
        check_output(args.output, inputs, args.force)
    if args.ranges:
        check_output(args.ranges, inputs, args.force)
    ranges: list[str] | None = [] if args.ranges else None
    try:
        text = run_validation(data=args.data, fmt=args.format, catalog_overlay=args.catalog, ranges_out=ranges)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        if args.data is None or os.environ.get("GPUWIZ_DEBUG"):
            raise  # the bundled set failing is a bug: report it as one
        from gpuwiz.core.errors import GpuwizError, printable

        raise GpuwizError(f"{printable(args.data)}: an entry gpuwiz cannot read "
                          f"({type(exc).__name__}: {printable(' '.join(str(exc).split()))[:80]})") from None
    _write_out(text, args.output, inputs=inputs, force=args.force)
    if ranges:
        _write_out(ranges[0], args.ranges, inputs=inputs, force=args.force)
    return 0


def cmd_wizard(args: argparse.Namespace) -> int:
    from gpuwiz.tui.engine import engine_process_wanted, prestart_engine_process

    if engine_process_wanted():  # the engine's child loads the core while this process loads Textual
        from gpuwiz.i18n import current_language

        prestart_engine_process(args.catalog, current_language())
    from gpuwiz.core.catalog import load_catalog

    load_catalog(args.catalog)  # fail fast, before the screen switches, on a broken overlay
    if args.config is not None:
        from gpuwiz.core.yamlio import read_text

        read_text(args.config)  # a missing/unreadable file is a CLI error, not a blank wizard
    from gpuwiz.tui.app import create_app

    app = create_app(args.config, catalog_overlay=args.catalog, no_mouse=args.no_mouse, theme=args.theme,
                     engine_process=engine_process_wanted())
    app.run(mouse=not args.no_mouse)
    return int(app.return_code or 0)


def cmd_launch(args: argparse.Namespace) -> int:
    from gpuwiz.core.catalog import load_catalog
    from gpuwiz.core.config_io import load_config
    from gpuwiz.core.errors import GpuwizError
    from gpuwiz.core.recommend import recommend
    from gpuwiz.launch import generate, job_from
    from gpuwiz.launch.job import owned_run
    from gpuwiz.launch.write import write_files

    catalog = load_catalog(args.catalog)
    req = load_config(args.config, catalog=catalog)
    inputs_loaded()
    try:
        rec = recommend(req, catalog)
        owned = owned_run(req, rec, catalog)
    except GpuwizError as exc:
        raise _in_config(exc, args.config) from None
    if owned is not None and rec.owned_pick is not None:  # the team's own GPUs do the run: files for them
        from gpuwiz.core.whatif import owned_part

        emit(_("owned hardware does this run: launch files for {owned}\n").format(owned=owned_part(rec.owned_pick)))
        req, rec = owned
    files = generate(args.target, job_from(req, rec, catalog, os.path.basename(args.config), owned=owned is not None))
    out = args.output or f"launch-{args.target}"
    paths = write_files(out, files, force=args.force)
    for path in paths:
        emit(f"wrote {path}\n")
    return 0


def _calibration_effect(req: Any, catalog: Any, cal: Any) -> list[str]:
    """How the calibration changes the config's estimate at the measured point (comment lines)."""
    from gpuwiz.core.errors import GpuwizError
    from gpuwiz.core.estimate import estimate

    if not cal.gpu:
        return ["the log does not say which GPU (pass --gpu) -- no before/after estimate"]
    try:
        before = estimate(req.model_copy(update={"calibration": None}), catalog, gpu=cal.gpu, count=cal.count,
                          gpus_per_node=cal.gpus_per_node)
        after = estimate(req.model_copy(update={"calibration": cal}), catalog, gpu=cal.gpu, count=cal.count,
                         gpus_per_node=cal.gpus_per_node)
    except GpuwizError as exc:
        return [f"no before/after estimate: {exc.problems[0]}"]
    where = f"{after.plan.gpus}x {after.gpu_name}"
    lines = [f"with this calibration, the config's estimate on {where}: {before.time.wall_hours:,.1f} h -> "
             f"{after.time.wall_hours:,.1f} h per run; {before.memory.per_gpu_gib:.1f} -> "
             f"{after.memory.per_gpu_gib:.1f} GiB per GPU"]
    return [*lines, "other GPU types and counts scale by the same measured/model ratio (README: how it scales)"]


def cmd_calibrate(args: argparse.Namespace) -> int:
    from gpuwiz.calibrate.logs import file_time_iso, read_log
    from gpuwiz.calibrate.section import Where, calibration_from, calibration_yaml
    from gpuwiz.core.catalog import load_catalog
    from gpuwiz.core.config_io import load_config
    from gpuwiz.core.errors import GpuwizError

    catalog = load_catalog(args.catalog)
    req = load_config(args.config, catalog=catalog) if args.config else None
    if args.output:
        for other in (args.config, args.log):
            if other and os.path.realpath(args.output) == os.path.realpath(other):
                raise GpuwizError(f"{args.output}: -o would overwrite {other}; gpuwiz never edits it in place "
                                  "(give another file name and paste the section)")
        from pathlib import Path

        from gpuwiz.launch.write import check_output_file

        check_output_file(Path(args.output), args.force)  # before reading a long log
    if args.gpu is not None:
        try:
            catalog.gpu(args.gpu)
        except GpuwizError as exc:
            raise GpuwizError(f"gpuwiz: --gpu: {exc}") from None
    m = read_log(args.log, args.log_format, warmup_steps=max(0, args.warmup_steps))
    where = Where(gpu=args.gpu, count=args.count, gpus_per_node=args.gpus_per_node, req=req)
    cal = calibration_from(m, catalog, where, os.path.basename(args.log), file_time_iso(args.log))
    comment = [f"gpuwiz calibrate {os.path.basename(args.log)}: paste this section into your config"]
    if req is not None:
        comment += _calibration_effect(req, catalog, cal)
    text = calibration_yaml(cal, "\n".join(comment))
    if args.output:
        from gpuwiz.launch.write import write_text_file

        write_text_file(args.output, text, force=args.force)
        emit(f"wrote {args.output}\n")
    else:
        emit(text)
    return 0


def cmd_probe(args: argparse.Namespace) -> int:
    from gpuwiz.calibrate.logs import utc_now_iso
    from gpuwiz.calibrate.section import calibration_yaml
    from gpuwiz.core.catalog import load_catalog
    from gpuwiz.core.config_io import load_config
    from gpuwiz.core.errors import GpuwizError
    from gpuwiz.probe.inventory import detect_gpus
    from gpuwiz.probe.run import render, run_probe

    if not (0 < args.budget_s <= 3600):
        raise GpuwizError(f"probe: --budget-s must be between 0 and 3600 seconds, got {args.budget_s:g}")
    catalog = load_catalog(args.catalog)
    req = load_config(args.config, catalog=catalog) if args.config else None
    if args.output:
        from pathlib import Path

        from gpuwiz.launch.write import check_output_file

        if args.config and os.path.realpath(args.output) == os.path.realpath(args.config):
            raise GpuwizError(f"{args.output}: -o would overwrite the config; gpuwiz never edits it in place")
        check_output_file(Path(args.output), args.force)
    res = run_probe(detect_gpus(), catalog, req, budget_s=args.budget_s, progress=sys.stderr,
                    measured_at=utc_now_iso())
    emit(render(res))
    assert res.calibration is not None
    text = calibration_yaml(res.calibration, "gpuwiz probe: paste this section into your config"
                            + ("\nmeasured on CPU: not representative of any GPU" if res.on_cpu else ""))
    if args.output:
        from gpuwiz.launch.write import write_text_file

        write_text_file(args.output, text, force=args.force)
        emit(f"wrote {args.output}\n")
    else:
        emit("\n" + text)
    return 0


COMMANDS = {"estimate": cmd_estimate, "recommend": cmd_recommend, "catalog": cmd_catalog, "validate": cmd_validate,
            "launch": cmd_launch, "calibrate": cmd_calibrate, "probe": cmd_probe}


# Subcommands whose -o names a file that otherwise goes to stdout: there `-o -` means stdout.
STDOUT_DASH = frozenset({"recommend", "validate", "calibrate", "probe"})


# Headless start-up without the cycle collector: imports, the catalog and the config make ~200k objects
# and no garbage, and each collector pass walks every one of them. The commands below switch it off
# until their inputs are loaded, then freeze what exists (the modules, the catalog: never garbage) and
# switch it on for the engine, which then only walks what it makes (~80 M instructions, 7 % of a run).
STARTUP_WITHOUT_GC = frozenset({"estimate", "recommend", "catalog", "launch"})
_OWN_PROCESS = False  # main() of the process itself (not called in-process with an argv, as the tests do)


def inputs_loaded() -> None:
    """The command's inputs are loaded: the cycle collector runs again (see STARTUP_WITHOUT_GC)."""
    import gc

    if not gc.isenabled():
        gc.freeze()
        if _OWN_PROCESS:  # nothing but the engine runs from here on: its answers' objects join the frozen ones
            from gpuwiz.core import gcpause

            gcpause.keep_frozen()
        gc.enable()


PLUGINS_OFF = ("__all__", "1", "true")  # the values of PYDANTIC_DISABLE_PLUGINS that turn every plugin off
PLUGIN_LOADER = "pydantic.plugin._loader"


def skip_plugin_loader() -> None:
    """With plugins off, pydantic's plugin loader returns no plugins, but importing it imports
    importlib.metadata (email, zipfile, csv, ...): ~70 M instructions, a fifth of the
    `import pydantic, yaml` floor. Stand in for it with a module whose ``get_plugins`` returns what the
    loader returns then (nothing); anything else a pydantic version reads from it loads the real one."""
    if PLUGIN_LOADER in sys.modules:
        return
    import types

    stub = types.ModuleType(PLUGIN_LOADER, "gpuwiz's stand-in: plugins are off (PYDANTIC_DISABLE_PLUGINS)")

    def get_plugins() -> tuple[()]:
        return ()

    def real(name: str) -> Any:
        if name.startswith("__"):  # a probe for __file__, __path__, ... (a module without them)
            raise AttributeError(name)
        import importlib

        if sys.modules.get(PLUGIN_LOADER) is stub:
            del sys.modules[PLUGIN_LOADER]
        return getattr(importlib.import_module(PLUGIN_LOADER), name)

    stub.get_plugins = get_plugins  # type: ignore[attr-defined]
    stub.__getattr__ = real  # type: ignore[method-assign]
    sys.modules[PLUGIN_LOADER] = stub


# Commands whose process ends without the interpreter's teardown once their output is flushed: they hold
# no open files and no threads then, and the teardown (freeing ~200k objects module by module) is 2 % of
# their run. Only when gpuwiz is the process (`gpuwiz ...`, `python -m gpuwiz ...`), never in-process.
FAST_EXIT = frozenset({"estimate", "recommend", "catalog"})


def fast_exit(rc: int) -> None:
    """End the process now with ``rc``: the exit handlers run, the output streams are flushed, the
    interpreter's teardown is skipped. Returns (and the usual exit follows) when a stream cannot be flushed
    or another thread runs."""
    import atexit
    import threading

    if threading.active_count() > 1:
        return
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe or stream: the usual exit reports it as Python does
        return
    os._exit(rc)


def _silence_stdout() -> None:
    try:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the flush at exit
    except OSError:
        pass


def cannot_write_output(exc: OSError) -> int:
    """Standard output took no more (a full disk, /dev/full, a dead device): one line, exit 1."""
    reason = exc.strerror or type(exc).__name__
    sys.stderr.write(_("gpuwiz: cannot write the output: {reason}").format(reason=reason) + "\n")
    _silence_stdout()
    return 1


def flush_output(rc: int) -> int:
    """Flush standard output at the end of a command: what could not be written is an error, not a lost answer."""
    if sys.stdout is None:  # started without a standard output (fd 1 closed)
        return rc
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away (`| head`): as Unix tools do, no message
        _silence_stdout()
    except OSError as exc:
        return cannot_write_output(exc)
    except ValueError:  # a closed stream
        pass
    return rc


class OutputError(Exception):
    """Standard output refused a write (the OSError is ``__cause__``): reported as such, not as an internal error."""


def emit(text: str) -> None:
    """Write ``text`` to standard output; an OSError there (other than a closed pipe) is an OutputError."""
    try:
        sys.stdout.write(text)
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise OutputError from exc


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None and not {"-h", "--help", "--version"} & set(sys.argv[1:]):
        # gpuwiz is the process: the code that dataclasses & co. generate, compiled, from the cache folder
        from gpuwiz._codegen import install_codegen

        install_codegen("cli" if sys.argv[1:2] and sys.argv[1] in SUBCOMMANDS else "wizard")
    try:
        rc = _main(argv)
    except SystemExit as exc:  # argparse ends --help and --version with exit 0: their text is flushed as any output
        if argv is not None or exc.code not in (0, None):
            raise
        rc = 0
    if argv is None:
        rc = flush_output(rc)
    if argv is None and sys.argv[1:2] and sys.argv[1] in FAST_EXIT:
        fast_exit(rc)
    return rc


def _main(argv: Sequence[str] | None = None) -> int:
    global _OWN_PROCESS
    argv_given = argv is not None
    _OWN_PROCESS = not argv_given
    argv = list(sys.argv[1:] if argv is None else argv)
    # pydantic looks for plugins in every installed package's metadata before it builds the first
    # schema (~7 % of a headless run); gpuwiz uses none. An explicit PYDANTIC_DISABLE_PLUGINS wins.
    if os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__") in PLUGINS_OFF:
        skip_plugin_loader()
    import gc

    paused_gc = False
    try:
        set_language(argv)
        if (argv and argv[0] in SUBCOMMANDS) or argv[:1] in (["-h"], ["--help"]):
            safe_streams()  # headless output only: the wizard's terminal driver writes its own bytes
        if argv and argv[0] in STARTUP_WITHOUT_GC and gc.isenabled():
            gc.disable()
            paused_gc = True
        if argv and argv[0] in SUBCOMMANDS:
            args = build_parser().parse_args(argv)
            if getattr(args, "output", None) == "-" and args.command in STDOUT_DASH:
                args.output = None  # `-o -` is standard output, as in every Unix tool, not a file named "-"
            return COMMANDS[args.command](args)
        if argv and argv[0] in ("-h", "--help"):
            build_wizard_parser().print_help()  # the wizard's options, then the subcommands
            return 0
        args = build_wizard_parser().parse_args(argv)
        return cmd_wizard(args)
    except KeyboardInterrupt:
        sys.stderr.write("gpuwiz: interrupted\n")
        return 130
    except BrokenPipeError:
        _silence_stdout()
        return 0
    except Exception as exc:  # the outermost boundary: every error becomes an exit code (re-raised under GPUWIZ_DEBUG)
        from gpuwiz.core.errors import GpuwizError, printable

        if isinstance(exc, OutputError) and isinstance(exc.__cause__, OSError):  # the output's, not the engine's
            return cannot_write_output(exc.__cause__)
        if isinstance(exc, GpuwizError):
            for problem in exc.problems:  # never echo a user's escape sequences raw to the terminal
                sys.stderr.write(printable(" ".join(str(problem).splitlines())) + "\n")
            return EXIT_USAGE
        if os.environ.get("GPUWIZ_DEBUG"):
            raise
        sys.stderr.write(printable(f"gpuwiz: internal error: {type(exc).__name__}: {' '.join(str(exc).split())} "
                                   "(run with GPUWIZ_DEBUG=1 for details, and please report it)") + "\n")
        return 1
    finally:
        if paused_gc:
            gc.enable()  # an error before the inputs were loaded
            if argv_given:  # called in-process (tests, a library user): their objects are theirs to collect
                gc.unfreeze()
