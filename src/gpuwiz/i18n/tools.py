"""Catalog tooling (build and test time only; the running program never imports this).

    python -m gpuwiz.i18n.tools update    # message ids from the source → gpuwiz.po (keeps translations)
    python -m gpuwiz.i18n.tools compile   # gpuwiz.po → gpuwiz.mo (the file the package ships)
    python -m gpuwiz.i18n.tools check     # what is missing, fuzzy, stale or out of date (exit 1 if any)

Message ids are found by walking the AST of every module under ``src/gpuwiz``: the first argument
of ``_()`` / ``N_()``, and the texts of the declarative tables that are translated where shown
(``F(path, label, help, placeholder=, none_label=)`` in tui/forms.py, ``StepSpec(id, title, intro)``,
``Binding(key, action, description)``, the titles given to ``notify`` and the dialogs, and
core.whatif's delta labels), and the catalog texts named in ``CATALOG_TEXT``. The .mo writer is
the GNU format, written here so that no build dependency is needed; its output is deterministic
(ids sorted), so a test can compare it with the shipped file byte for byte.
"""

from __future__ import annotations

import ast
import re
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent  # src/gpuwiz
PO = Path(__file__).resolve().parent / "locale" / "zh_CN" / "LC_MESSAGES" / "gpuwiz.po"
MO = PO.with_suffix(".mo")

# callee name → (positional indexes, keyword names) whose string literals are message ids
KEYWORDS: dict[str, tuple[tuple[int, ...], tuple[str, ...]]] = {
    "_": ((0,), ()),
    "N_": ((0,), ()),
    "F": ((1, 2), ("placeholder", "none_label")),
    "StepSpec": ((1, 2), ()),
    "Binding": ((2,), ("description",)),
    "notify": ((0,), ("title",)),  # GpuwizApp.notify translates message and title
    "ChoiceDialog": ((0, 1), ()),  # the dialogs translate their title, message, verb and hint
    "PathDialog": ((0,), ("verb", "hint")),
    "_num_delta": ((1,), ()),  # core.whatif's delta labels, translated by the views that show them
    "_text_delta": ((1,), ()),
    "Delta": ((1,), ()),
}
HEADER = (
    "Project-Id-Version: gpuwiz\n"
    "Language: zh_CN\n"
    "MIME-Version: 1.0\n"
    "Content-Type: text/plain; charset=UTF-8\n"
    "Content-Transfer-Encoding: 8bit\n"
    "Plural-Forms: nplurals=1; plural=0;\n"
)


@dataclass
class Found:
    ids: dict[str, list[str]] = field(default_factory=dict)  # msgid → files that use it (first use first)
    problems: list[str] = field(default_factory=list)  # f-strings passed to _()


def _callee(node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


def extract(root: Path = PACKAGE) -> Found:
    out = Found()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).as_posix()
        if rel.startswith("gpuwiz/i18n/"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = _callee(node)
            if name not in KEYWORDS:
                continue
            positions, keywords = KEYWORDS[name]
            args: list[ast.expr] = [node.args[i] for i in positions if i < len(node.args)]
            args += [k.value for k in node.keywords if k.arg in keywords]
            for arg in args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    if arg.value:
                        out.ids.setdefault(arg.value, [])
                        if rel not in out.ids[arg.value]:
                            out.ids[arg.value].append(rel)
                elif name in ("_", "N_") and isinstance(arg, ast.JoinedStr):
                    out.problems.append(f"{rel}:{node.lineno}: {name}() of an f-string (it cannot be "
                                        "translated: use a .format template)")
    _catalog_ids(root, out)
    return out


# Catalog text a user reads, translated where shown with ``_(text)`` (the catalog itself stays
# English; an overlay's own text, not in the .po, shows as written): section -> list of fields.
CATALOG_TEXT: dict[tuple[str, ...], tuple[str, ...]] = {
    ("export_rules",): ("summary",),  # the export facts in the memo, the remote-access pitfall
    ("platforms", "software"): ("driver", "torch"),  # the driver / PyTorch lines of the software stack
}


def _catalog_ids(root: Path, out: Found) -> None:
    """The CATALOG_TEXT strings of ``root``/catalog.yaml as message ids (ref gpuwiz/catalog.yaml)."""
    path = root / "catalog.yaml"
    if not path.exists():
        return
    import yaml

    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    rel = path.relative_to(root.parent).as_posix()
    for section, fields in CATALOG_TEXT.items():
        node = doc
        for part in section:
            node = node.get(part, {}) if isinstance(node, dict) else {}
        for item in node if isinstance(node, list) else []:
            for f in fields:
                text = item.get(f) if isinstance(item, dict) else None
                if isinstance(text, str) and text:
                    out.ids.setdefault(text, [])
                    if rel not in out.ids[text]:
                        out.ids[text].append(rel)


# ---- .po ---------------------------------------------------------------------------------------
@dataclass
class Entry:
    msgid: str
    msgstr: str = ""
    refs: list[str] = field(default_factory=list)
    fuzzy: bool = False
    obsolete: bool = False
    comments: list[str] = field(default_factory=list)  # translator comments ("# ...")


_ESC = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t"}
_UNESC = {"\\\\": "\\", '\\"': '"', "\\n": "\n", "\\t": "\t"}


def _quote(s: str) -> str:
    if "\n" in s[:-1]:
        parts = s.splitlines(keepends=True)
        return '""\n' + "\n".join('"' + "".join(_ESC.get(c, c) for c in p) + '"' for p in parts)
    return '"' + "".join(_ESC.get(c, c) for c in s) + '"'


def _unquote(s: str) -> str:
    s = s.strip()
    if not (s.startswith('"') and s.endswith('"')):
        raise ValueError(f"bad .po string: {s!r}")
    return re.sub(r'\\[\\"nt]', lambda m: _UNESC[m.group(0)], s[1:-1])


def read_po(path: Path = PO) -> list[Entry]:
    entries: list[Entry] = []
    if not path.exists():
        return entries
    cur: Entry | None = None
    key: str | None = None
    pending_refs: list[str] = []
    pending_comments: list[str] = []
    fuzzy = False

    def flush() -> None:
        nonlocal cur
        if cur is not None:
            entries.append(cur)
        cur = None

    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.rstrip("\n")
        obsolete = line.startswith("#~")
        if obsolete:
            line = line[2:].lstrip()
        if not line.strip():
            flush()
            key = None
            continue
        if line.startswith("#:"):
            flush()
            pending_refs += line[2:].split()
        elif line.startswith("#,"):
            flush()
            fuzzy = "fuzzy" in line
        elif line.startswith("#") and not obsolete:
            flush()
            pending_comments.append(line[1:].strip())
        elif line.startswith("msgid "):
            flush()
            cur = Entry(_unquote(line[6:]), refs=pending_refs, fuzzy=fuzzy, obsolete=obsolete,
                        comments=pending_comments)
            pending_refs, pending_comments, fuzzy, key = [], [], False, "msgid"
        elif line.startswith("msgstr "):
            if cur is None:
                raise ValueError(f"{path}: msgstr without msgid")
            cur.msgstr, key = _unquote(line[7:]), "msgstr"
        elif line.lstrip().startswith('"') and cur is not None and key is not None:
            setattr(cur, key, getattr(cur, key) + _unquote(line))
        else:
            raise ValueError(f"{path}: cannot read line {raw!r}")
    flush()
    return entries


def write_po(entries: list[Entry], path: Path = PO) -> None:
    out = ["# Simplified Chinese catalog of gpuwiz. Terms: docs/glossary-zh.md.",
           "# Regenerate ids with `python -m gpuwiz.i18n.tools update`, then `compile`.",
           'msgid ""', "msgstr " + _quote(HEADER), ""]
    for e in entries:
        if not e.msgid:
            continue
        pre = "#~ " if e.obsolete else ""
        out += [f"# {c}" for c in e.comments]
        if e.refs and not e.obsolete:
            out.append("#: " + " ".join(e.refs))
        if e.fuzzy:
            out.append("#, fuzzy")
        out += [pre + ln for ln in ("msgid " + _quote(e.msgid)).split("\n")]
        out += [pre + ln for ln in ("msgstr " + _quote(e.msgstr)).split("\n")]
        out.append("")
    path.write_text("\n".join(out), encoding="utf-8")


def update(found: Found | None = None, path: Path = PO) -> list[Entry]:
    """Entries for the ids in the source, in first-use order: translations kept, new ids empty,
    ids the source no longer has kept as obsolete (``#~``) for a translator to reuse or drop."""
    found = found or extract()
    old = {e.msgid: e for e in read_po(path) if e.msgid}
    entries = []
    for msgid, refs in found.ids.items():
        e = old.pop(msgid, None) or Entry(msgid)
        e.refs, e.obsolete = refs, False
        entries.append(e)
    for e in old.values():
        if e.msgstr:
            e.obsolete, e.refs = True, []
            entries.append(e)
    return entries


# ---- .mo ---------------------------------------------------------------------------------------
def compile_mo(entries: list[Entry]) -> bytes:
    """The GNU .mo bytes of the translated, non-fuzzy, current entries (plus the header)."""
    table = {e.msgid: e.msgstr for e in entries if e.msgid and e.msgstr and not e.fuzzy and not e.obsolete}
    table[""] = HEADER
    keys = sorted(table)
    ids = [k.encode("utf-8") for k in keys]
    strs = [table[k].encode("utf-8") for k in keys]
    n = len(keys)
    start = 7 * 4 + 16 * n
    offsets: list[tuple[int, int, int, int]] = []
    id_blob = b""
    for b in ids:
        offsets.append((len(b), start + len(id_blob), 0, 0))
        id_blob += b + b"\0"
    str_blob = b""
    str_start = start + len(id_blob)
    final = []
    for (ilen, ioff, _, _), b in zip(offsets, strs, strict=True):
        final.append((ilen, ioff, len(b), str_start + len(str_blob)))
        str_blob += b + b"\0"
    head = struct.pack("<7I", 0x950412DE, 0, n, 7 * 4, 7 * 4 + 8 * n, 0, 0)
    id_tab = b"".join(struct.pack("<2I", ln, off) for ln, off, _, _ in final)
    str_tab = b"".join(struct.pack("<2I", ln, off) for _, _, ln, off in final)
    return head + id_tab + str_tab + id_blob + str_blob


_FIELD = re.compile(r"\{[^{}]*\}")


def placeholders(s: str) -> list[str]:
    return sorted(_FIELD.findall(s))


def problems(path: Path = PO, mo: Path = MO) -> list[str]:
    """Everything that keeps the catalog from being complete and current (empty when it is)."""
    found = extract()
    out = list(found.problems)
    entries = read_po(path)
    by_id = {e.msgid: e for e in entries if e.msgid}
    for msgid in found.ids:
        e = by_id.get(msgid)
        if e is None:
            out.append(f"not in gpuwiz.po: {msgid!r} (run `python -m gpuwiz.i18n.tools update`)")
        elif not e.msgstr:
            out.append(f"no Chinese translation: {msgid!r}")
        elif e.fuzzy:
            out.append(f"fuzzy (unchecked) translation: {msgid!r}")
        elif placeholders(e.msgid) != placeholders(e.msgstr):
            out.append(f"the translation's {{fields}} differ from the id's: {msgid!r}")
    for e in entries:
        if e.msgid and (e.obsolete or e.msgid not in found.ids):
            out.append(f"stale entry (the source no longer has it): {e.msgid!r}")
    if not mo.exists() or mo.read_bytes() != compile_mo(entries):
        out.append("gpuwiz.mo is not the compiled gpuwiz.po (run `python -m gpuwiz.i18n.tools compile`)")
    return out


def main(argv: list[str]) -> int:
    cmd = argv[0] if argv else "check"
    if cmd == "update":
        entries = update()
        write_po(entries)
        todo = sum(1 for e in entries if not e.msgstr and not e.obsolete)
        print(f"{PO}: {len(entries)} entries, {todo} without a translation")
        return 0
    if cmd == "compile":
        MO.write_bytes(compile_mo(read_po()))
        print(f"wrote {MO}")
        return 0
    if cmd == "check":
        found = problems()
        for p in found:
            print(p)
        ids = extract().ids
        print(f"{len(ids)} message ids; {len(found)} problems")
        return 1 if found else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
