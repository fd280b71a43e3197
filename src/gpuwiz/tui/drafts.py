"""The autosaved drafts: where they live, how they are written, locked and read back.

Each wizard session keeps its own draft, ``draft-<pid>.json``, beside a lock file ``draft-<pid>.lock``
that names the process and host holding it. Both live in the user's state directory (platformdirs),
overridable with ``GPUWIZ_STATE_DIR`` so that tests never touch the home directory. The draft is
rewritten on every change (temp file + rename, no fsync: a killed process loses nothing, and
keystrokes stay fast) and deleted when the work is saved or deliberately discarded.

At start-up :func:`read_draft` offers the newest draft whose session is gone (its process no longer
runs on this host, or it has no lock: a ``draft.json`` of an older gpuwiz); drafts of sessions still
running are left alone, so two sessions at once never lose each other's work. :func:`claim_draft`
takes a stale draft over for this session (an atomic rename: of two new sessions, one wins). A draft
that cannot be read (bad JSON, a bad ``saved_at``, deep nesting, not a regular file, ...) is set
aside as ``<name>.bad-<timestamp>`` with a one-line notice, never offered, never fatal.

A draft stores the config path it was editing as an absolute path: restored from another folder,
ctrl+s still writes the file it came from, never a same-named file in the new working directory.
"""

from __future__ import annotations

import json
import math
import os
import socket
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pydantic and the core load after the first frame (``state_dir`` is needed before it)
    from gpuwiz.core.models import Requirements

ENV_STATE_DIR = "GPUWIZ_STATE_DIR"
DRAFT_NAME = "draft.json"  # an older gpuwiz's single draft: read (as a stale draft), never written
PREFIX, SUFFIX, LOCK_SUFFIX = "draft-", ".json", ".lock"
MAX_DRAFT_BYTES = 1_000_000  # a draft is ~2 KB
MAX_DRAFTS_SCANNED = 200  # bounded work at start-up, however many files pile up
_STEPS = ("model", "data", "schedule", "deploy", "result")
_FUTURE_SLACK_S = 86_400.0  # a saved_at up to a day ahead (clock skew) is accepted


def state_dir(override: str | os.PathLike[str] | None = None) -> Path:
    if override is not None:
        return Path(override)
    env = os.environ.get(ENV_STATE_DIR)
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_state_dir("gpuwiz", appauthor=False))


@dataclass(frozen=True)
class Draft:
    requirements: Requirements
    source: str | None  # the config file the draft was editing (absolute), if any
    step: str  # the screen the user was on
    saved_at: float  # unix time
    path: Path | None = None  # the draft file itself


def _host() -> str:
    try:
        return socket.gethostname()
    except OSError:
        return ""


def draft_path(directory: Path, pid: int | None = None) -> Path:
    """This session's draft file (``pid``: another process's)."""
    return Path(directory) / f"{PREFIX}{os.getpid() if pid is None else pid}{SUFFIX}"


def lock_path(directory: Path, pid: int | None = None) -> Path:
    return Path(directory) / f"{PREFIX}{os.getpid() if pid is None else pid}{LOCK_SUFFIX}"


_LOCKED: set[tuple[str, int]] = set()  # (folder, pid) whose lock this process wrote: no re-read per keystroke


def _write_lock(directory: Path) -> None:
    """This session's lock: its pid and host (rewritten if another process left one under our pid)."""
    lock = lock_path(directory)
    key = (str(lock), os.getpid())
    if key in _LOCKED and lock.is_file():
        return
    body = json.dumps({"pid": os.getpid(), "host": _host(), "started": time.time()})
    from gpuwiz.core.errors import GpuwizError
    from gpuwiz.core.yamlio import read_file_bytes

    try:
        current = json.loads(read_file_bytes(lock, max_bytes=10_000, what="lock file", follow_symlinks=False))
    except (GpuwizError, ValueError, RecursionError):  # none yet, or not ours to trust: rewrite it
        current = None
    if isinstance(current, dict) and current.get("pid") == os.getpid() and current.get("host") == _host():
        _LOCKED.add(key)
        return
    fd, tmp = tempfile.mkstemp(prefix=".lock.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(body)
        os.replace(tmp, lock)
    except BaseException:
        _unlink(Path(tmp))
        raise
    _LOCKED.add(key)


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    except OSError:
        return False
    return True


def session_alive(directory: Path, pid: int) -> bool:
    """Whether the session that owns ``draft-<pid>`` still runs (its lock names a live process on
    this host). A lock from another host is taken as alive: we cannot tell, so we do not touch it."""
    if pid == os.getpid():
        return False  # our own (this process's) draft is never "someone else's"
    lock = lock_path(directory, pid)
    try:
        from gpuwiz.core.errors import GpuwizError
        from gpuwiz.core.yamlio import read_file_bytes

        info = json.loads(read_file_bytes(lock, max_bytes=10_000, what="lock file", follow_symlinks=False))
    except FileNotFoundError:
        return False
    except (GpuwizError, ValueError, RecursionError):
        return _pid_alive(pid)  # unreadable lock: the pid in its name decides
    if not isinstance(info, dict):
        return _pid_alive(pid)
    host = info.get("host")
    if isinstance(host, str) and host and host != _host():
        return True
    lock_pid = info.get("pid")
    return _pid_alive(lock_pid if isinstance(lock_pid, int) and not isinstance(lock_pid, bool) else pid)


def write_draft(directory: Path, req: Requirements, source: str | None, step: str) -> None:
    """Atomically replace this session's draft. Raises OSError (the caller reports it, once)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    _write_lock(directory)
    payload: dict[str, Any] = {
        "gpuwiz_draft": 1,
        "source": os.path.abspath(source) if source else None,
        "step": step,
        "saved_at": time.time(),
        "pid": os.getpid(),
        "host": _host(),
        "requirements": req.model_dump(mode="json"),
    }
    fd, tmp = tempfile.mkstemp(prefix=".draft.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, allow_nan=False)
        os.replace(tmp, draft_path(directory))
    except BaseException:
        _unlink(Path(tmp))
        raise


class BadDraft(ValueError):
    """A draft file that cannot be restored (the message says why, in a few words)."""


def _load(path: Path) -> Draft:
    """Read and check one draft file. Raises BadDraft; never blocks (regular files only)."""
    from pydantic import ValidationError

    from gpuwiz.core.errors import GpuwizError
    from gpuwiz.core.models import Requirements
    from gpuwiz.core.yamlio import read_file_bytes

    try:
        raw = read_file_bytes(path, max_bytes=MAX_DRAFT_BYTES, what="draft", follow_symlinks=False)
    except GpuwizError as exc:
        msg = str(exc)
        raise BadDraft(msg.split(": ", 1)[-1] if ": " in msg else msg) from None
    try:
        payload = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except UnicodeDecodeError:
        raise BadDraft("not UTF-8 text") from None
    except RecursionError:
        raise BadDraft("nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise BadDraft(f"not valid JSON: {exc.msg} on line {exc.lineno}") from None
    except ValueError as exc:  # NaN / Infinity, an over-long integer
        raise BadDraft(f"not valid JSON: {str(exc)[:60]}") from None
    if not isinstance(payload, dict) or "requirements" not in payload:
        raise BadDraft("not a gpuwiz draft")
    saved_at = payload.get("saved_at", 0.0)
    if isinstance(saved_at, bool) or not isinstance(saved_at, (int, float)) or not math.isfinite(saved_at) \
            or not 0 <= saved_at <= time.time() + _FUTURE_SLACK_S:
        raise BadDraft("bad saved_at time")
    source = payload.get("source")
    if source is not None:
        if not isinstance(source, str) or not source or len(source) > 4096 or not source.isprintable():
            raise BadDraft("bad source path")
        if not os.path.isabs(source):
            source = None  # an older draft's relative path: where it was relative to is unknown
    step = payload.get("step") or "model"
    if not isinstance(step, str) or step not in _STEPS:
        step = "model"
    try:
        req = Requirements.model_validate(payload["requirements"])
    except RecursionError:
        raise BadDraft("nested too deeply") from None
    except (ValidationError, ValueError, TypeError):
        raise BadDraft("its settings are not valid any more") from None
    return Draft(requirements=req, source=source, step=step, saved_at=float(saved_at), path=path)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


def _pid_of(name: str) -> int | None:
    if name == DRAFT_NAME:
        return -1
    if not (name.startswith(PREFIX) and name.endswith(SUFFIX)):
        return None
    digits = name[len(PREFIX):-len(SUFFIX)]
    return int(digits) if digits.isdigit() and len(digits) < 10 else None


def set_aside(path: Path, why: str, kind: str = "bad") -> str:
    """Rename a draft to ``<name>.<kind>-<timestamp>`` (never offered again, never deleted); the
    one-line notice for the user."""
    from gpuwiz.core.errors import printable

    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.{kind}-{stamp}")
    n = 1
    while os.path.lexists(target):
        n += 1
        target = path.with_name(f"{path.name}.{kind}-{stamp}-{n}")
    try:
        os.rename(path, target)
        where = f"set aside as {target.name}"
    except OSError as exc:
        where = f"could not be set aside ({exc.strerror or exc}); remove it by hand"
    return printable(f"The autosaved draft {path} could not be read ({why}); {where}.")


def list_drafts(directory: Path, notices: list[str] | None = None, *, live: bool = False) -> list[Draft]:
    """Every readable draft in ``directory``, newest first. Sessions still running are skipped unless
    ``live``; a draft that cannot be read is set aside (a notice is appended). Never raises."""
    directory = Path(directory)
    try:
        names = sorted(os.listdir(directory))[: MAX_DRAFTS_SCANNED * 4]
    except (OSError, ValueError):  # no folder yet, or GPUWIZ_STATE_DIR names a file
        return []
    found: list[Draft] = []
    scanned = 0
    for name in names:
        pid = _pid_of(name)
        if pid is None:
            continue
        scanned += 1
        if scanned > MAX_DRAFTS_SCANNED:
            break
        if pid > 0 and not live and session_alive(directory, pid):
            continue
        path = directory / name
        try:
            found.append(_load(path))
        except BadDraft as exc:
            if pid > 0 and session_alive(directory, pid):
                continue  # never move a running session's file
            notice = set_aside(path, str(exc))
            if notices is not None:
                notices.append(notice)
    found.sort(key=lambda d: d.saved_at, reverse=True)
    return found


def read_draft(directory: Path, notices: list[str] | None = None, *, live: bool = False) -> Draft | None:
    """The newest draft left behind by a session that is gone (or by this process), or None.

    Never raises and never blocks. Bad drafts are set aside, each with a line in ``notices``.
    ``live=True`` also returns drafts of sessions still running (an observer's view: tests).
    """
    drafts = list_drafts(directory, notices, live=live)
    return drafts[0] if drafts else None


def claim_draft(directory: Path, draft: Draft) -> Draft | None:
    """Take a stale draft over for this session (atomic rename onto this session's draft file).

    Returns the draft as now owned, or None when another session claimed it first."""
    directory = Path(directory)
    mine = draft_path(directory)
    if draft.path is None or draft.path == mine:
        return draft
    try:
        directory.mkdir(parents=True, exist_ok=True)
        _write_lock(directory)
        if os.path.lexists(mine):  # our own older draft would be overwritten: keep it beside
            set_aside(mine, "replaced by a newer restored draft", "older")
        os.rename(draft.path, mine)
    except FileNotFoundError:
        return None
    except OSError:
        return draft  # cannot take it over (read-only folder): restore it anyway, leave the file
    stale_lock = draft.path.with_name(draft.path.name[: -len(SUFFIX)] + LOCK_SUFFIX)
    if stale_lock != lock_path(directory):
        _unlink(stale_lock)
    return Draft(draft.requirements, draft.source, draft.step, draft.saved_at, mine)


def clear_draft(directory: Path) -> None:
    """Delete this session's draft and lock (the work was saved or deliberately discarded)."""
    _unlink(draft_path(directory))
    _unlink(lock_path(directory))


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass
