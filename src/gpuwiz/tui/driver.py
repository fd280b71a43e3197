"""The terminal driver: Textual's Linux driver with an input loop that survives hostile bytes.

Why this exists (Textual 8.2.8, measured in a pseudo-terminal, tests/robustness/test_terminal_input.py):
the stock input thread decodes stdin as strict UTF-8 and hands every sequence to Textual's xterm
parser with no guard, and any exception there ends the whole session (``App.panic``) with a
traceback. Two inputs do that:

* a byte that is not UTF-8 (``\\xff``; a Latin-1 terminal's meta key, a mouse report in the X10
  encoding past column 95, line noise on a serial console) -> ``UnicodeDecodeError``;
* a CSI sequence with a huge number, e.g. ``ESC [ 9999999999 ; 9999999999 H`` -> the Kitty key
  parser calls ``chr()`` on it -> ``OverflowError`` (``ValueError`` past U+10FFFF).

Here the decoder replaces bad bytes with U+FFFD; a CSI sequence carrying a number past the last
Unicode code point (U+10FFFF; no real key, mouse or terminal report comes near it), or longer than
MAX_CSI_CHARS, is removed before the parser sees it, so the keys typed around it still arrive (a
CSI cut by the end of a read waits for the next read, so a split one is judged whole); and, as a
backstop for a parser failure not met yet, a sequence the parser fails on is dropped with the rest
of that read (at most 4 KiB) and the parser rebuilt, instead of ending the session. Everything else
is Textual's own behaviour.
"""

from __future__ import annotations

import codecs
import os
import re
import selectors
from collections.abc import Iterable

from textual._parser import ParseError
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver
from textual.message import Message

READ_BYTES = 4096
MAX_CSI_NUMBER = 0x10FFFF
MAX_CSI_CHARS = 128  # the longest real report (SGR mouse, Kitty keys with text) is ~30
_CSI = re.compile(r"\x1b\[([0-9;:?<>=]*)[ -/]*[@-~]")
_CSI_CUT = re.compile(r"\x1b\[[0-9;:?<>=]+[ -/]*\Z")  # a CSI whose final byte is in the next read
_CSI_REST = re.compile(r"[0-9;:?<>=]*[ -/]*(?:[@-~]|\Z)")  # the rest of an over-long CSI being dropped
_DIGITS = re.compile(r"[0-9]+")


def _sane(match: re.Match[str]) -> str:
    if len(match.group(0)) > MAX_CSI_CHARS:
        return ""
    if any(len(d) > 7 or int(d) > MAX_CSI_NUMBER for d in _DIGITS.findall(match.group(1))):
        return ""
    return match.group(0)


def strip_absurd_csi(text: str) -> str:
    """``text`` without the CSI sequences that carry a number over U+10FFFF (see the module doc)."""
    return _CSI.sub(_sane, text) if "\x1b[" in text else text


class CsiFilter:
    """strip_absurd_csi across reads: a CSI cut by the end of one read is held for the next."""

    def __init__(self) -> None:
        self.pending = ""
        self.dropping = False  # inside an over-long CSI whose start was already dropped

    def __call__(self, text: str) -> str:
        if self.dropping:
            rest = _CSI_REST.match(text)
            end = rest.end() if rest else 0
            self.dropping = end == len(text) and not (text and "@" <= text[-1] <= "~")
            text = text[end:]
        text = self.pending + text
        self.pending = ""
        cut = _CSI_CUT.search(text)
        if cut:
            tail = text[cut.start():]
            text = text[:cut.start()]
            if len(tail) <= MAX_CSI_CHARS:
                self.pending = tail
            else:
                self.dropping = True
        return strip_absurd_csi(text)



class SafeInputDriver(LinuxDriver):
    """LinuxDriver whose input loop never lets terminal input end the session, and whose frames
    reach Textual's writer thread as ONE write.

    Textual 8.2.8 writes a frame as three items on the writer thread's queue (synchronized output's
    start, the frame, its end), the first BEFORE the frame is rendered: the writer thread wakes
    while the UI thread renders and holds the GIL, and each wake is a context switch on the UI
    thread's path (on the 2-core shared box under load, cProfile wall time of a key's frame: ~1 ms in
    the queue's lock release). Between ``begin_frame`` and ``end_frame`` (GpuwizApp._display) the
    writes are kept and handed over together, once the frame is complete: the same bytes in the same
    order, one wake of the writer."""

    dropped: int = 0  # sequences the parser could not handle (for tests and --debug)
    _frame: list[str] | None = None  # a frame's writes, kept until end_frame

    def begin_frame(self) -> None:
        self._frame = []

    def end_frame(self) -> None:
        frame, self._frame = self._frame, None
        if frame:
            super().write("".join(frame))

    def write(self, data: str) -> None:
        frame = self._frame
        if frame is not None:
            frame.append(data)
            return
        super().write(data)

    def _new_parser(self) -> XTermParser:
        return XTermParser(self._debug)

    def _dispatch(self, events: Iterable[Message]) -> bool:
        """Process ``events`` as they come; False when the parser failed on this input."""
        try:
            for event in events:
                self.process_message(event)
        except Exception:  # noqa: BLE001 - third-party parser fed bytes from outside: drop the input, keep the session
            self.dropped += 1
            return False
        return True

    def run_input_thread(self) -> None:
        selector = selectors.SelectSelector()
        selector.register(self.fileno, selectors.EVENT_READ)
        fileno = self.fileno
        parser = self._new_parser()
        decode = codecs.getincrementaldecoder("utf-8")(errors="replace").decode
        csi_filter = CsiFilter()

        def on_events(events: list[tuple[selectors.SelectorKey, int]], final: bool = False) -> bool:
            nonlocal parser
            for i, (_key, mask) in enumerate(events):
                if not mask & selectors.EVENT_READ:
                    continue
                text = decode(os.read(fileno, READ_BYTES), final=final and i == len(events) - 1)
                if not text:  # end of input (a pipe, or the terminal went away)
                    return False
                text = csi_filter(text)
                if text and not self._dispatch(parser.feed(text)):  # feed("") would mean end of input
                    parser = self._new_parser()
            if not self._dispatch(parser.tick()):
                parser = self._new_parser()
            return True

        try:
            while not self.exit_event.is_set():
                on_events(selector.select(0.1))
            selector.unregister(self.fileno)
            on_events(selector.select(0.1), final=True)
        finally:
            selector.close()
            try:
                for _event in parser.feed(""):
                    pass
            except (EOFError, ParseError):
                pass
