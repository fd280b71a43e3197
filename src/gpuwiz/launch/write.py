"""Writing generated files safely: never replace without --force, never write through a link or into a
FIFO / device, check everything before writing anything (a refusal leaves the folder as it was)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from gpuwiz.core.errors import GpuwizError, printable
from gpuwiz.core.yamlio import atomic_write_text, check_output_target
from gpuwiz.launch.targets import LaunchFile


def check_output_file(path: Path, force: bool) -> None:
    """Raise GpuwizError unless ``path`` may be written (absent, or a regular file and ``force``)."""
    check_output_target(path)  # the one rule for links, FIFOs, devices, sockets and folders
    if os.path.lexists(path) and not force:
        raise GpuwizError(f"{printable(str(path))}: already exists; pass --force to replace it")


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_text_file(path: str | os.PathLike[str], text: str, force: bool, executable: bool = False) -> None:
    """Write one file atomically; a new file gets the usual permissions (0644 / 0755 less the umask)."""
    p = Path(path)
    check_output_file(p, force)
    existed = p.exists()
    atomic_write_text(p, text)
    try:
        mode = os.stat(p).st_mode & 0o777 if existed else 0o666 & ~_umask()
        if executable:
            mode |= (mode & 0o444) >> 2  # x wherever r
        os.chmod(p, mode)
    except OSError as exc:
        raise GpuwizError(f"{p}: written, but cannot set its permissions: {exc.strerror or exc}") from None


def write_files(folder: str | os.PathLike[str], files: list[LaunchFile], force: bool) -> list[Path]:
    """Write ``files`` into ``folder`` (created if absent); returns the paths written."""
    d = Path(folder)
    name = str(folder)
    try:
        st = os.lstat(d)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise GpuwizError(f"{name}: cannot check the output folder: {exc.strerror or exc}") from None
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            raise GpuwizError(f"{name}: is a symbolic link; give the real folder (-o)")
        if not stat.S_ISDIR(st.st_mode):
            raise GpuwizError(f"{name}: exists and is not a folder; give another -o")
    paths = [d / f.name for f in files]
    for p in paths:  # everything is checked before anything is written
        check_output_file(p, force)
    if st is None:
        try:
            d.mkdir(parents=True)
        except OSError as exc:
            raise GpuwizError(f"{name}: cannot create the folder: {exc.strerror or exc}") from None
    for f, p in zip(files, paths, strict=False):
        write_text_file(p, f.text, force=True, executable=f.executable)
    return paths
