"""Safe YAML reading that remembers the line of every value, and atomic writing.

We compose the node graph with PyYAML's SafeLoader and build plain Python objects ourselves, so
that (1) no tag outside the YAML core schema is ever honoured (``!!python/object`` is an error,
not code execution), (2) alias expansion is bounded ("billion laughs" cannot blow up memory), and
(3) every mapping key and value keeps its source line for ``FILE:LINE: field: problem`` errors.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import yaml

from gpuwiz.core.errors import GpuwizError, format_problem

MAX_FILE_BYTES = 2_000_000  # configs are a few KB and the catalog ~200 KB; 2 MB is generous
MAX_NODES = 200_000  # bound on constructed values, counts alias re-use (billion laughs)

_SAFE_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:map",
    "tag:yaml.org,2002:seq",
    "tag:yaml.org,2002:timestamp",
}

Path_t = tuple[str | int, ...]

# libyaml's composer when available (10x faster on the catalog); same node graph and marks.
_COMPOSER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class LineMap:
    """Maps a field path (tuple of keys / indexes) to the 1-based line where it appears."""

    def __init__(self) -> None:
        self._lines: dict[Path_t, int] = {}

    def set(self, path: Path_t, line: int) -> None:
        self._lines.setdefault(path, line)

    def has(self, path: Path_t) -> bool:
        """Whether ``path`` itself (not an ancestor) appears in the file."""
        return tuple(path) in self._lines

    def line(self, path: Path_t) -> int | None:
        """Line of ``path``, or of its nearest ancestor that has one."""
        p = tuple(path)
        while True:
            if p in self._lines:
                return self._lines[p]
            if not p:
                return None
            p = p[:-1]


def dotted(path: Path_t) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def read_text(path: str | os.PathLike[str], *, max_bytes: int = MAX_FILE_BYTES) -> str:
    """Read a text file, turning every OS-level failure into a one-line GpuwizError."""
    p = Path(path)
    name = str(path)
    try:
        if p.is_dir():
            raise GpuwizError(f"{name}: is a directory, not a YAML file")
        size = p.stat().st_size
        if size > max_bytes:
            raise GpuwizError(
                f"{name}: file is {size / 1e6:.1f} MB; gpuwiz reads YAML files up to {max_bytes / 1e6:.0f} MB"
            )
        data = p.read_bytes()
    except GpuwizError:
        raise
    except FileNotFoundError:
        raise GpuwizError(f"{name}: no such file") from None
    except PermissionError:
        raise GpuwizError(f"{name}: permission denied (cannot read the file)") from None
    except OSError as exc:
        raise GpuwizError(f"{name}: cannot read: {exc.strerror or exc}") from None
    if b"\x00" in data:
        raise GpuwizError(f"{name}: looks like a binary file, not YAML")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise GpuwizError(format_problem(
            name, line, None, f"not UTF-8 text (bad byte 0x{data[exc.start]:02x}; save the file as UTF-8)")) from None


def parse(text: str, name: str = "<string>") -> tuple[Any, LineMap]:
    """Parse YAML text into plain Python data plus a LineMap. Raises GpuwizError."""
    lines = LineMap()
    try:
        node = yaml.compose(text, Loader=_COMPOSER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        what = exc.problem or exc.context or "invalid YAML"
        cmark = exc.context_mark
        if exc.problem and exc.context and cmark is not None and (line is None or cmark.line + 1 != line):
            what += f" ({exc.context} that starts on line {cmark.line + 1})"
        raise GpuwizError(format_problem(name, line, None, f"invalid YAML: {what}")) from None
    except yaml.reader.ReaderError as exc:  # a control character or bad code point in the text
        line = text.count("\n", 0, max(exc.position, 0)) + 1
        what = f"unacceptable character #x{exc.character:04x}" if isinstance(exc.character, int) else str(exc.reason)
        raise GpuwizError(format_problem(name, line, None, f"invalid YAML: {what} ({exc.reason})")) from None
    except yaml.YAMLError as exc:
        raise GpuwizError(format_problem(name, None, None, f"invalid YAML: {exc}")) from None
    if node is None:
        return None, lines
    budget = [MAX_NODES]
    constructor = yaml.SafeLoader("")  # only for scalar resolution of core-schema tags

    def build(n: yaml.Node, path: Path_t) -> Any:
        budget[0] -= 1
        if budget[0] < 0:
            raise GpuwizError(
                format_problem(name, n.start_mark.line + 1, dotted(path) or None,
                               f"document expands to more than {MAX_NODES} values (alias bomb?)")
            )
        lines.set(path, n.start_mark.line + 1)
        if n.tag not in _SAFE_TAGS:
            raise GpuwizError(
                format_problem(name, n.start_mark.line + 1, dotted(path) or None,
                               f"YAML tag {n.tag!r} is not allowed (gpuwiz reads plain YAML only)")
            )
        if isinstance(n, yaml.MappingNode):
            out: dict[Any, Any] = {}
            for k, v in n.value:
                if not isinstance(k, yaml.ScalarNode):
                    raise GpuwizError(format_problem(name, k.start_mark.line + 1, dotted(path) or None,
                                                     "mapping keys must be plain scalars"))
                if k.tag == "tag:yaml.org,2002:merge":
                    raise GpuwizError(format_problem(name, k.start_mark.line + 1, dotted(path) or None,
                                                     "YAML merge keys (<<) are not supported"))
                key = build(k, path)
                if not isinstance(key, (str, int, float, bool)) and key is not None:
                    key = str(key)
                if key in out:
                    raise GpuwizError(format_problem(name, k.start_mark.line + 1, dotted((*path, str(key))),
                                                     "duplicate key"))
                sub = (*path, key if isinstance(key, (str, int)) else str(key))
                lines.set(sub, k.start_mark.line + 1)
                out[key] = build(v, sub)
            return out
        if isinstance(n, yaml.SequenceNode):
            return [build(item, (*path, i)) for i, item in enumerate(n.value)]
        try:
            return constructor.construct_object(n, deep=True)
        except (yaml.YAMLError, ValueError, OverflowError) as exc:
            raise GpuwizError(format_problem(name, n.start_mark.line + 1, dotted(path) or None,
                                             f"bad value: {exc}")) from None

    try:
        return build(node, ()), lines
    except RecursionError:
        raise GpuwizError(format_problem(name, None, None, "YAML nested too deeply")) from None


def load_file(path: str | os.PathLike[str]) -> tuple[Any, LineMap]:
    return parse(read_text(path), str(path))


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` atomically: temp file beside it, fsync, rename.

    On any failure the previous file (if any) is untouched and a GpuwizError says what happened.
    """
    p = Path(path)
    name = str(path)
    if p.is_dir():
        raise GpuwizError(f"{name}: is a directory; give a file name to save to")
    parent = p.parent if str(p.parent) else Path(".")
    tmp_name: str | None = None
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=parent)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        if p.exists():
            try:
                os.chmod(tmp_name, p.stat().st_mode & 0o777)
            except OSError:
                pass
        os.replace(tmp_name, p)
        tmp_name = None
        try:  # make the rename durable too
            dfd = os.open(parent, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        except OSError:
            pass
    except FileNotFoundError:
        raise GpuwizError(f"{name}: cannot save: folder {parent} does not exist") from None
    except PermissionError:
        raise GpuwizError(f"{name}: cannot save: permission denied (previous file left unchanged)") from None
    except OSError as exc:
        raise GpuwizError(
            f"{name}: cannot save: {exc.strerror or exc} (previous file left unchanged)"
        ) from None
    finally:
        if tmp_name is not None:
            try:
                os.unlink(tmp_name)
            except OSError:
                pass
