"""`gpuwiz calibrate LOG`: the log goes through gpuwiz's one safe reader (streamed, capped). A FIFO,
a device node, a folder, a looping link, a file over the cap, a binary file and a trainer_state.json
nested 100,000 deep are one-line errors (exit 2) that return at once; bytes that are not UTF-8 in
a real log are read past; nothing is written."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from gpuwiz.calibrate import logs
from gpuwiz.cli import main

LOGS = Path(__file__).resolve().parents[1] / "data" / "logs"


def _refused(capsys, log: str, what: str, *extra: str) -> None:
    rc = main(["calibrate", log, *extra])
    out, err = capsys.readouterr()
    assert rc == 2, (rc, out, err)
    assert "Traceback" not in err and "internal error" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(log), err
    assert all(ch.isprintable() for ch in lines[0]), repr(err)
    assert re.search(what, lines[0]), err
    assert out == ""


def test_a_fifo_log_is_refused_without_waiting(tmp_path, capsys):
    fifo = tmp_path / "train.log"
    os.mkfifo(fifo)
    _refused(capsys, str(fifo), r"named pipe \(FIFO\)")
    _refused(capsys, str(fifo), r"named pipe \(FIFO\)", "--log-format", "torchtitan")  # no detection either


def test_a_device_log_is_refused_without_reading_it(tmp_path, capsys):
    dev = tmp_path / "zero"
    try:  # the numbers of /dev/zero: reading it would never end
        os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 5))
    except OSError:
        pytest.skip("cannot make device nodes here (not root)")
    _refused(capsys, str(dev), "is a device")
    _refused(capsys, str(dev), "is a device", "--log-format", "nvidia-smi")


def test_a_folder_and_a_link_loop_are_one_line(tmp_path, capsys):
    _refused(capsys, str(tmp_path), "is a directory")
    loop = tmp_path / "loop.log"
    loop.symlink_to(loop)
    _refused(capsys, str(loop), "symbolic link|cannot read")
    _refused(capsys, str(tmp_path / "gone.log"), "no such file")


def test_a_log_over_the_cap_is_refused_before_reading(tmp_path, capsys):
    big = tmp_path / "big.log"
    with open(big, "wb") as fh:  # sparse: 4 GiB + 1 byte, nothing written
        fh.truncate(logs.MAX_LOG_BYTES + 1)
    _refused(capsys, str(big), r"gpuwiz reads log files up to \d+ MB")


def test_a_log_that_grows_past_the_cap_while_read_stops(tmp_path, capsys, monkeypatch):
    """The cap holds while streaming too (a log still being written); set low to keep the test small."""
    monkeypatch.setattr(logs, "MAX_LOG_BYTES", 4096)
    f = tmp_path / "growing.log"
    f.write_text("".join(f"step: {i}  loss: 1.0  tps: 1000\n" for i in range(1, 100)))  # ~3.5 KB
    real = os.read
    state = {"grown": False}

    def read_and_grow(fd, n):
        if not state["grown"]:
            state["grown"] = True
            with open(f, "a") as fh:
                fh.write("step: 200  loss: 1.0  tps: 1000\n" * 200)
        return real(fd, n)

    monkeypatch.setattr(os, "read", read_and_grow)
    _refused(capsys, str(f), r"file is over .* MB", "--log-format", "torchtitan")


def test_binary_and_bad_utf8(tmp_path, capsys):
    binf = tmp_path / "core.log"
    binf.write_bytes(b"step: 1 \x00\x00\x7fELF" * 50)
    _refused(capsys, str(binf), "binary file")
    # a real log with Latin-1 bytes and an escape sequence in it: the numbers are still read
    text = (LOGS / "torchtitan.log").read_bytes()
    noisy = tmp_path / "noisy.log"
    noisy.write_bytes(b"caf\xe9 \xff\xfe r\xe9sum\xe9 \x1b[2J\n" + text)
    rc = main(["calibrate", str(noisy)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "tokens_per_s_per_gpu" in out and "\x1b" not in out


def test_deeply_nested_trainer_state_is_one_line(tmp_path, capsys):
    f = tmp_path / "trainer_state.json"
    f.write_text('{"log_history": ' + "[" * 100_000 + "]" * 100_000 + "}")
    _refused(capsys, str(f), "not a log format|nested too deeply|trainer_state")
    _refused(capsys, str(f), "nested too deeply|no step after warm-up", "--log-format", "hf-trainer")


def test_a_trainer_state_over_its_cap_is_not_read_whole(tmp_path, capsys, monkeypatch):
    """Over MAX_JSON_BYTES (64 MiB; set low here) it is read as a printed log, line by line."""
    monkeypatch.setattr(logs, "MAX_JSON_BYTES", 1000)
    f = tmp_path / "trainer_state.json"
    f.write_text('{"log_history": [' + '{"loss": 1.0, "step": 1}, ' * 100 + "]}")
    _refused(capsys, str(f), "no step after warm-up")
    _refused(capsys, str(f), "no step after warm-up", "--log-format", "hf-trainer")


def test_control_characters_in_the_log_name_are_escaped(tmp_path, capsys):
    f = tmp_path / "run\x1b[2J.log"
    f.write_text("hello\n")
    rc = main(["calibrate", str(f)])
    _, err = capsys.readouterr()
    assert rc == 2 and "\x1b" not in err and "\\x1b[2J" in err, repr(err)
