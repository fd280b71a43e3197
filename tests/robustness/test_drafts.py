"""Drafts: one per session, locked by PID and host; stale ones taken over; never lost, never clobbered.

The hostile draft files themselves (bad JSON, bad ``saved_at``, deep nesting, ...) are corpus
cases in tests/data/bad/ (``run: draft``, see test_bad_input.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gpuwiz.core.models import Requirements
from gpuwiz.tui import drafts

A = Requirements.model_validate({"model": {"preset": "llama-2-7b"}})
B = Requirements.model_validate({"model": {"preset": "mistral-7b"}, "data": {"tokens": 3e12}})

WRITER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from gpuwiz.core.models import Requirements
    from gpuwiz.tui import drafts
    req = Requirements.model_validate({"model": {"preset": sys.argv[2]}})
    drafts.write_draft(Path(sys.argv[1]), req, None, "data")
    print("WROTE", flush=True)
    if sys.argv[3] == "stay":
        sys.stdin.read()  # stays alive until the parent closes stdin
""")


def _writer(state: Path, preset: str, stay: bool) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(state), preset, "stay" if stay else "exit"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "WROTE"
    return proc


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.stdin:
        proc.stdin.close()
    proc.wait(timeout=60)


def test_a_draft_names_its_process_and_host(tmp_path):
    drafts.write_draft(tmp_path, A, None, "model")
    lock = json.loads(drafts.lock_path(tmp_path).read_text())
    assert lock["pid"] == os.getpid() and lock["host"] == drafts._host()
    assert drafts.draft_path(tmp_path).name == f"draft-{os.getpid()}.json"


def test_a_running_session_s_draft_is_not_offered_and_not_touched(tmp_path):
    proc = _writer(tmp_path, "mistral-7b", stay=True)
    try:
        theirs = drafts.draft_path(tmp_path, proc.pid)
        before = theirs.read_bytes()
        assert drafts.read_draft(tmp_path) is None, "offered a draft that a running session still edits"
        live = drafts.read_draft(tmp_path, live=True)
        assert live is not None and live.requirements.model.preset == "mistral-7b"
        drafts.write_draft(tmp_path, A, None, "model")  # this session writes its own, beside it
        assert theirs.read_bytes() == before
    finally:
        _stop(proc)
    # once that session is gone its draft is stale: offered (newest first) and can be taken over
    offered = drafts.read_draft(tmp_path)
    assert offered is not None


def test_two_sessions_at_once_never_lose_a_draft(tmp_path):
    p1 = _writer(tmp_path, "mistral-7b", stay=True)
    p2 = _writer(tmp_path, "llama-3-8b", stay=True)
    try:
        names = sorted(p.name for p in tmp_path.glob("draft-*.json"))
        assert names == sorted([f"draft-{p1.pid}.json", f"draft-{p2.pid}.json"])
    finally:
        _stop(p1)
        _stop(p2)
    found = {d.requirements.model.preset for d in drafts.list_drafts(tmp_path)}
    assert found == {"mistral-7b", "llama-3-8b"}


def test_a_stale_lock_is_taken_over(tmp_path):
    proc = _writer(tmp_path, "mistral-7b", stay=False)
    proc.wait(timeout=60)
    stale = drafts.read_draft(tmp_path)
    assert stale is not None and stale.path == drafts.draft_path(tmp_path, proc.pid)
    mine = drafts.claim_draft(tmp_path, stale)
    assert mine is not None and mine.path == drafts.draft_path(tmp_path)
    assert not drafts.draft_path(tmp_path, proc.pid).exists()
    assert not drafts.lock_path(tmp_path, proc.pid).exists(), "the dead session's lock was left behind"
    assert json.loads(drafts.lock_path(tmp_path).read_text())["pid"] == os.getpid()
    assert drafts.read_draft(tmp_path).requirements == mine.requirements  # type: ignore[union-attr]
    # of two sessions claiming the same stale draft, one wins: the second finds it gone
    assert drafts.claim_draft(tmp_path, stale) is None


def test_a_lock_from_another_host_is_left_alone(tmp_path):
    pid = 4_000_001  # above any default pid_max: certainly not running here
    (tmp_path / f"draft-{pid}.json").write_text(json.dumps(
        {"gpuwiz_draft": 1, "source": None, "step": "model", "saved_at": 1.7e9, "requirements": {"version": 1}}))
    (tmp_path / f"draft-{pid}.lock").write_text(json.dumps({"pid": pid, "host": "another-machine"}))
    assert drafts.read_draft(tmp_path) is None
    (tmp_path / f"draft-{pid}.lock").write_text(json.dumps({"pid": pid, "host": drafts._host()}))
    assert drafts.read_draft(tmp_path) is not None


def test_the_newest_stale_draft_is_offered_first(tmp_path):
    for pid, t, preset in ((4_000_001, 1.75e9, "llama-2-7b"), (4_000_002, 1.76e9, "mistral-7b")):
        (tmp_path / f"draft-{pid}.json").write_text(json.dumps(
            {"gpuwiz_draft": 1, "source": None, "step": "model", "saved_at": t,
             "requirements": {"version": 1, "model": {"preset": preset}}}))
    assert drafts.read_draft(tmp_path).requirements.model.preset == "mistral-7b"  # type: ignore[union-attr]


def test_claiming_keeps_this_session_s_older_draft(tmp_path):
    drafts.write_draft(tmp_path, A, None, "model")
    pid = 4_000_003
    (tmp_path / f"draft-{pid}.json").write_text(json.dumps(
        {"gpuwiz_draft": 1, "source": None, "step": "data", "saved_at": 1.7e9,
         "requirements": B.model_dump(mode="json")}))
    other = next(d for d in drafts.list_drafts(tmp_path) if d.path and d.path.name == f"draft-{pid}.json")
    assert drafts.claim_draft(tmp_path, other) is not None
    kept = [p.name for p in tmp_path.iterdir() if ".older-" in p.name]
    assert len(kept) == 1, "this session's own draft was overwritten by the claimed one"


def test_a_restored_draft_keeps_an_absolute_source(tmp_path, monkeypatch):
    """Restored from another folder, ctrl+s must write the file it came from, not ./team.yaml."""
    here, elsewhere, state = tmp_path / "project", tmp_path / "elsewhere", tmp_path / "state"
    here.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(here)
    drafts.write_draft(state, A, "team.yaml", "model")
    monkeypatch.chdir(elsewhere)
    d = drafts.read_draft(state)
    assert d is not None and d.source == str(here / "team.yaml")


def test_an_old_relative_source_is_dropped(tmp_path):
    """A draft of an older gpuwiz with a relative path: where it was relative to is unknown."""
    (tmp_path / "draft.json").write_text(json.dumps(
        {"gpuwiz_draft": 1, "source": "team.yaml", "step": "data", "saved_at": 1.7e9,
         "requirements": A.model_dump(mode="json")}))
    d = drafts.read_draft(tmp_path)
    assert d is not None and d.source is None and d.requirements == A and d.step == "data"


def test_a_fifo_as_a_draft_is_set_aside_not_waited_on(tmp_path):
    os.mkfifo(tmp_path / "draft-4000004.json")
    notices: list[str] = []
    assert drafts.read_draft(tmp_path, notices) is None
    assert len(notices) == 1 and "named pipe" in notices[0]
    assert next(p.name for p in tmp_path.iterdir()).startswith("draft-4000004.json.bad-")


def test_a_symlinked_draft_is_not_followed(tmp_path):
    target = tmp_path / "elsewhere.json"
    target.write_text(json.dumps({"gpuwiz_draft": 1, "saved_at": 1.7e9, "requirements": {"version": 1}}))
    (tmp_path / "draft-4000005.json").symlink_to(target)
    notices: list[str] = []
    assert drafts.read_draft(tmp_path, notices) is None and len(notices) == 1
    assert target.exists()


def test_a_draft_whose_source_is_a_fifo_restores_without_hanging(tmp_path):
    """The source is only read when the draft is restored, through the safe reader (no hang)."""
    from gpuwiz.core.config_io import load_config
    from gpuwiz.core.errors import GpuwizError

    fifo = tmp_path / "team.yaml"
    os.mkfifo(fifo)
    drafts.write_draft(tmp_path / "state", A, str(fifo), "model")
    d = drafts.read_draft(tmp_path / "state")
    assert d is not None and d.source == str(fifo)
    with pytest.raises(GpuwizError, match="named pipe"):
        load_config(d.source)


def test_many_files_in_the_state_dir_are_bounded(tmp_path):
    for i in range(300):
        (tmp_path / f"draft-{4_100_000 + i}.json").write_text("{bad")
    notices: list[str] = []
    assert drafts.read_draft(tmp_path, notices) is None
    assert len(notices) == drafts.MAX_DRAFTS_SCANNED


async def test_the_wizard_sets_a_bad_draft_aside_and_starts(tmp_path):
    from gpuwiz.tui.app import create_app
    from gpuwiz.tui.dialogs.confirm import ChoiceDialog

    state = tmp_path / "state"
    state.mkdir()
    (state / "draft-4000006.json").write_text('{"gpuwiz_draft": 1, "saved_at": "soon", "requirements": {}}')
    app = create_app(state_dir=state, handle_signals=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert not isinstance(app.screen, ChoiceDialog)
        assert app.is_running
    assert any(p.name.startswith("draft-4000006.json.bad-") for p in state.iterdir())


async def test_the_wizard_restores_a_dead_session_s_draft_and_takes_it_over(tmp_path):
    from gpuwiz.tui.app import create_app
    from gpuwiz.tui.dialogs.confirm import ChoiceDialog

    state = tmp_path / "state"
    proc = _writer(state, "mistral-7b", stay=False)
    proc.wait(timeout=60)
    app = create_app(state_dir=state, handle_signals=False)
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(50):
            await pilot.pause()
            if isinstance(app.screen, ChoiceDialog):
                break
        assert isinstance(app.screen, ChoiceDialog)
        assert not drafts.draft_path(state, proc.pid).exists(), "the stale draft was not taken over"
        assert drafts.draft_path(state).exists()
