"""Hostile paths, output targets, encodings and environment (issue 10, round 2).

Every file gpuwiz opens goes through one reader (``yamlio.read_file_bytes``): a FIFO, a device node,
a socket or a folder is refused with one line naming the path -- never a hang, never reading
/dev/zero until memory runs out. ``-o`` never destroys its own inputs, never replaces a link, FIFO
or device node with a plain file, and replaces an existing file only with ``--force``. Narrow output
encodings (LANG=C, latin-1, ascii) degrade glyphs to ASCII instead of crashing.

CI runs as root: nothing here aims at a real system file. FIFOs, sockets, symlinks and device nodes
are made in tmp_path (device nodes only where mknod is permitted).
"""

from __future__ import annotations

import json
import os
import re
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from gpuwiz.cli import main

GOOD = "version: 1\nmodel:\n  preset: llama-2-7b\ndata:\n  tokens: 1T\n"
HF_OK = {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 256, "num_attention_heads": 4,
         "intermediate_size": 512, "vocab_size": 1000, "max_position_embeddings": 512}


def _run(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
         timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    full = {k: v for k, v in os.environ.items() if k != "GPUWIZ_DEBUG"}
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "gpuwiz", *args], capture_output=True, env=full, cwd=cwd,
                          timeout=timeout)


def _one_line(err: str, path: str, what: str) -> None:
    assert "Traceback" not in err and "internal error" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(path) or path in lines[0], err
    assert re.search(what, lines[0]), err


def _mknod_chr(path: Path) -> bool:
    """A character device node (the same numbers as /dev/null) in tmp_path; False if not permitted."""
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, OSError):
        return False
    return True


@pytest.fixture
def cfg(tmp_path: Path) -> Path:
    p = tmp_path / "team.yaml"
    p.write_text(GOOD, encoding="utf-8")
    return p


# ---- reading: FIFO, device, socket, folder, symlink --------------------------------------------


@pytest.mark.parametrize("surface", ["config", "overlay", "hf", "data", "wizard"])
def test_a_fifo_is_refused_not_waited_on(tmp_path, cfg, surface):
    """As a real process with a timeout: a FIFO nobody writes to used to block forever."""
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    if surface == "config":
        args = ["recommend", str(fifo)]
    elif surface == "overlay":
        args = ["recommend", str(cfg), "--catalog", str(fifo)]
    elif surface == "hf":
        hf_cfg = tmp_path / "hf.yaml"
        hf_cfg.write_text(f"version: 1\nmodel:\n  hf_config: {fifo}\ndata:\n  tokens: 1B\n")
        args = ["recommend", str(hf_cfg)]
    elif surface == "data":
        args = ["validate", "--data", str(fifo)]
    else:
        args = [str(fifo)]  # the wizard refuses it before the screen switches
    res = _run(*args, timeout=60)
    assert res.returncode == 2, res
    _one_line(res.stderr.decode(), str(fifo) if surface != "hf" else str(tmp_path / "hf.yaml"),
              r"named pipe \(FIFO\), not a regular file")
    assert res.stdout == b""
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was replaced"


def test_a_device_node_is_refused_without_reading_it(tmp_path, capsys, cfg):
    dev = tmp_path / "zero"
    if not _mknod_chr(dev):
        pytest.skip("mknod not permitted here (not root)")
    for argv in (["recommend", str(dev)], ["recommend", str(cfg), "--catalog", str(dev)],
                 ["validate", "--data", str(dev)]):
        assert main(argv) == 2
        _one_line(capsys.readouterr().err, str(dev), r"is a device, not a regular file")
    assert stat.S_ISCHR(os.lstat(dev).st_mode)


def test_a_socket_is_refused(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(path))
    except OSError:
        pytest.skip("cannot bind a unix socket here")
    try:
        assert main(["recommend", str(path)]) == 2
        _one_line(capsys.readouterr().err, str(path), r"is a socket, not a regular file")
    finally:
        sock.close()


def test_a_folder_is_named_as_a_folder(tmp_path, capsys, cfg):
    """Never "does not exist" for a folder that exists."""
    folder = tmp_path / "configs"
    folder.mkdir()
    for argv in (["recommend", str(folder)], ["recommend", str(cfg), "--catalog", str(folder)],
                 ["validate", "--data", str(folder)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        _one_line(err, str(folder), r"is a directory")
        assert "does not exist" not in err and "no such" not in err


def test_a_missing_file_in_an_existing_folder_does_not_blame_the_folder(tmp_path, capsys):
    p = tmp_path / "nope.yaml"
    assert main(["recommend", str(p)]) == 2
    err = capsys.readouterr().err
    assert err == f"{p}: no such file\n"
    q = tmp_path / "gone" / "x.yaml"
    assert main(["recommend", str(q)]) == 2
    assert capsys.readouterr().err == f"{q}: no such file (folder {q.parent} does not exist)\n"


def test_a_symlink_to_a_regular_config_is_read(tmp_path, capsys, cfg):
    link = tmp_path / "link.yaml"
    link.symlink_to(cfg)
    assert main(["recommend", str(link), "--format", "json"]) == 0
    json.loads(capsys.readouterr().out)


def test_a_symlink_loop_is_one_line(tmp_path, capsys):
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.symlink_to(b)
    b.symlink_to(a)
    assert main(["recommend", str(a)]) == 2
    _one_line(capsys.readouterr().err, str(a), r"cannot read|symbolic link")


@pytest.mark.parametrize("kind", ["fifo", "folder_without_config_json", "device"])
def test_hf_config_hostile_targets(tmp_path, capsys, kind):
    target = tmp_path / "hf"
    if kind == "fifo":
        os.mkfifo(target)
        want = r"named pipe"
    elif kind == "device":
        if not _mknod_chr(target):
            pytest.skip("mknod not permitted here")
        want = r"is a device"
    else:
        target.mkdir()
        want = r"no such file"
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"version: 1\nmodel:\n  hf_config: {target}\ndata:\n  tokens: 1B\n")
    assert main(["recommend", str(cfg)]) == 2
    _one_line(capsys.readouterr().err, str(cfg), r"model\.hf_config: .*" + want)


def test_hf_config_that_is_fine_still_reads(tmp_path, capsys):
    hf = tmp_path / "config.json"
    hf.write_text(json.dumps(HF_OK))
    cfg = tmp_path / "c.yaml"
    cfg.write_text("version: 1\nmodel:\n  hf_config: config.json\ndata:\n  tokens: 1B\n")
    assert main(["recommend", str(cfg), "--format", "json"]) == 0
    json.loads(capsys.readouterr().out)


def test_the_reader_never_reads_past_the_cap(tmp_path):
    """A file that is larger than the cap is refused by size (fstat), before any read."""
    from gpuwiz.core.errors import GpuwizError
    from gpuwiz.core.yamlio import read_file_bytes

    p = tmp_path / "big.yaml"
    p.write_bytes(b"a" * 5000)
    with pytest.raises(GpuwizError, match=r"big\.yaml: file is 0\.0 MB; gpuwiz reads files up to"):
        read_file_bytes(p, max_bytes=4000)
    assert read_file_bytes(p, max_bytes=5000) == b"a" * 5000


# ---- output targets (-o) -------------------------------------------------------------------------


@pytest.fixture
def overlay(tmp_path: Path) -> Path:
    p = tmp_path / "prices.yaml"
    p.write_text("gpus:\n  - id: h100-sxm\n    price_new_usd: 25000\n    price_new_observed: '2026-11'\n")
    return p


def _digest(p: Path) -> bytes:
    return p.read_bytes()


def test_o_never_destroys_its_inputs(tmp_path, capsys, cfg, overlay):
    hf = tmp_path / "config.json"
    hf.write_text(json.dumps(HF_OK))
    hf_cfg = tmp_path / "hf.yaml"
    hf_cfg.write_text("version: 1\nmodel:\n  hf_config: .\ndata:\n  tokens: 1B\n")
    hard = tmp_path / "hardlink.yaml"
    os.link(cfg, hard)
    before = {p: _digest(p) for p in (cfg, overlay, hf, hf_cfg)}
    cases = [
        (["recommend", str(cfg), "--catalog", str(overlay), "-o", str(overlay), "--force"], "catalog overlay"),
        (["recommend", str(cfg), "-o", str(cfg), "--force"], "config"),
        (["recommend", str(cfg), "-o", str(hard), "--force"], "config"),  # the same file by another name
        (["recommend", str(hf_cfg), "-o", str(hf), "--force"], "model's config.json"),
        (["validate", "--data", str(overlay), "-o", str(overlay), "--force"], r"published runs file"),
    ]
    for argv, what in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        _one_line(err, argv[argv.index("-o") + 1], r"-o would overwrite the " + what)
    assert {p: _digest(p) for p in before} == before


def test_o_refuses_links_fifos_devices(tmp_path, capsys, cfg):
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me\n")
    link = tmp_path / "report.md"
    link.symlink_to(precious)
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    targets = [(link, r"is a symbolic link"), (fifo, r"named pipe .*replaces only regular files")]
    dev = tmp_path / "null"
    if _mknod_chr(dev):
        targets.append((dev, r"is a device.*replaces only regular files"))
    for target, want in targets:
        assert main(["recommend", str(cfg), "-o", str(target), "--force"]) == 2
        _one_line(capsys.readouterr().err, str(target), want)
    assert link.is_symlink() and precious.read_text() == "keep me\n"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    if dev.exists():
        assert stat.S_ISCHR(os.lstat(dev).st_mode)


def test_o_replaces_an_existing_file_only_with_force(tmp_path, capsys, cfg):
    out = tmp_path / "report.md"
    out.write_text("last week's report\n")
    assert main(["recommend", str(cfg), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == f"{out}: already exists; add --force to replace it, or give another file name\n"
    assert out.read_text() == "last week's report\n"
    assert main(["recommend", str(cfg), "-o", str(out), "--force", "--format", "md"]) == 0
    assert out.read_text().startswith("# gpuwiz recommendation")
    fresh = tmp_path / "new.md"
    assert main(["recommend", str(cfg), "-o", str(fresh)]) == 0  # a new file needs no --force
    assert fresh.exists()
    val = tmp_path / "VALIDATION.md"
    val.write_text("old\n")
    assert main(["validate", "-o", str(val)]) == 2
    assert "add --force" in capsys.readouterr().err and val.read_text() == "old\n"


# ---- encodings ---------------------------------------------------------------------------------


@pytest.mark.parametrize("env", [{"PYTHONIOENCODING": "ascii"}, {"PYTHONIOENCODING": "latin-1"},
                                 {"LANG": "C", "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0",
                                  "PYTHONIOENCODING": "ascii:strict"}],
                         ids=["ascii", "latin-1", "LANG=C"])
@pytest.mark.parametrize("args", [("recommend", "{cfg}"), ("estimate", "{cfg}", "--gpu", "h100-sxm", "--count", "8"),
                                  ("catalog", "models"), ("recommend", "{cfg}", "--format", "md")],
                         ids=["recommend", "estimate", "catalog", "recommend-md"])
def test_narrow_encodings_never_crash(cfg, env, args):
    argv = [a.replace("{cfg}", str(cfg)) for a in args]
    res = _run(*argv, env=env)
    assert res.returncode == 0, res.stderr.decode("utf-8", "replace")
    assert b"Traceback" not in res.stderr and res.stderr == b""
    encoding = env["PYTHONIOENCODING"].split(":")[0]
    res.stdout.decode(encoding)  # what was printed is valid in the terminal's encoding
    if encoding == "ascii" and argv[0] == "recommend":
        assert "x NVIDIA" in res.stdout.decode("ascii")


def test_narrow_encoding_validate_and_errors(tmp_path):
    bad = tmp_path / "b\u00e9ad\u2192.yaml"  # a file name the terminal cannot show either
    bad.write_text("version: 1\nmodle: {}\n")
    res = _run("recommend", str(bad), env={"PYTHONIOENCODING": "ascii"})
    assert res.returncode == 2 and b"Traceback" not in res.stderr
    assert b"modle: unknown key" in res.stderr
    res = _run("validate", "--format", "md", env={"PYTHONIOENCODING": "ascii"}, timeout=300)
    assert res.returncode == 0 and b"Traceback" not in res.stderr
    res.stdout.decode("ascii")


def test_glyph_map_is_ascii():
    from gpuwiz.cli import ASCII_GLYPHS

    for glyph, text in ASCII_GLYPHS.items():
        assert not glyph.isascii() and text.isascii(), glyph


# ---- environment and flags ----------------------------------------------------------------------


def test_state_dir_pointing_at_a_file(tmp_path):
    """GPUWIZ_STATE_DIR naming a file: no draft is offered, writing one is an OSError the app reports."""
    from gpuwiz.core.models import Requirements
    from gpuwiz.tui import drafts

    f = tmp_path / "state"
    f.write_text("not a folder\n")
    assert drafts.read_draft(f) is None
    with pytest.raises(OSError):
        drafts.write_draft(f, Requirements(), None, "model")
    assert f.read_text() == "not a folder\n"


async def test_wizard_starts_with_the_state_dir_a_file(tmp_path):
    from gpuwiz.tui.app import create_app

    f = tmp_path / "state"
    f.write_text("not a folder\n")
    app = create_app(state_dir=f, handle_signals=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        from gpuwiz.core.models import Requirements

        app.replace_requirements(Requirements.model_validate({"model": {"preset": "llama-2-7b"}}), "test")
        app.flush_draft()
        await pilot.pause()
        assert app.is_running
    assert f.read_text() == "not a folder\n"


def test_no_color_and_odd_lang_headless(cfg):
    res = _run("recommend", str(cfg), env={"NO_COLOR": "1", "LANG": "xx_XX.bogus"})
    assert res.returncode == 0 and res.stderr == b""
    assert b"\x1b[" not in res.stdout


@pytest.mark.parametrize("flag,value,why", [
    ("--count", "100001", r"must be at most 100,000"),
    ("--count", "99999999999999999999", r"must be at most 100,000"),
    ("--gpus-per-node", "73", r"must be at most 72"),
    ("--gpus-per-node", "0", r"must be at least 1"),
])
def test_count_flags_follow_the_documented_limits(cfg, capsys, flag, value, why):
    with pytest.raises(SystemExit) as exc:
        main(["estimate", str(cfg), "--gpu", "h100-sxm", flag, value])
    _, err = capsys.readouterr()
    assert exc.value.code == 2 and len(err.splitlines()) == 1 and re.search(why, err), err


def test_the_limits_page_names_the_flags():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "LIMITS.md").read_text(encoding="utf-8")
    assert "`--count` | 1 | 100,000" in doc and "`--gpus-per-node` | 1 | 72" in doc


# ---- bounded work ------------------------------------------------------------------------------


def test_99000_unknown_keys_report_20_problems_and_a_count(tmp_path, capsys):
    p = tmp_path / "keys.yaml"
    p.write_text("version: 1\nmodel:\n  preset: llama-2-7b\n" + "".join(f"k{i}: 1\n" for i in range(99_000)))
    assert main(["recommend", str(p)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 21
    assert lines[0] == f"{p}:4: k0: unknown key"
    assert lines[-1] == f"{p}: ... and 98980 more problem(s) not shown"
