"""Files are never lost: an interrupted save (kill in the middle of the write, full disk, read-only
folder, failure at rename) leaves the previous file byte-for-byte intact and says what happened.

tests/core/test_config_io.py covers save_config() itself; here: a real SIGKILL in the middle of a
write, the CLI's `recommend -o FILE` path, and the wizard's save path.
"""

from __future__ import annotations

import errno
import hashlib
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

import gpuwiz.core.yamlio as yamlio
from gpuwiz.cli import main
from gpuwiz.core.config_io import load_config, loads_config

GOOD = "version: 1\nmodel:\n  preset: llama-2-7b\ndata:\n  tokens: 1T\n"
PRECIOUS = "# last week's report, hand-edited\nkeep me\n"


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _leftovers(folder: Path, keep: set[str]) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name not in keep)


# ---- a real kill in the middle of a write -------------------------------------------------------

KILLED_WRITER = textwrap.dedent("""
    import os, signal, sys, time
    import gpuwiz.core.yamlio as yamlio
    from gpuwiz.core.config_io import loads_config, save_config

    # a hang-up ends the writer as it ends a program in a dropped session, also where this suite was started with
    # hang-ups ignored (nohup), which every child inherits
    signal.signal(signal.SIGHUP, signal.SIG_DFL)

    real_fdopen = os.fdopen

    class Slow:
        # writes half of the text, tells the parent, then hangs until it is killed
        def __init__(self, fh):
            self.fh = fh
        def __enter__(self):
            return self
        def __exit__(self, *exc):
            self.fh.close()
        def write(self, text):
            self.fh.write(text[: len(text) // 2])
            self.fh.flush()
            os.fsync(self.fh.fileno())
            print("HALF", flush=True)
            time.sleep(60)
        def flush(self):
            self.fh.flush()
        def fileno(self):
            return self.fh.fileno()

    yamlio.os.fdopen = lambda fd, *a, **k: Slow(real_fdopen(fd, *a, **k))
    req = loads_config("version: 1\\nmodel:\\n  preset: mistral-7b\\ndata:\\n  tokens: 3T\\n")
    save_config(req, sys.argv[1])
""")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP])
def test_kill_during_save_keeps_previous_config(tmp_path, sig):
    target = tmp_path / "team.yaml"
    target.write_text(GOOD)
    before = _sha(target)
    proc = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(target)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == "HALF", proc.stderr.read() if proc.stderr else line
        proc.send_signal(sig)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -sig
    assert _sha(target) == before, "the previous config was damaged by an interrupted save"
    assert load_config(target).model.preset == "llama-2-7b"
    # the half-written data only ever went to a hidden temp file beside it
    for name in _leftovers(tmp_path, {"team.yaml"}):
        assert name.startswith(".team.yaml.") and name.endswith(".tmp"), name


# ---- the CLI: recommend -o FILE ------------------------------------------------------------------


@pytest.fixture
def setup(tmp_path):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(GOOD)
    out = tmp_path / "report.md"
    out.write_text(PRECIOUS)
    return tmp_path, cfg, out


def _boom(err: int, text: str):
    def raiser(*_a, **_k):
        raise OSError(err, text)
    return raiser


def test_recommend_output_writes_the_report_atomically(setup, capsys):
    tmp, cfg, out = setup
    assert main(["recommend", str(cfg), "--format", "md", "-o", str(out), "--force"]) == 0
    stdout, stderr = capsys.readouterr()
    assert stdout == "" and stderr == ""
    assert out.read_text() != PRECIOUS and len(out.read_text()) > 100
    assert _leftovers(tmp, {"cfg.yaml", "report.md"}) == []
    assert cfg.read_text() == GOOD


@pytest.mark.parametrize("where,err,text,msg", [
    ("fsync", errno.ENOSPC, "No space left on device",
     r"cannot save: No space left on device \(previous file left unchanged\)"),
    ("replace", errno.EIO, "Input/output error", r"cannot save: Input/output error \(previous file left unchanged\)"),
    ("mkstemp", errno.EROFS, "Read-only file system",
     r"cannot save: Read-only file system \(previous file left unchanged\)"),
    ("mkstemp_perm", errno.EACCES, "Permission denied",
     r"cannot save: permission denied \(previous file left unchanged\)"),
    ("replace_quota", errno.EDQUOT, "Disk quota exceeded", r"cannot save: Disk quota exceeded"),
])
def test_recommend_output_failure_keeps_previous_file(setup, capsys, monkeypatch, where, err, text, msg):
    import re

    tmp, cfg, out = setup
    boom = _boom(err, text)  # OSError(EACCES, ...) is a PermissionError, as the OS would raise
    if where.startswith("mkstemp"):
        monkeypatch.setattr(tempfile, "mkstemp", boom)
    elif where.startswith("replace"):
        monkeypatch.setattr(yamlio.os, "replace", boom)
    else:
        monkeypatch.setattr(yamlio.os, "fsync", boom)
    rc = main(["recommend", str(cfg), "-o", str(out), "--force"])
    stdout, stderr = capsys.readouterr()
    assert rc == 2 and stdout == ""
    assert len(stderr.splitlines()) == 1 and "Traceback" not in stderr
    assert re.match(re.escape(str(out)) + ": " + msg, stderr), stderr
    assert out.read_text() == PRECIOUS
    assert cfg.read_text() == GOOD
    assert _leftovers(tmp, {"cfg.yaml", "report.md"}) == [], "a temp file was left behind"


def test_recommend_output_into_read_only_folder(tmp_path, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    out = ro / "report.md"
    out.write_text(PRECIOUS)
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(GOOD)
    ro.chmod(0o555)
    try:
        if os.access(ro, os.W_OK):
            pytest.skip("root can write into read-only folders; the monkeypatched EROFS/EACCES cases cover it")
        rc = main(["recommend", str(cfg), "-o", str(out)])
        _, stderr = capsys.readouterr()
        assert rc == 2 and "cannot save: permission denied (previous file left unchanged)" in stderr
    finally:
        ro.chmod(0o755)
    assert out.read_text() == PRECIOUS
    assert [p.name for p in ro.iterdir()] == ["report.md"]


def test_recommend_output_to_a_folder_or_missing_folder(tmp_path, capsys):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(GOOD)
    d = tmp_path / "reports"
    d.mkdir()
    assert main(["recommend", str(cfg), "-o", str(d)]) == 2
    assert capsys.readouterr().err == f"{d}: is a directory; give a file name to save to\n"
    missing = tmp_path / "nope" / "r.md"
    assert main(["recommend", str(cfg), "-o", str(missing)]) == 2
    assert capsys.readouterr().err == f"{missing}: cannot save: folder {missing.parent} does not exist\n"
    assert not missing.parent.exists()


def test_recommend_output_never_overwrites_its_own_config(tmp_path, capsys, monkeypatch):
    """`gpuwiz recommend team.yaml -o team.yaml` (a slip of the fingers) must not destroy the config."""
    cfg = tmp_path / "team.yaml"
    cfg.write_text(GOOD)
    monkeypatch.chdir(tmp_path)
    for target in (str(cfg), "team.yaml", "./team.yaml"):
        rc = main(["recommend", str(cfg), "-o", target])
        _, err = capsys.readouterr()
        assert rc == 2, f"-o {target} overwrote the config"
        assert "-o" in err and "team.yaml" in err and len(err.splitlines()) == 1
        assert cfg.read_text() == GOOD


def test_bad_config_never_touches_the_output_file(setup, capsys):
    tmp, cfg, out = setup
    cfg.write_text("version: 1\nmodle: {}\n")
    assert main(["recommend", str(cfg), "-o", str(out)]) == 2
    assert out.read_text() == PRECIOUS
    assert _leftovers(tmp, {"cfg.yaml", "report.md"}) == []


def test_loads_config_of_a_half_written_file_is_a_clear_error(tmp_path):
    """If a non-atomic editor or a copy was cut short, the truncated config is refused with a line."""
    full = "version: 1\nmodel:\n  preset: llama-2-7b\ntraining:\n  method: lora\n  parallel: {zero_stage: 3, tp: 1}\n"
    cut = full[: full.index("tp:") + 2]
    from gpuwiz.core.errors import GpuwizError

    with pytest.raises(GpuwizError, match=r"half\.yaml:7: invalid YAML: .* starts on line 6"):
        loads_config(cut, "half.yaml")


# ---- the wizard killed in the middle of ctrl+s (the real save path) ------------------------------

KILLED_APP = textwrap.dedent("""
    import asyncio, os, sys, time
    import gpuwiz.core.yamlio as yamlio
    from gpuwiz.core.models import Requirements
    from gpuwiz.tui.app import create_app

    target, state = sys.argv[1], sys.argv[2]
    real_fdopen = os.fdopen

    class Slow:
        # writes half of the text, tells the parent, then hangs until it is killed
        def __init__(self, fh):
            self.fh = fh
        def __enter__(self):
            return self
        def __exit__(self, *exc):
            self.fh.close()
        def write(self, text):
            self.fh.write(text[: len(text) // 2])
            self.fh.flush()
            os.fsync(self.fh.fileno())
            print("HALF", flush=True)
            time.sleep(120)
        def flush(self):
            self.fh.flush()
        def fileno(self):
            return self.fh.fileno()

    async def main():
        app = create_app(target, state_dir=state, handle_signals=False)
        async with app.run_test(size=(100, 30)) as pilot:
            for _ in range(200):
                await pilot.pause()
                if app.config_path and app._core_ready and app.requirements.model.preset == "llama-2-7b":
                    break
            edited = Requirements.model_validate({"model": {"preset": "mistral-7b"}, "data": {"tokens": 3e12}})
            app.replace_requirements(edited, "edit")
            for _ in range(50):
                await pilot.pause()
                if app.dirty:
                    break
            from gpuwiz.tui import drafts  # typing is debounced: the edit's draft is on disk within a second
            for _ in range(400):
                d = drafts.read_draft(state)
                if d is not None and d.requirements == edited:
                    break
                await pilot.pause(0.05)
            print("EDITED", flush=True)
            yamlio.os.fdopen = lambda fd, *a, **k: Slow(real_fdopen(fd, *a, **k))
            await pilot.press("ctrl+s")
            await asyncio.sleep(120)

    asyncio.run(main())
""")


def test_wizard_killed_mid_save_keeps_the_file_and_the_draft(tmp_path):
    """SIGKILL the wizard while ctrl+s is writing: the config is the old one, byte for byte, and the
    draft holds the edit (so the next start offers it); nothing is truncated."""
    from gpuwiz.tui import drafts

    target = tmp_path / "team.yaml"
    target.write_text(GOOD)
    before = _sha(target)
    state = tmp_path / "state"
    env = {k: v for k, v in os.environ.items() if k != "GPUWIZ_DEBUG"}
    proc = subprocess.Popen([sys.executable, "-c", KILLED_APP, str(target), str(state)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        lines = []
        for _ in range(2):
            lines.append(proc.stdout.readline().strip())
        assert lines == ["EDITED", "HALF"], (lines, proc.stderr.read() if proc.stderr else "")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert _sha(target) == before, "the config was damaged by a killed save"
    assert load_config(target).model.preset == "llama-2-7b"
    draft = drafts.read_draft(state)
    assert draft is not None, "the draft was lost"
    assert draft.requirements.model.preset == "mistral-7b" and draft.requirements.data.tokens == 3e12
    assert draft.source == str(target)
    for name in _leftovers(tmp_path, {"team.yaml", "state"}):
        assert name.startswith(".team.yaml.") and name.endswith(".tmp"), name


def test_saving_a_linked_config_keeps_the_link(tmp_path):
    """A config kept as a symlink (dotfiles): saving replaces the file it points to, never the link."""
    from gpuwiz.core.config_io import save_config

    real = tmp_path / "dotfiles" / "team.yaml"
    real.parent.mkdir()
    real.write_text(GOOD)
    link = tmp_path / "team.yaml"
    link.symlink_to(real)
    save_config(loads_config("version: 1\nmodel:\n  preset: mistral-7b\n"), link)
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert load_config(real).model.preset == "mistral-7b"


def test_saving_onto_a_fifo_or_device_is_refused(tmp_path):
    from gpuwiz.core.config_io import save_config
    from gpuwiz.core.errors import GpuwizError

    fifo = tmp_path / "team.yaml"
    os.mkfifo(fifo)
    with pytest.raises(GpuwizError, match=r"named pipe .*replaces only regular files"):
        save_config(loads_config(GOOD), fifo)
    assert stat_is_fifo(fifo)


def stat_is_fifo(p: Path) -> bool:
    import stat

    return stat.S_ISFIFO(os.lstat(p).st_mode)
