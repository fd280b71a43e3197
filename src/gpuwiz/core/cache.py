"""A small on-disk cache of validated documents (the catalog), keyed by a content digest.

Each entry is one file ``<kind>-<key>.cache`` in the user cache directory (platformdirs;
``GPUWIZ_CACHE_DIR`` overrides it, and the tests always set it). The first line is a header that
repeats the key and carries a CRC-32 of the payload, so a file that is truncated, damaged,
renamed or written by another version is never served: :func:`read_bytes` returns ``None`` and the
caller rebuilds. What an entry holds is decided by its key (the callers' SHA-256 of everything the
entry is made from, :func:`digest`); the CRC only tells a whole file from a damaged one, which it
does for every burst of up to 32 bits and all but 1 in 2**32 of other damage, at 0.04 ms where
SHA-256 took 0.1-0.2 ms of a 2 ms start. (A checksum cannot stop someone who may write the cache
folder, and neither could a digest: they could write the digest too.) Writes go to a temporary
file in the same folder and are renamed into place, so concurrent writers (two gpuwiz processes
starting at once) leave one whole file. Every failure is silent: the cache only ever makes start-up
faster, it never changes an answer or raises.
"""

from __future__ import annotations

import os
from hashlib import blake2b, sha256
from pathlib import Path

ENV_CACHE_DIR = "GPUWIZ_CACHE_DIR"
FORMAT = "gpuwiz-cache 3"  # 2: the payload is bytes (the catalog: marshal, see core/catalog.py); 3: CRC-32
MAX_ENTRIES = 16  # per kind; older entries (other catalog versions / overlays) are removed
MAX_ENTRY_BYTES = 64 << 20  # the validated catalog is a few MB; anything bigger is not ours


# Below this many bytes in all, digest() uses BLAKE2b: OpenSSL's SHA-256 spends ~45 us setting itself up on
# its first call in a process (a settled catalog's key hashes ~0.5 kB; the engine's memo already uses BLAKE2b).
SMALL_DIGEST_BYTES = 1 << 16


def digest(*parts: bytes) -> str:
    """Hex digest (64 digits) of ``parts`` (length-prefixed, so ("ab", "c") and ("a", "bc") differ): SHA-256
    for large inputs (with the CPU's SHA instructions it is twice as fast as BLAKE2b on the ~0.5 MB of a
    catalog hashed by content), BLAKE2b-256 for small ones (see SMALL_DIGEST_BYTES). Which one depends
    on the total size alone, so equal parts always give the same digest."""
    h = sha256() if sum(len(p) for p in parts) >= SMALL_DIGEST_BYTES else blake2b(digest_size=32)
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()


def cache_dir() -> Path | None:
    """Where cache files live, or None when no directory can be determined (resolved in one place,
    gpuwiz._pyc, which the bytecode cache reads before the engine is imported)."""
    from gpuwiz._pyc import cache_folder

    folder = cache_folder()
    return None if folder is None else Path(folder)


def _path(kind: str, key: str) -> Path | None:
    folder = cache_dir()
    return None if folder is None else folder / f"{kind}-{key}.cache"


def checksum(data: bytes | memoryview) -> str:
    """The payload check of an entry's header: CRC-32, 8 hex digits (binascii is always built in)."""
    from binascii import crc32

    return f"{crc32(data):08x}"


def read_bytes(kind: str, key: str) -> memoryview | None:
    """The payload stored under ``key``, or None when missing, unreadable, corrupt or not for this key.
    A view into the bytes read, not a copy (a copy of the catalog's was 56 new pages: 0.1-0.2 ms)."""
    path = _path(kind, key)
    if path is None:
        return None
    from gpuwiz.core.errors import GpuwizError
    from gpuwiz.core.yamlio import read_file_bytes

    try:  # the one safe reader: a FIFO or device in the cache folder is a miss, not a hang
        raw = read_file_bytes(path, max_bytes=MAX_ENTRY_BYTES, what="cache entry")
    except GpuwizError:
        return None
    end = raw.find(b"\n")
    if end < 0:
        return None
    payload = memoryview(raw)[end + 1:]
    expected = f"{FORMAT} {key} {checksum(payload)}".encode("ascii")
    return payload if raw[:end] == expected else None


def write_bytes(kind: str, key: str, data: bytes) -> bool:
    """Store ``data`` under ``key`` atomically. Returns False (silently) when it cannot."""
    path = _path(kind, key)
    if path is None:
        return False
    blob = f"{FORMAT} {key} {checksum(data)}\n".encode("ascii") + data
    import tempfile  # only on a miss: tempfile pulls in shutil, random, ...

    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as fh:
            fh.write(blob)
        os.replace(tmp, path)
        tmp = None
    except OSError:
        return False
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    _prune(path.parent, kind, keep=path)
    return True


def _prune(folder: Path, kind: str, keep: Path) -> None:
    """Keep the newest MAX_ENTRIES entries of ``kind``; never fails."""
    try:
        entries = [p for p in folder.glob(f"{kind}-*.cache") if p != keep]
        for old in folder.glob(f"{kind}-*.json"):  # format 1 entries (JSON, before issue 16's marshal form)
            old.unlink()
        if len(entries) < MAX_ENTRIES:
            return
        entries.sort(key=lambda p: p.stat().st_mtime)
        for old in entries[: len(entries) - MAX_ENTRIES + 1]:
            old.unlink()
    except OSError:
        pass
