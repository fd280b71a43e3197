"""The `gpuwiz` command as a user (or a CI script) runs it: subprocesses, exit codes, output shapes."""

import json
import os

import pytest

from conftest import EXAMPLES, run_cli

SMALL = EXAMPLES / "small-team-lora-7b.yaml"


def test_version_help_and_python_m():
    out = run_cli("--version")
    assert out.returncode == 0 and out.stdout.startswith("gpuwiz ")
    out = run_cli("--help")
    assert out.returncode == 0
    for word in ("recommend", "estimate", "catalog"):
        assert word in out.stdout


def test_estimate_json_has_the_documented_keys():
    out = run_cli("estimate", SMALL, "--gpu", "a100-80gb-sxm", "--count", "8", "--format", "json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["model"]["params_total"] > data["model"]["params_trainable"] > 0  # LoRA
    assert data["model"]["params_active"] == data["model"]["params_total"]
    mem = data["memory"]
    assert set(mem["breakdown"]) >= {"weights", "gradients", "optimizer", "activations", "overhead"}
    assert mem["per_gpu_gib"] == pytest.approx(sum(mem["breakdown"].values()), rel=0.01)
    assert isinstance(mem["fits"], bool) and -10 < mem["headroom_frac"] < 1
    plan = data["plan"]
    assert plan["gpus"] == 8 and plan["nodes"] == 1
    assert plan["dp"] * plan["tp"] * plan["pp"] == 8
    assert "zero_stage" in plan
    assert data["throughput"]["tokens_per_s_per_gpu"] > 0 and 0 < data["throughput"]["mfu"] < 1
    assert data["time"]["gpu_hours"] == pytest.approx(data["time"]["wall_hours"] * 8, rel=1e-6)
    assert data["assumptions"] and all(isinstance(a, str) for a in data["assumptions"])


def test_estimate_more_gpus_is_faster_from_the_command_line():
    times = []
    for n in (1, 8):
        out = run_cli("estimate", SMALL, "--gpu", "h100-sxm", "--count", n, "--format", "json")
        assert out.returncode == 0, out.stderr
        times.append(json.loads(out.stdout)["time"]["wall_hours"])
    assert times[1] < times[0] / 4


def test_recommend_json_md_and_text():
    out = run_cli("recommend", EXAMPLES / "enterprise-70b-pretrain.yaml", "--format", "json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    build = data["build"]
    for key in ("gpu", "gpus_per_node", "nodes", "cpu", "ram_gb", "storage", "network", "psu_w", "software"):
        assert key in build
    assert data["estimate"]["memory"]["fits"] is True
    assert len(data["alternatives"]) >= 3
    assert len({a["gpu"] for a in data["alternatives"]}) >= 3
    for alt in data["alternatives"]:
        assert {"gpu", "count", "wall_hours", "cost_per_run_usd", "reason"} <= set(alt) and alt["reason"]
    cost = data["cost"]
    assert cost["verdict"] in ("rent", "buy", "hybrid")
    assert {"breakeven_utilization", "payback_months", "monthly", "cloud", "onprem"} <= set(cost)
    assert all({"id", "severity", "message", "source"} <= set(p) for p in data["pitfalls"])

    md = run_cli("recommend", SMALL, "--format", "md")
    assert md.returncode == 0, md.stderr
    assert md.stdout.startswith("# gpuwiz recommendation")
    assert "## Rent vs buy" in md.stdout and "| Item |" in md.stdout

    text = run_cli("recommend", SMALL, "--objective", "fastest")
    assert text.returncode == 0 and "Verdict:" in text.stdout


def test_recommend_output_file_is_the_same_report(tmp_path):
    target = tmp_path / "memo.md"
    out = run_cli("recommend", SMALL, "--format", "md", "-o", target)
    assert out.returncode == 0, out.stderr
    assert out.stdout == ""
    assert target.read_text() == run_cli("recommend", SMALL, "--format", "md").stdout


def test_dash_output_is_stdout_not_a_file_named_dash(tmp_path):
    out = run_cli("recommend", SMALL, "--format", "md", "-o", "-", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout == run_cli("recommend", SMALL, "--format", "md").stdout
    assert not (tmp_path / "-").exists()


def test_catalog_listing():
    out = run_cli("catalog", "gpus")
    assert out.returncode == 0 and "h100-sxm" in out.stdout
    h100 = next(line for line in out.stdout.splitlines() if line.startswith("h100-sxm "))
    assert "price observed" in out.stdout and h100.split()[-2:] == ["2025-01-31", "23,500"]  # (new $ dated; used $)
    v100 = next(line for line in out.stdout.splitlines() if line.startswith("v100-32gb-sxm2 "))
    assert "11,458 (last list)" in v100  # no longer sold new: its old list price says so
    out = run_cli("catalog", "models", "--format", "json")
    ids = {m["id"] for m in json.loads(out.stdout)}
    assert {"llama-2-7b", "resnet-50", "mixtral-8x7b"} <= ids
    out = run_cli("catalog", "clouds")
    assert out.returncode == 0 and "p5.48xlarge" in out.stdout


@pytest.mark.parametrize(
    "args,pattern",
    [
        (["estimate", "nope.yaml", "--gpu", "h100-sxm", "--count", "1"], r"^nope.yaml: no such file$"),
        (["estimate", str(SMALL), "--gpu", "h100", "--count", "1"], r"h100.*did you mean"),
        (["estimate", str(SMALL), "--count", "0"], r"--count: must be at least 1"),
        (["recommend", str(SMALL), "--objective", "cheap"], r"invalid choice"),
        (["catalog", "gpus", "--catalog", "missing-overlay.yaml"], r"missing-overlay.yaml: no such file"),
    ],
)
def test_bad_input_is_one_line_exit_2(args, pattern):
    import re

    out = run_cli(*args)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert re.search(pattern, out.stderr.strip(), re.M), out.stderr


def test_bad_config_names_file_line_and_field(tmp_path):
    cfg = tmp_path / "team.yaml"
    cfg.write_text("version: 1\nmodel:\n  preset: llama-2-7b\ntraining:\n  precision: bf17\n")
    before = cfg.read_bytes()
    out = run_cli("recommend", cfg)
    assert out.returncode == 2
    assert out.stderr.startswith(f"{cfg}:5: training.precision: ")
    assert cfg.read_bytes() == before


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_help_names_every_subcommand(lang):
    """`gpuwiz --help`'s subcommands line lists each subparser (launch, calibrate and probe were missing)."""
    import argparse

    from gpuwiz.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    out = run_cli("--lang", lang, "--help")
    assert out.returncode == 0, out.stderr
    line = next(x for x in out.stdout.splitlines() if "gpuwiz COMMAND --help" in x)
    names = set(line.split("：" if lang != "en" else ":", 1)[1].replace("、", ",").replace(" ", "").split(","))
    assert set(sub.choices) <= names, sorted(set(sub.choices) - names)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("args", [
    ("recommend", SMALL, "--format", "json"), ("recommend", SMALL), ("recommend", SMALL, "--format", "md"),
    ("estimate", SMALL, "--gpu", "a100-80gb-sxm", "--format", "json"), ("catalog", "gpus"),
    ("--help",), ("recommend", "--help"), ("--version",),
])
def test_output_that_cannot_be_written_is_one_line_and_a_failure(args):
    """Standard output on a full disk (/dev/full): one line saying the output could not be written, exit 1,
    no traceback and no 'internal error'."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "GPUWIZ_DEBUG"}
    with open("/dev/full", "w") as full:
        out = subprocess.run([sys.executable, "-m", "gpuwiz", *map(str, args)], stdout=full, stderr=subprocess.PIPE,
                             text=True, env=env, timeout=120)
    assert out.returncode == 1
    assert out.stderr.splitlines() == ["gpuwiz: cannot write the output: No space left on device"]


def test_a_closed_pipe_is_still_no_error():
    """`gpuwiz recommend ... | head -1`: the reader leaving early is not a failure and prints nothing on stderr."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "gpuwiz", "recommend", str(SMALL), "--format", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(10)
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 0 and err == b""


@pytest.mark.parametrize("columns", [None, "100", "40", "0", "-3", "wide"])
def test_help_is_as_wide_as_argparse_would_make_it(monkeypatch, columns):
    """The parsers work out argparse's help width without importing shutil: the same width, whatever $COLUMNS says."""
    import shutil

    from gpuwiz.cli import help_width

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    monkeypatch.delenv("LINES", raising=False)
    assert help_width() == shutil.get_terminal_size().columns - 2


def _readme_samples() -> list[tuple[list[str], list[str]]]:
    """The README's ```console samples: (the command's arguments, the lines shown after it), per `$ gpuwiz` line."""
    import shlex

    text = (EXAMPLES.parent / "README.md").read_text(encoding="utf-8")
    out: list[tuple[list[str], list[str]]] = []
    for block in text.split("```console")[1:]:
        for line in block.split("```", 1)[0].strip("\n").splitlines():
            if line.startswith("$ gpuwiz "):
                out.append((shlex.split(line[2:], comments=True)[1:], []))
            elif out:
                out[-1][1].append(line)
    return out


@pytest.mark.parametrize("args, shown", _readme_samples(), ids=lambda x: " ".join(x)[:60] if x else "")
def test_the_readme_shows_what_the_command_prints(args, shown):
    """Every line the README shows after a `$ gpuwiz ...` command (its own wrapping aside; '...' marks a cut)
    is in what the command prints today: the front door's figures are the product's, not a past run's. A
    `| jq` sample compares the fields it shows with the JSON's (the first name of the jq path picks the part)."""
    import re

    part = None
    if "|" in args:  # `... --format json | jq -c '.build | {...}'`
        part = next(a for a in args[args.index("|"):] if a.startswith(".")).lstrip(".").split(" ")[0].split("|")[0]
        args = args[: args.index("|")]
    out = run_cli(*args, cwd=EXAMPLES.parent)
    assert out.returncode == 0, out.stderr
    flat = " ".join(out.stdout.split())
    for line in shown:
        text = " ".join(line.split()).removesuffix("...").strip()
        if not text or set(text) <= set("|. "):
            continue
        if part is not None:
            got = json.loads(out.stdout)[part]
            pairs = re.findall(r'"(\w+)":\s*("[^"]*"|[\w.]+)', text)
            assert pairs, text
            for key, value in pairs:
                assert got[key] == json.loads(value), (part, key, value)
            continue
        assert text in flat, text
