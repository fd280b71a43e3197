"""Recently opened or saved configs, shown on the start screen.

A small JSON list of absolute paths in the state directory (``GPUWIZ_STATE_DIR`` overrides), newest
first. Reading never raises: a missing or broken file is an empty list.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

RECENT_NAME = "recent.json"
MAX_RECENT = 8


def recent_files(directory: Path) -> list[str]:
    """Paths that still exist as regular files, newest first."""
    import stat

    # The safe reader's rules (regular file only, opened without blocking, capped) written out here:
    # the start screen shows this list before gpuwiz.core may be imported (tests/tui/test_startup.py).
    try:
        fd = os.open(directory / RECENT_NAME, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError):
        return []
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO or device planted in the state folder
            return []
        data = json.loads(os.read(fd, 64 * 1024))
    except (OSError, ValueError, RecursionError):
        return []
    finally:
        os.close(fd)
    if not isinstance(data, list):
        return []
    out: list[str] = []
    for p in data:
        if isinstance(p, str) and p not in out and len(out) < MAX_RECENT and os.path.isfile(p):
            out.append(p)
    return out


def remember(directory: Path, path: str) -> None:
    """Put ``path`` first in the list (never raises: the list is a convenience)."""
    full = str(Path(path).resolve())
    paths = [full] + [p for p in recent_files(directory) if p != full]
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".recent.", suffix=".tmp", dir=directory)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(paths[:MAX_RECENT], fh)
        os.replace(tmp, directory / RECENT_NAME)
    except OSError:
        pass
