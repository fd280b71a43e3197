"""Hostile terminal input: bytes that are not UTF-8, CSI sequences with huge numbers, mouse reports
off any screen, bracketed pastes full of markup and control characters, pastes of 100,000 characters.
The real program in a pseudo-terminal keeps running, keeps the keys typed around them and the draft;
a paste reaches the wizard as plain text (Pilot)."""

from __future__ import annotations

import pytest
from test_tui_robustness import ENTER, TAB, Wizard, _draft_req, _wait_until, _why
from textual import events
from textual.widgets import Input, Static

from gpuwiz.core.models import Requirements
from gpuwiz.tui.app import create_app
from gpuwiz.tui.dialogs.path_dialog import PathDialog
from gpuwiz.tui.driver import strip_absurd_csi

pytestmark = pytest.mark.xdist_group("tui-realtime")

# Each crashed (or would crash) Textual 8.2.8's input thread, or is a report no terminal sends.
HOSTILE_CSI = [
    b"\x1b[99999999999999999999;1R",  # a cursor-position report past any int
    b"\x1b[9999999999M",
    b"\x1b[<99999999999999999999;1;1M",  # SGR mouse, absurd button
    b"\x1b[<0;99999999999;99999999999M",  # SGR mouse far off the screen
    b"\x1b[9999999999;9999999999H",  # Kitty-key parse: chr() OverflowError
    b"\x1b[1114112u",  # one past U+10FFFF: chr() ValueError
    b"\x1b[?99999999999999u",
    b"\x1b[" + b"9" * 5000 + b"~",
    b"\x1b[1;99999999999999P",
    b"\x1b[99999999999999;99999999999999;99999999999999t",
    b"\x1b[?2026;99999999999$y",
    b"\x1b[48;5;999999999999m",
]
# (An unknown sequence longer than Textual's search threshold, e.g. a 10,000-byte OSC, is typed in
# as the keys it is made of: Textual's design for alt+key; text, not a crash.)


def test_absurd_csi_numbers_are_removed_and_the_rest_kept():
    text = "a\x1b[9999999999;9999999999Hb\x1b[1114112uc\x1b[1114111u\x1b[<0;10;20Md\x1b[" + "9" * 5000 + "~e"
    assert strip_absurd_csi(text) == "abc\x1b[1114111u\x1b[<0;10;20Mde"
    assert strip_absurd_csi("\x1b[A\x1b[1;5C\x1b[200~x") == "\x1b[A\x1b[1;5C\x1b[200~x"  # real keys untouched


def test_the_parser_backstop_drops_a_sequence_and_keeps_the_session():
    """What the pre-filter cannot see (a hostile sequence split across reads): Textual's own parser
    raises on it; the driver's dispatch drops that input, and a fresh parser reads the next keys."""
    from textual._xterm_parser import XTermParser

    from gpuwiz.tui.driver import SafeInputDriver

    got: list[object] = []
    drv = SafeInputDriver.__new__(SafeInputDriver)  # only the dispatch, no terminal
    drv._debug = False
    drv.process_message = got.append  # type: ignore[method-assign]
    parser = XTermParser(False)
    assert not drv._dispatch(parser.feed("\x1b[1114112u")), "Textual's parser took it: is the backstop still needed?"
    assert drv.dropped == 1
    assert drv._dispatch(drv._new_parser().feed("x"))
    assert [getattr(e, "key", None) for e in got] == ["x"]


def test_hostile_bytes_in_the_real_terminal(tmp_path):
    state = tmp_path / "state"
    wiz = Wizard(state)
    try:
        wiz.wait_for("New config")
        wiz.keys(ENTER)
        wiz.wait_for("What do you train")
        wiz.wait_for("▶")
        for shown in ("▶ HF config.json", "▶ Params (B)"):
            mark = len(wiz.buf)
            wiz.keys(TAB)
            wiz.wait_for(shown, since=mark)
        # every hostile sequence in one read, then the user's keys: the keys still arrive
        import os

        os.write(wiz.master, b"".join(HOSTILE_CSI) + b"\x1b[M\xff\xff\xff" + b"13")
        want = Requirements.model_validate({"model": {"params_b": 13}})
        assert _wait_until(lambda: _draft_req(state) == want, 30), \
            f"keys after the hostile input were lost: {_draft_req(state)}; {_why(state)}; {wiz.text()[-800:]}"
        # a bracketed paste into the Save-as dialog: markup, control characters, a byte that is not
        # UTF-8 and 100,000 characters; Enter gives a one-line refusal and the session goes on
        mark = len(wiz.buf)
        wiz.keys(b"\x1bOQ")  # f2
        wiz.wait_for("Save config as", since=mark)
        wiz.keys(b"\x15")  # ctrl+u: clear the proposed name
        mark = len(wiz.buf)
        paste = str(tmp_path).encode() + b"/" + b"[b]x[/b][@click=app.quit]q[/]\x07\x1b[31m\xff\x00" + b"y" * 100_000
        os.write(wiz.master, b"\x1b[200~" + paste + b"\x1b[201~" + ENTER)
        wiz.wait_for("File name too long", since=mark, timeout=60)
        assert wiz.proc.poll() is None, "the wizard ended"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["state"], "something was written"
        # the dialog closes and the next key still lands in the field
        mark = len(wiz.buf)
        wiz.keys(b"\x1b")
        wiz.wait_for("▶ Params (B)", since=mark)
        wiz.keys(b"7")
        want = Requirements.model_validate({"model": {"params_b": 137}})
        assert _wait_until(lambda: _draft_req(state) == want, 30), f"{_draft_req(state)}; {wiz.text()[-800:]}"
    finally:
        wiz.close()
    assert "Traceback" not in wiz.text()


async def test_a_hostile_paste_is_plain_text_in_the_dialog(tmp_path):
    """Pilot: the same paste reaches the path field as text; the error under it is plain text too."""
    app = create_app(state_dir=tmp_path / "state", handle_signals=False, offer_restore=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        app.action_open()
        for _ in range(40):
            if isinstance(app.screen, PathDialog) and app.screen.query("#path"):
                break
            await pilot.pause(0.05)
        await pilot.pause()
        inp = app.screen.query_one("#path", Input)
        name = str(tmp_path / "[b]x[/b][@click=app.quit]q[/]\x1b[31m")
        inp.post_message(events.Paste(name))
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, PathDialog) and app.is_running
        shown = str(app.screen.query_one("#path-error", Static).render())
        assert "no such file" in shown and "[b]x[/b]" in shown and "[@click=app.quit]" in shown, shown
        assert "\n" not in shown and all(ch.isprintable() for ch in shown), repr(shown)
