"""Compare two answers side by side (baseline vs now, or a config file vs another)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal, cast

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static

from gpuwiz.core import whatif
from gpuwiz.core.models import Recommendation, Requirements
from gpuwiz.i18n import N_, _
from gpuwiz.tui.plain import add_row
from gpuwiz.tui.screens.base import WizScreen
from gpuwiz.tui.widgets.result_views import DIRECTION_MARK, DIRECTION_STYLE


@dataclass(frozen=True)
class Side:
    label: str
    req: Requirements
    rec: Recommendation
    path: str | None


SIDE_WORDS = (N_("baseline"), N_("now"), N_("left"), N_("right"))  # side labels, translated where shown


def _word(text: str) -> str:
    return _(text) if text else text  # _("") would be the catalog's header


def compare_table(left: Side, right: Side) -> Table:
    a = whatif.key_numbers(left.rec, left.req)
    b = whatif.key_numbers(right.rec, right.req)
    t = Table(expand=True, box=None, header_style="bold", padding=(0, 1), pad_edge=False)
    t.add_column("", style="dim", no_wrap=True)
    t.add_column(_(left.label), ratio=1)
    t.add_column(_(right.label), ratio=1)
    t.add_column("Δ", ratio=1)
    for d in whatif.diff(a, b):  # before/after: a word (rent, none) in the interface language; numbers pass
        add_row(t, _(d.label), _word(d.before), Text(_word(d.after), style="bold" if d.change else ""),
                  Text(DIRECTION_MARK[d.direction] + d.change, style=DIRECTION_STYLE[d.direction]))
    return t


def changes_table(left: Side, right: Side) -> Table | Text:
    changes = whatif.requirement_changes(left.req, right.req)
    if not changes:
        return Text(_("The requirements are identical."), style="dim")
    t = Table(title=_("Requirements that differ"), title_justify="left", title_style="bold", expand=True, box=None,
              header_style="bold", padding=(0, 1), pad_edge=False)
    t.add_column(_("Field"), style="dim", no_wrap=True)
    t.add_column(_(left.label), ratio=1)
    t.add_column(_(right.label), ratio=1)
    for key, va, vb in changes:
        add_row(t, key, va, vb)
    return t


class CompareScreen(WizScreen):
    STEP = "result"
    LIVES_WITH_APP = False
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "Close", id="compare-close"),
        # l/r/s are named in the heading line (and in f1 help): at 80 columns the footer keeps
        # Quit, Back, Save, Open and Help instead
        Binding("l", "load('left')", "Left from file", id="compare-left", show=False),
        Binding("r", "load('right')", "Right from file", id="compare-right", show=False),
        Binding("s", "swap", "Swap", id="compare-swap", show=False),
    ]

    def __init__(self, left: Side, right: Side) -> None:
        super().__init__(classes="compare")
        self.left = left
        self.right = right

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="compare-body"):
            yield Static("", id="compare-heading", classes="compare-heading")
            yield Static("", id="compare-numbers")
            yield Static("", id="compare-changes")

    def on_mount(self) -> None:
        self.redraw()

    def redraw(self) -> None:
        self.query_one("#compare-heading", Static).update(
            Text.assemble((_("Compare") + "  ", "bold"), (_(self.left.label) + "  ", "bold cyan"), _("vs") + "  ",
                          (_(self.right.label) + "   ", "bold yellow"),
                          (_("l/r load a config file into a side · s swaps · esc closes"), "dim")))
        self.query_one("#compare-numbers", Static).update(compare_table(self.left, self.right))
        self.query_one("#compare-changes", Static).update(changes_table(self.left, self.right))

    def action_close(self) -> None:
        from textual.screen import Screen

        from gpuwiz.tui.dialogs.base import dismiss_once

        dismiss_once(self, None, Screen)  # a second esc/q of a burst must not pop the result screen too

    def action_swap(self) -> None:
        self.left, self.right = self.right, self.left
        self.redraw()

    def action_load(self, which: str) -> None:
        from gpuwiz.tui.dialogs.path_dialog import PathDialog

        app: Any = self.app
        result: dict[str, Any] = {}

        def act(path: str) -> str | None:
            out = app.side_from_file(path)
            if isinstance(out, str):
                return out
            result["side"] = out
            return None

        def done(path: str | None) -> None:
            if not path or "side" not in result:
                return
            req, rec = result["side"]
            from pathlib import Path

            side = Side(Path(path).name, req, rec, path)
            if cast(Literal["left", "right"], which) == "left":
                self.left = side
            else:
                self.right = side
            self.redraw()

        self.app.push_screen(PathDialog(_("Config file for the {which} side").format(which=_(which)), "", act,
                                        verb="Load"), done)
