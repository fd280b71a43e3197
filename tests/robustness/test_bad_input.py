"""The bad-input corpus (tests/data/bad/): every hostile or broken file gives exit code 2 and
one-line problems on stderr naming the file (and line and field where there is one), never a
traceback, never a raw control character on the terminal, and never a changed file.

Most cases run in-process through ``gpuwiz.cli.main`` (fast); the ones marked ``subprocess: true``
in expected.yaml also run as a real ``python -m gpuwiz`` process.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gpuwiz.cli import main

CORPUS = Path(__file__).resolve().parents[1] / "data" / "bad"
CASES: list[dict] = yaml.safe_load((CORPUS / "expected.yaml").read_text(encoding="utf-8"))
GOOD = "version: 1\nmodel:\n  preset: llama-2-7b\ndata:\n  tokens: 1T\n"
PWNED = Path("/tmp/gpuwiz-pwned")


def _case_id(case: dict) -> str:
    return f"{case['file']}-{case.get('run', 'recommend')}"


def _hashes(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def _argv(case: dict, path: str, good: str) -> list[str]:
    run = case.get("run", "recommend")
    if run == "recommend":
        return ["recommend", path] + (["--format", "json"] if case.get("ok") else [])
    if run == "estimate":
        return ["estimate", path, "--gpu", "h100-sxm", "--count", "8"]
    if run == "overlay":
        return ["recommend", good, "--catalog", path]
    if run == "data":
        return ["validate", "--data", path, "--format", "json"]
    if run == "hf":  # the caller passes the config that points at the HF file
        return ["recommend", path]
    raise AssertionError(f"unknown run kind {run!r} in expected.yaml")


def _hf_config(tmp: Path, hf_file: str) -> str:
    """A config whose model.hf_config is ``hf_file`` (errors then name this config, line 3)."""
    import json

    cfg = tmp / "uses-hf.yaml"
    cfg.write_text(f"version: 1\nmodel:\n  hf_config: {json.dumps(hf_file)}\ndata:\n  tokens: 1B\n", encoding="utf-8")
    return str(cfg)


def check_finite_json(text: str) -> None:
    """Strict JSON: no NaN / Infinity tokens anywhere."""
    import json

    def refuse(name: str) -> None:
        raise AssertionError(f"non-finite number {name} in the JSON output")

    json.loads(text, parse_constant=refuse)


def check_stderr(err: str, path: str, pattern: str) -> None:
    """The contract for a user error on stderr."""
    assert "Traceback" not in err, err
    assert "internal error" not in err, err
    lines = err.splitlines()
    assert lines, "no message on stderr"
    assert err.endswith("\n")
    for line in lines:
        assert line.strip(), f"blank line on stderr: {err!r}"
        bad = [ch for ch in line if not ch.isprintable()]
        assert not bad, f"raw control/unprintable characters {bad!r} echoed to the terminal: {line!r}"
        assert line.startswith(path), f"problem line does not name the file {path!r}: {line!r}"
    regex = pattern.replace("{file}", re.escape(path))
    assert any(re.match(regex, line) for line in lines), f"no line matches {regex!r}:\n{err}"


@pytest.fixture
def good_config(tmp_path: Path) -> str:
    p = tmp_path / "good.yaml"
    p.write_text(GOOD, encoding="utf-8")
    return str(p)


def test_corpus_is_complete():
    """Every file in the corpus has an expectation and every expectation has a file (>= 150 files),
    across every surface: configs, overlays, HF config.json files, drafts, published-runs data."""
    listed = {c["file"] for c in CASES}
    present = {p.name for p in CORPUS.iterdir()} - {"expected.yaml"}
    assert listed == present
    assert len(present) >= 150
    kinds = {c.get("run", "recommend") for c in CASES}
    assert kinds >= {"recommend", "estimate", "overlay", "hf", "draft", "data"}
    for c in CASES:
        assert ("error" in c) + ("notice" in c) + bool(c.get("ok")) == 1, c


FILE_CASES = [c for c in CASES if c.get("run") != "draft"]
DRAFT_CASES = [c for c in CASES if c.get("run") == "draft"]


@pytest.mark.parametrize("case", FILE_CASES, ids=_case_id)
def test_bad_file_in_process(case, good_config, capsys, tmp_path):
    before = _hashes(CORPUS)
    good_before = Path(good_config).read_bytes()
    path = str(CORPUS / case["file"])
    shown = _hf_config(tmp_path, path) if case.get("run") == "hf" else path
    rc = main(_argv(case, shown, good_config))
    out, err = capsys.readouterr()
    if case.get("ok"):  # hostile but valid: answered, strict JSON, nothing on stderr
        assert rc == 0 and err == "", err
        check_finite_json(out)
    else:
        check_stderr(err, shown, case["error"])
        assert out == "", "nothing may be printed on stdout when the input is refused"
        assert rc == 2
    assert _hashes(CORPUS) == before, "a bad input file was changed"
    assert Path(good_config).read_bytes() == good_before
    assert not PWNED.exists(), "a YAML tag executed code"


@pytest.mark.parametrize("case", DRAFT_CASES, ids=_case_id)
def test_bad_draft_is_set_aside(case, tmp_path):
    """A dead session's unreadable draft is never offered, never fatal: it is renamed
    ``*.bad-<time>`` (content kept, byte for byte) and a one-line notice says so."""
    from gpuwiz.tui import drafts

    state = tmp_path / "state"
    state.mkdir()
    original = (CORPUS / case["file"]).read_bytes()
    (state / "draft-99999999.json").write_bytes(original)  # pid 99999999 > pid_max: a dead session
    notices: list[str] = []
    assert drafts.read_draft(state, notices) is None
    assert len(notices) == 1 and "\n" not in notices[0], notices
    assert notices[0].isprintable(), notices
    assert re.search(case["notice"], notices[0]), notices[0]
    left = [p.name for p in state.iterdir()]
    assert len(left) == 1 and left[0].startswith("draft-99999999.json.bad-"), left
    assert (state / left[0]).read_bytes() == original
    assert drafts.read_draft(state, notices) is None and len(notices) == 1, "set aside once, then quiet"


SUBPROCESS_CASES = [c for c in FILE_CASES if c.get("subprocess")]


def _run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "GPUWIZ_DEBUG"}
    return subprocess.run([sys.executable, "-m", "gpuwiz", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=120)


@pytest.mark.parametrize("case", SUBPROCESS_CASES, ids=_case_id)
def test_bad_file_subprocess(case, good_config):
    """As a real process, with the file given relative to the working directory."""
    assert len(SUBPROCESS_CASES) >= 12
    before = _hashes(CORPUS)
    shown = case["file"]
    if case.get("run") == "hf":
        shown = _hf_config(Path(good_config).parent, str(CORPUS / case["file"]))
    res = _run(*_argv(case, shown, good_config), cwd=CORPUS)
    check_stderr(res.stderr, shown, case["error"])
    assert res.stdout == ""
    assert res.returncode == 2
    assert _hashes(CORPUS) == before
    assert not PWNED.exists()


# ---- cases made at test time --------------------------------------------------------------------


def _expect_refused(argv: list[str], path: str, pattern: str, capsys) -> None:
    rc = main(argv)
    out, err = capsys.readouterr()
    check_stderr(err, path, pattern)
    assert out == ""
    assert rc == 2


def test_directory(tmp_path, capsys):
    d = tmp_path / "configs.yaml"
    d.mkdir()
    _expect_refused(["recommend", str(d)], str(d), r"{file}: is a directory", capsys)
    _expect_refused(["catalog", "--catalog", str(d)], str(d), r"{file}: is a directory", capsys)
    assert list(d.iterdir()) == []


def test_missing_file(tmp_path, capsys, good_config):
    p = str(tmp_path / "nope.yaml")
    _expect_refused(["recommend", p], p, r"{file}: no such file", capsys)
    _expect_refused(["estimate", p, "--gpu", "h100-sxm", "--count", "8"], p, r"{file}: no such file", capsys)
    _expect_refused(["recommend", good_config, "--catalog", p], p, r"{file}: no such file", capsys)
    assert not Path(p).exists()


def test_unreadable_file_chmod(tmp_path, capsys):
    """chmod 000 -- meaningful when not root (root reads anyway; see the monkeypatched variant)."""
    p = tmp_path / "secret.yaml"
    p.write_text(GOOD)
    p.chmod(0)
    try:
        if os.access(p, os.R_OK):
            pytest.skip("running as root: chmod 000 does not stop reads")
        _expect_refused(["recommend", str(p)], str(p), r"{file}: permission denied", capsys)
    finally:
        p.chmod(0o600)
    assert p.read_text() == GOOD


def test_unreadable_file_simulated(tmp_path, capsys, monkeypatch, good_config):
    """The OS refuses the read (as for chmod 000 as a normal user, or an NFS permission error)."""
    import gpuwiz.core.yamlio as yamlio

    p = tmp_path / "secret.yaml"
    p.write_text(GOOD)
    real = os.open

    def deny(path, *args, **kwargs):
        if os.fspath(path).endswith("secret.yaml"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(yamlio.os, "open", deny)
    _expect_refused(["recommend", str(p)], str(p), r"{file}: permission denied", capsys)
    _expect_refused(["recommend", good_config, "--catalog", str(p)], str(p), r"{file}: permission denied", capsys)
    monkeypatch.undo()
    assert p.read_text() == GOOD


def test_io_error_on_read(tmp_path, capsys, monkeypatch):
    import errno

    import gpuwiz.core.yamlio as yamlio

    p = tmp_path / "flaky.yaml"
    p.write_text(GOOD)

    def eio(fd: int, n: int) -> bytes:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(yamlio.os, "read", eio)
    _expect_refused(["recommend", str(p)], str(p), r"{file}: cannot read: Input/output error", capsys)


@pytest.mark.parametrize("where", ["config", "overlay"])
def test_ten_megabyte_file(tmp_path, capsys, where, good_config):
    """A 10 MB file is refused by size before it is parsed (fast, bounded memory)."""
    import time

    p = tmp_path / "huge.yaml"
    with p.open("w") as fh:
        fh.write("version: 1\nmodel:\n  name: x\n")
        line = "# " + "padding " * 12 + "\n"
        while fh.tell() < 10_000_000:
            fh.write(line * 1000)
    digest = hashlib.sha256(p.read_bytes()).hexdigest()
    argv = ["recommend", str(p)] if where == "config" else ["recommend", good_config, "--catalog", str(p)]
    t0 = time.perf_counter()
    _expect_refused(argv, str(p), r"{file}: file is 10\.\d MB; gpuwiz reads YAML files up to \d+ MB", capsys)
    assert time.perf_counter() - t0 < 5
    assert hashlib.sha256(p.read_bytes()).hexdigest() == digest


def test_unknown_gpu_on_the_command_line(capsys, good_config):
    rc = main(["estimate", good_config, "--gpu", "h100x", "--count", "8"])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert re.fullmatch(r"gpuwiz: --gpu: unknown GPU id 'h100x' \(did you mean [^)]*h100-[^)]*\?\)\n", err), err


@pytest.mark.parametrize("count,why", [("0", "must be at least 1"), ("-3", "must be at least 1"),
                                       ("eight", "must be a whole number"), ("1e9", "must be a whole number")])
def test_bad_count_flag(count, why, capsys, good_config):
    with pytest.raises(SystemExit) as exc:
        main(["estimate", good_config, "--gpu", "h100-sxm", "--count", count])
    out, err = capsys.readouterr()
    assert exc.value.code == 2 and out == ""
    assert len(err.splitlines()) == 1 and why in err and "Traceback" not in err


def test_control_characters_in_file_name(tmp_path, capsys):
    """A file name carrying an escape sequence is not echoed raw either."""
    p = tmp_path / "evil\x1b[2J.yaml"
    _expect_refused(["recommend", str(p)], str(p).replace("\x1b", "\\x1b"), r"{file}: no such file", capsys)


def test_a_long_hostile_value_is_cut_short(tmp_path, capsys):
    p = tmp_path / "long.yaml"
    p.write_text("version: 1\ntraining:\n  method: " + "lora" * 5000 + "\n")
    rc = main(["recommend", str(p)])
    _, err = capsys.readouterr()
    assert rc == 2 and len(err) < 500, err


def test_debug_mode_is_the_only_way_to_a_traceback(tmp_path):
    """GPUWIZ_DEBUG=1 shows internal errors, but user errors stay one line even then."""
    p = tmp_path / "bad.yaml"
    p.write_text("version: 1\nmodle: {}\n")
    env = {**os.environ, "GPUWIZ_DEBUG": "1"}
    res = subprocess.run([sys.executable, "-m", "gpuwiz", "recommend", str(p)], capture_output=True, text=True,
                         env=env, timeout=120)
    assert res.returncode == 2
    assert res.stderr == f"{p}:2: modle: unknown key (did you mean model?)\n"
