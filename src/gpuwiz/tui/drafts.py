"""The autosaved draft: where it lives, how it is written and read back.

The draft is one small JSON file in the user's state directory (platformdirs), overridable with
``GPUWIZ_STATE_DIR`` so that tests never touch the home directory. It is rewritten on every change
(temp file + rename, no fsync: a killed process loses nothing, and keystrokes stay fast) and deleted
when the work is saved or deliberately discarded. The next start offers to restore it.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pydantic and the core load after the first frame (``state_dir`` is needed before it)
    from gpuwiz.core.models import Requirements

ENV_STATE_DIR = "GPUWIZ_STATE_DIR"
DRAFT_NAME = "draft.json"


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
    source: str | None  # the config file the draft was editing, if any
    step: str  # the screen the user was on
    saved_at: float  # unix time


def draft_path(directory: Path) -> Path:
    return directory / DRAFT_NAME


def write_draft(directory: Path, req: Requirements, source: str | None, step: str) -> None:
    """Atomically replace the draft. Raises OSError (the caller reports it, once)."""
    directory.mkdir(parents=True, exist_ok=True)
    payload: dict[str, Any] = {
        "gpuwiz_draft": 1,
        "source": source,
        "step": step,
        "saved_at": time.time(),
        "requirements": req.model_dump(mode="json"),
    }
    fd, tmp = tempfile.mkstemp(prefix=".draft.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(payload, fh)
        os.replace(tmp, draft_path(directory))
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def read_draft(directory: Path) -> Draft | None:
    """The draft, or None when there is none or it is unreadable (never raises)."""
    from gpuwiz.core.models import Requirements

    path = draft_path(directory)
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
        req = Requirements.model_validate(payload["requirements"])
        return Draft(
            requirements=req,
            source=payload.get("source") if isinstance(payload.get("source"), str) else None,
            step=str(payload.get("step") or "model"),
            saved_at=float(payload.get("saved_at") or 0.0),
        )
    except (OSError, ValueError, KeyError, TypeError):  # pydantic's ValidationError is a ValueError
        return None


def clear_draft(directory: Path) -> None:
    try:
        draft_path(directory).unlink()
    except OSError:
        pass
