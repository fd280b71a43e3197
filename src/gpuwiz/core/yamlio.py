"""Safe YAML reading that remembers the line of every value, and atomic writing.

We compose the node graph with PyYAML's SafeLoader and build plain Python objects ourselves, so
that (1) no tag outside the YAML core schema is ever honoured (``!!python/object`` is an error,
not code execution), (2) alias expansion is bounded ("billion laughs" cannot blow up memory), and
(3) every mapping key and value keeps its source line for ``FILE:LINE: field: problem`` errors.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

from gpuwiz.core.errors import GpuwizError, format_problem, printable
from gpuwiz.i18n import N_, _

# what callers name the file they read (translated where the message is built)
WHATS = (N_("file"), N_("config"), N_("YAML file"), N_("YAML"), N_("JSON"), N_("draft"), N_("lock file"),
         N_("log file"), N_("cache entry"))

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
    """Maps a field path (tuple of keys / indexes) to the 1-based line where it appears.

    ``fill`` (optional) builds the map on first use: the JSON fast path of :func:`parse` leaves
    the lines to be found by the YAML reader only when someone asks (an error message)."""

    def __init__(self, fill: Callable[[], LineMap] | None = None) -> None:
        self._lines: dict[Path_t, int] = {}
        self._fill = fill

    def _ready(self) -> dict[Path_t, int]:
        if self._fill is not None:
            fill, self._fill = self._fill, None
            try:
                self._lines.update(fill()._lines)
            except GpuwizError:  # JSON the YAML reader refuses: no lines to give
                pass
        return self._lines

    def set(self, path: Path_t, line: int) -> None:
        self._ready().setdefault(path, line)

    def has(self, path: Path_t) -> bool:
        """Whether ``path`` itself (not an ancestor) appears in the file."""
        return tuple(path) in self._ready()

    def line(self, path: Path_t) -> int | None:
        """Line of ``path``, or of its nearest ancestor that has one."""
        lines = self._ready()
        p = tuple(path)
        while True:
            if p in lines:
                return lines[p]
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


def _describe_kind(mode: int, reading: bool = True) -> str | None:
    """What a non-regular file is, for the one-line refusal (None for a regular file); with
    ``reading`` it adds that gpuwiz reads regular files only."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return _("is a directory, not a file")
    if stat.S_ISFIFO(mode):
        what = _("is a named pipe (FIFO), not a regular file")
    elif stat.S_ISSOCK(mode):
        what = _("is a socket, not a regular file")
    elif stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        what = _("is a device, not a regular file")
    else:
        what = _("is not a regular file")
    return what + _("; gpuwiz reads regular files only") if reading else what


def open_regular(path: str | os.PathLike[str], *, what: str, follow_symlinks: bool = True) -> int:
    """Open ``path`` for reading the safe way; the descriptor of a regular file, blocking again.

    ``O_NONBLOCK`` (a FIFO never blocks the open), then ``fstat`` on the open descriptor: anything
    that is not a regular file (FIFO, device, directory, socket) is refused with one line naming the
    path. ``follow_symlinks=False`` adds ``O_NOFOLLOW``. Every OS failure is a one-line GpuwizError.
    """
    name = printable(os.fspath(path))
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(os.fspath(path), flags)
    except FileNotFoundError:
        parent = os.path.dirname(os.fspath(path)) or "."
        if not os.path.isdir(parent):
            raise GpuwizError(f"{name}: " + _("no such file (folder {folder} does not exist)").format(
                folder=printable(parent))) from None
        raise GpuwizError(f"{name}: " + _("no such file")) from None
    except IsADirectoryError:
        raise GpuwizError(f"{name}: " + _("is a directory, not a {what}").format(what=_(what))) from None
    except NotADirectoryError:
        raise GpuwizError(f"{name}: " + _("no such file (a part of the path is a file, not a folder)")) from None
    except PermissionError:
        raise GpuwizError(f"{name}: " + _("permission denied (cannot read the {what})").format(what=_(what))) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise GpuwizError(f"{name}: " + _("is a symbolic link; gpuwiz does not follow it here")) from None
        if exc.errno == errno.ENAMETOOLONG:
            raise GpuwizError(f"{printable(name[:60])}...: " + _("file name too long")) from None
        if exc.errno == errno.ENXIO:  # a socket (or a device without a driver) cannot be opened
            try:
                kind = _describe_kind(os.stat(path).st_mode)
            except OSError:
                kind = None
            if kind:
                raise GpuwizError(f"{name}: {kind}") from None
        raise GpuwizError(f"{name}: " + _("cannot read: {why}").format(why=exc.strerror or exc)) from None
    except ValueError:  # an embedded NUL in the name
        raise GpuwizError(f"{name}: " + _("not a valid file name (contains a NUL character)")) from None
    try:
        st = os.fstat(fd)
        kind = _describe_kind(st.st_mode)
        if kind is not None:
            if stat.S_ISDIR(st.st_mode):
                kind = _("is a directory, not a {what}").format(what=_(what))
            raise GpuwizError(f"{name}: {kind}")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_error(exc: OSError, name: str, what: str) -> GpuwizError:
    if isinstance(exc, PermissionError):
        return GpuwizError(f"{name}: " + _("permission denied (cannot read the {what})").format(what=_(what)))
    if isinstance(exc, IsADirectoryError):
        return GpuwizError(f"{name}: " + _("is a directory, not a {what}").format(what=_(what)))
    return GpuwizError(f"{name}: " + _("cannot read: {why}").format(why=exc.strerror or exc))


def read_file_bytes(path: str | os.PathLike[str], *, max_bytes: int = MAX_FILE_BYTES,
                    what: str = "file", follow_symlinks: bool = True) -> bytes:
    """THE reader for every file gpuwiz opens whole (configs, overlays, HF config.json, drafts,
    published runs, price lists); :func:`iter_file_chunks` is its streaming twin (training logs).

    Regular files only (see :func:`open_regular`); checks the size before reading and never reads
    more than ``max_bytes`` (+1, to notice a file that grew). Every failure is one GpuwizError line.
    """
    name = printable(os.fspath(path))
    fd = open_regular(path, what=what, follow_symlinks=follow_symlinks)
    try:
        st = os.fstat(fd)
        if st.st_size > max_bytes:
            raise GpuwizError(f"{name}: " + _("file is {mb:.1f} MB; gpuwiz reads {what}s up to {max} MB").format(
                mb=st.st_size / 1e6, what=_(what), max=_mb(max_bytes)))
        chunks: list[bytes] = []
        total = 0
        # the size it has, +1 to notice growth, then small reads: os.read allocates what it asks for, and
        # 1 MB per read was a fresh mapping (two system calls) for every file, even an empty answer at EOF
        want = st.st_size + 1 if st.st_size else 1 << 20
        while total <= max_bytes:
            chunk = os.read(fd, min(want, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            want = 1 << 16
        if total > max_bytes:  # it grew while we read it
            raise GpuwizError(f"{name}: " + _("file is over {max} MB; gpuwiz reads {what}s up to {max} MB").format(
                what=_(what), max=_mb(max_bytes)))
        return b"".join(chunks)
    except OSError as exc:
        raise _read_error(exc, name, what) from None
    finally:
        os.close(fd)


def iter_file_chunks(path: str | os.PathLike[str], *, max_bytes: int, chunk_bytes: int = 1 << 16,
                     what: str = "file") -> Iterator[bytes]:
    """The file's bytes in chunks, with :func:`read_file_bytes`'s checks (regular files only, opened
    without blocking) and a cap: past ``max_bytes`` (checked before reading, and again as it is
    read, for a file that grows) it is a one-line GpuwizError. For files too big to hold whole."""
    name = printable(os.fspath(path))
    fd = open_regular(path, what=what)
    try:
        size = os.fstat(fd).st_size
        if size > max_bytes:
            raise GpuwizError(f"{name}: " + _("file is {mb:.0f} MB; gpuwiz reads {what}s up to {max} MB").format(
                mb=size / 1e6, what=_(what), max=_mb(max_bytes)))
        total = 0
        while True:
            try:
                chunk = os.read(fd, chunk_bytes)
            except OSError as exc:
                raise _read_error(exc, name, what) from None
            if not chunk:
                return
            total += len(chunk)
            if total > max_bytes:
                raise GpuwizError(f"{name}: " + _("file is over {max} MB; gpuwiz reads {what}s up to {max} "
                                                  "MB").format(what=_(what), max=_mb(max_bytes)))
            yield chunk
    finally:
        os.close(fd)


def _mb(n: int) -> str:
    return f"{n / 1e6:.0f}" if n >= 1e6 else f"{n / 1e6:.1f}"


_OTHER_BOMS = ((b"\x00\x00\xfe\xff", "UTF-32"), (b"\xff\xfe\x00\x00", "UTF-32"),
               (b"\xfe\xff", "UTF-16"), (b"\xff\xfe", "UTF-16"))


def decode_utf8(data: bytes, name: str, *, what: str = "YAML") -> str:
    """Strict UTF-8 (a BOM is accepted); NUL bytes mean a binary file. One-line errors."""
    for bom, enc in _OTHER_BOMS:  # PowerShell's `>` writes UTF-16: say so, not "binary"
        if data.startswith(bom):
            raise GpuwizError(f"{printable(name)}: " + _("is {enc} text; gpuwiz reads UTF-8 (save the file as "
                                                         "UTF-8)").format(enc=enc))
    if b"\x00" in data:
        raise GpuwizError(f"{printable(name)}: " + _("looks like a binary file, not {what}").format(what=_(what)))
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise GpuwizError(format_problem(
            name, line, None, _("not UTF-8 text (bad byte 0x{byte:02x}; save the file as UTF-8)").format(
                byte=data[exc.start]))) from None


def read_text(path: str | os.PathLike[str], *, max_bytes: int = MAX_FILE_BYTES, what: str = "YAML file") -> str:
    """Read a UTF-8 text file through :func:`read_file_bytes` (regular files only, size-capped)."""
    data = read_file_bytes(path, max_bytes=max_bytes, what=what)
    return decode_utf8(data, os.fspath(path), what="YAML" if what == "YAML file" else what)


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class _NotPlainJSON(Exception):
    """The text is not JSON the fast path may take (the YAML reader decides)."""


def _json_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):  # a duplicate key: the YAML reader names its line
        raise _NotPlainJSON
    return out


def _json_constant(word: str) -> Any:
    raise _NotPlainJSON  # NaN / Infinity are not YAML core-schema values as JSON writes them


def _parse_json(text: str) -> Any:
    """The data of a JSON object document (full-line ``#`` comments allowed before it), or raise
    _NotPlainJSON. JSON is YAML, so the result is what the YAML reader would build, at C speed:
    this is what makes a big ``catalog import`` overlay load fast."""
    start = 0
    while True:  # skip leading blank lines and comment lines
        end = text.find("\n", start)
        line = text[start:] if end < 0 else text[start:end]
        if line.strip() and not line.lstrip().startswith("#"):
            break
        if end < 0:
            raise _NotPlainJSON
        start = end + 1
    if not text[start:].lstrip().startswith("{"):
        raise _NotPlainJSON
    if _SURROGATE_ESCAPE.search(text, start):  # json.loads would let a lone surrogate through
        raise _NotPlainJSON
    try:
        return json.loads(text[start:], object_pairs_hook=_json_pairs, parse_constant=_json_constant)
    except (ValueError, RecursionError):  # not JSON (or too deep / huge): the YAML reader says why
        raise _NotPlainJSON from None


def parse(text: str, name: str = "<string>") -> tuple[Any, LineMap]:
    """Parse YAML text into plain Python data plus a LineMap. Raises GpuwizError.

    A JSON object document (what ``gpuwiz catalog import`` writes) is read by the json module;
    its LineMap is filled by the YAML reader the first time an error message asks for a line."""
    try:
        data = _parse_json(text)
    except _NotPlainJSON:
        return _parse_yaml(text, name)
    return data, LineMap(fill=lambda: _parse_yaml(text, name)[1])


def _parse_yaml(text: str, name: str) -> tuple[Any, LineMap]:
    lines = LineMap()
    try:
        node = yaml.compose(text, Loader=_COMPOSER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        what = exc.problem or exc.context or "invalid YAML"
        cmark = exc.context_mark
        if exc.problem and exc.context and cmark is not None and (line is None or cmark.line + 1 != line):
            what += _(" ({context} that starts on line {line})").format(context=exc.context, line=cmark.line + 1)
        raise GpuwizError(format_problem(name, line, None, _("invalid YAML: {what}").format(what=what))) from None
    except yaml.reader.ReaderError as exc:  # a control character or bad code point in the text
        line = text.count("\n", 0, max(exc.position, 0)) + 1
        what = (_("unacceptable character #x{code:04x}").format(code=exc.character) if isinstance(exc.character, int)
                else str(exc.reason))
        raise GpuwizError(format_problem(name, line, None, _("invalid YAML: {what}").format(
            what=f"{what} ({exc.reason})"))) from None
    except yaml.YAMLError as exc:
        raise GpuwizError(format_problem(name, None, None, _("invalid YAML: {what}").format(what=exc))) from None
    if node is None:
        return None, lines
    budget = [MAX_NODES]
    constructor = yaml.SafeLoader("")  # only for scalar resolution of core-schema tags
    # Scalars are most of a document (an overlay of 5,000 offers has ~170k): a plain string is its
    # node's value, and the other core tags go straight to SafeConstructor's function for the tag,
    # skipping construct_object's bookkeeping (which only matters for recursive nodes).
    scalar_fns = {tag: constructor.yaml_constructors[tag] for tag in _SAFE_TAGS
                  if tag in constructor.yaml_constructors}
    str_tag = "tag:yaml.org,2002:str"
    set_line = lines._ready().setdefault

    def build(n: yaml.Node, path: Path_t) -> Any:
        budget[0] -= 1
        if budget[0] < 0:
            raise GpuwizError(
                format_problem(name, n.start_mark.line + 1, dotted(path) or None,
                               _("document expands to more than {n} values (alias bomb?)").format(n=MAX_NODES))
            )
        set_line(path, n.start_mark.line + 1)
        if n.tag == str_tag and isinstance(n, yaml.ScalarNode):
            return n.value
        if n.tag not in _SAFE_TAGS:
            raise GpuwizError(
                format_problem(name, n.start_mark.line + 1, dotted(path) or None,
                               _("YAML tag {tag!r} is not allowed (gpuwiz reads plain YAML only)").format(tag=n.tag))
            )
        if isinstance(n, yaml.MappingNode):
            out: dict[Any, Any] = {}
            for k, v in n.value:
                if not isinstance(k, yaml.ScalarNode):
                    raise GpuwizError(format_problem(name, k.start_mark.line + 1, dotted(path) or None,
                                                     _("mapping keys must be plain scalars")))
                if k.tag == "tag:yaml.org,2002:merge":
                    raise GpuwizError(format_problem(name, k.start_mark.line + 1, dotted(path) or None,
                                                     _("YAML merge keys (<<) are not supported")))
                key = build(k, path)
                if not isinstance(key, (str, int, float, bool)) and key is not None:
                    key = str(key)
                if key in out:
                    raise GpuwizError(format_problem(name, k.start_mark.line + 1, dotted((*path, str(key))),
                                                     _("duplicate key")))
                sub = (*path, key if isinstance(key, (str, int)) else str(key))
                set_line(sub, k.start_mark.line + 1)
                out[key] = build(v, sub)
            return out
        if isinstance(n, yaml.SequenceNode):
            return [build(item, (*path, i)) for i, item in enumerate(n.value)]
        try:
            fn = scalar_fns.get(n.tag)
            return fn(constructor, n) if fn is not None else constructor.construct_object(n, deep=True)
        except (yaml.YAMLError, ValueError, OverflowError, KeyError, TypeError, AttributeError,
                IndexError) as exc:
            # PyYAML's constructors fail on explicit tags with bad or empty values in many ways
            # (`!!bool maybe` -> KeyError, `!!timestamp x` -> AttributeError, `!!float ""` -> ...)
            tag = n.tag.rsplit(":", 1)[-1]
            detail = f": {exc}" if isinstance(exc, (yaml.YAMLError, ValueError, OverflowError)) else ""
            if "digits" in detail and "limit" in detail:  # int() refuses > 4300 digits
                detail = _(": a number with thousands of digits")
            raise GpuwizError(format_problem(name, n.start_mark.line + 1, dotted(path) or None,
                                             _("bad value {value} for YAML tag !!{tag}{detail}").format(
                                                 value=_clip(n.value), tag=tag, detail=detail))) from None

    try:
        return build(node, ()), lines
    except RecursionError:
        raise GpuwizError(format_problem(name, None, None, _("YAML nested too deeply"))) from None


def _clip(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def load_file(path: str | os.PathLike[str], *, max_bytes: int = MAX_FILE_BYTES) -> tuple[Any, LineMap]:
    return parse(read_text(path, max_bytes=max_bytes), str(path))


def check_output_target(path: str | os.PathLike[str]) -> None:
    """Refuse to replace anything but a regular file (a symlink, FIFO, device node, socket, folder).

    ``os.replace`` would swap such a target for a plain file: as root, ``-o /dev/null`` would
    replace the system's /dev/null. Raises a one-line GpuwizError.
    """
    name = printable(os.fspath(path))
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise GpuwizError(f"{name}: " + _("cannot save: {why}").format(why=exc.strerror or exc)) from None
    if stat.S_ISLNK(st.st_mode):
        raise GpuwizError(f"{name}: " + _("is a symbolic link; gpuwiz does not replace links (give the real file "
                                          "name)"))
    kind = _describe_kind(st.st_mode, reading=False)
    if kind is not None:
        if stat.S_ISDIR(st.st_mode):
            raise GpuwizError(f"{name}: " + _("is a directory; give a file name to save to"))
        raise GpuwizError(f"{name}: {kind}" + _("; gpuwiz replaces only regular files"))


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` atomically: temp file beside it, fsync, rename.

    A symlink is followed (its target is replaced, the link kept); a FIFO, device node, socket or
    folder is refused (``check_output_target``). ``gpuwiz ... -o`` refuses symlinks before this.
    On any failure the previous file (if any) is untouched and a GpuwizError says what happened.
    """
    p = Path(path)
    name = printable(str(path))
    try:
        if p.is_symlink():  # a linked config (dotfiles): replace the file it points to, keep the link
            p = Path(os.path.realpath(p))
    except OSError as exc:  # a name over NAME_MAX / PATH_MAX: lstat raises (found by the TUI's Export)
        raise GpuwizError(f"{name}: " + _("cannot save: {why}").format(why=exc.strerror or exc)) from None
    except ValueError:
        raise GpuwizError(f"{name}: " + _("not a valid file name (contains a NUL character)")) from None
    check_output_target(p)  # a FIFO, device node, socket or folder is never replaced
    parent = p.parent if str(p.parent) else Path(".")
    tmp_name: str | None = None
    try:
        import tempfile  # only when writing: tempfile pulls in shutil, random, ...

        fd, tmp_name = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=parent)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        try:  # mkstemp makes 0600: keep the old file's mode, or honour the umask for a new one
            os.chmod(tmp_name, p.stat().st_mode & 0o777 if p.exists() else 0o666 & ~_umask())
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
        if not parent.is_dir():
            raise GpuwizError(f"{name}: " + _("cannot save: folder {folder} does not exist").format(
                folder=printable(str(parent)))) from None
        raise GpuwizError(
            f"{name}: " + _("cannot save: the file vanished while saving (previous file left unchanged)")) from None
    except NotADirectoryError:
        raise GpuwizError(f"{name}: " + _("cannot save: {folder} is not a folder").format(
            folder=printable(str(parent)))) from None
    except PermissionError:
        raise GpuwizError(f"{name}: " + _("cannot save: permission denied (previous file left unchanged)")) from None
    except OSError as exc:
        raise GpuwizError(
            f"{name}: " + _("cannot save: {why} (previous file left unchanged)").format(why=exc.strerror or exc)
        ) from None
    finally:
        if tmp_name is not None:
            try:
                os.unlink(tmp_name)
            except OSError:
                pass
