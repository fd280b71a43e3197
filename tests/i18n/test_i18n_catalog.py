"""The Chinese catalog is complete and current: every message id in the source has a checked
translation, nothing stale is left, the shipped .mo is the compiled .po, and the checker itself
catches each of those faults."""

from __future__ import annotations

import gettext
import io
import shutil
from pathlib import Path

import pytest

from gpuwiz.i18n import tools


def test_every_message_id_is_translated_and_the_mo_is_current() -> None:
    problems = tools.problems()
    assert problems == [], "\n".join(problems[:30]) + "\nfix: python -m gpuwiz.i18n.tools update; translate; compile"


def test_the_source_has_message_ids_from_every_translated_area() -> None:
    found = tools.extract()
    areas = {ref.split("/")[1] for refs in found.ids.values() for ref in refs}
    assert {"tui", "cli.py", "core"} <= areas
    files = {ref for refs in found.ids.values() for ref in refs}
    for f in ("gpuwiz/tui/forms.py", "gpuwiz/tui/widgets/live_panel.py", "gpuwiz/core/report.py",
              "gpuwiz/core/config_io.py", "gpuwiz/cli.py"):
        assert f in files


@pytest.fixture
def po_copy(tmp_path: Path) -> tuple[Path, Path]:
    po, mo = tmp_path / "gpuwiz.po", tmp_path / "gpuwiz.mo"
    shutil.copy(tools.PO, po)
    shutil.copy(tools.MO, mo)
    return po, mo


def test_the_checker_catches_a_missing_translation(po_copy: tuple[Path, Path]) -> None:
    po, mo = po_copy
    entries = tools.read_po(po)
    target = next(e for e in entries if e.msgid == "Live answer")
    target.msgstr = ""
    tools.write_po(entries, po)
    mo.write_bytes(tools.compile_mo(tools.read_po(po)))
    assert "no Chinese translation: 'Live answer'" in tools.problems(po, mo)


def test_the_checker_catches_fuzzy_stale_and_broken_fields(po_copy: tuple[Path, Path]) -> None:
    po, mo = po_copy
    entries = tools.read_po(po)
    next(e for e in entries if e.msgid == "Live answer").fuzzy = True
    next(e for e in entries if e.msgid == "{n} nodes").msgstr = "{count} 个节点"
    entries.append(tools.Entry("a message the source no longer has", "旧的"))
    tools.write_po(entries, po)
    mo.write_bytes(tools.compile_mo(tools.read_po(po)))
    got = tools.problems(po, mo)
    assert "fuzzy (unchecked) translation: 'Live answer'" in got
    assert "the translation's {fields} differ from the id's: '{n} nodes'" in got
    assert "stale entry (the source no longer has it): 'a message the source no longer has'" in got


def test_the_checker_catches_an_outdated_mo(po_copy: tuple[Path, Path]) -> None:
    po, mo = po_copy
    entries = tools.read_po(po)
    next(e for e in entries if e.msgid == "Live answer").msgstr = "实时答案"
    tools.write_po(entries, po)
    assert any("gpuwiz.mo is not the compiled gpuwiz.po" in p for p in tools.problems(po, mo))


def test_po_round_trip_and_the_stdlib_reads_the_compiled_mo(tmp_path: Path) -> None:
    entries = tools.read_po()
    tools.write_po(entries, tmp_path / "x.po")
    again = tools.read_po(tmp_path / "x.po")
    assert [(e.msgid, e.msgstr, e.fuzzy, e.obsolete) for e in again] == [
        (e.msgid, e.msgstr, e.fuzzy, e.obsolete) for e in entries]
    tr = gettext.GNUTranslations(io.BytesIO(tools.compile_mo(entries)))
    for e in entries:
        if e.msgid and e.msgstr:
            assert tr.gettext(e.msgid) == e.msgstr
    assert tr.info()["content-type"] == "text/plain; charset=UTF-8"


def test_an_fstring_inside_underscore_is_reported(tmp_path: Path) -> None:
    pkg = tmp_path / "gpuwiz"
    pkg.mkdir()
    (pkg / "m.py").write_text('n = 3\nx = _(f"{n} nodes")\ny = _("fine {n}").format(n=n)\n', encoding="utf-8")
    found = tools.extract(pkg)
    assert list(found.ids) == ["fine {n}"]
    assert found.problems == ["gpuwiz/m.py:2: _() of an f-string (it cannot be translated: use a .format template)"]


def test_glossary_terms_are_used_as_pinned() -> None:
    """Every term the glossary pins is spelled that way in the catalog wherever its English is."""
    glossary = (Path(__file__).resolve().parents[2] / "docs" / "glossary-zh.md").read_text(encoding="utf-8")
    pinned = [tuple(c.strip(" `") for c in line.strip("|").split("|")[:2])
              for line in glossary.splitlines() if line.startswith("| `")]
    assert len(pinned) >= 9
    for _, word in pinned:
        assert word
    entries = [e for e in tools.read_po() if e.msgid and e.msgstr]
    checks = {"spot": "抢占式", "on-demand": "按量付费", "Memory/GPU": "显存", "Memory per GPU": "显存",
              "reserved": "包年包月"}
    for en, zh in checks.items():
        assert any(zh in p[1] for p in pinned), zh
        uses = [e for e in entries if en.lower() in e.msgid.lower()]
        for e in uses:
            assert zh in e.msgstr, (e.msgid, e.msgstr)


def test_no_function_that_translates_also_binds_underscore() -> None:
    """``for _, x in ...`` or ``a, _ = ...`` makes ``_`` local to the whole function: a ``_("...")``
    in that function would then call a tuple (TypeError at run time, in Chinese and English)."""
    import ast

    bad = []
    for path in sorted(tools.PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            calls = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "_"
                        for n in ast.walk(fn))
            args = fn.args
            params = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
            params += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
            binds = "_" in params or any(isinstance(n, ast.Name) and n.id == "_" and isinstance(n.ctx, ast.Store)
                                         for n in _own_scope(fn))
            if calls and binds:
                bad.append(f"{path.relative_to(tools.PACKAGE.parent)}:{fn.lineno}")
    assert bad == []


def _own_scope(fn: object) -> list[object]:
    """The nodes of a function's own scope (comprehensions and nested functions have their own)."""
    import ast

    scoped = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.FunctionDef, ast.AsyncFunctionDef,
              ast.Lambda, ast.ClassDef)
    out: list[object] = []
    todo = list(ast.iter_child_nodes(fn))  # type: ignore[arg-type]
    while todo:
        n = todo.pop()
        out.append(n)
        if not isinstance(n, scoped):
            todo.extend(ast.iter_child_nodes(n))
    return out
