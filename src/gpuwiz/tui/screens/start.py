"""Start: a new config, open a saved one, or begin from one of the shipped examples."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from rich.cells import cell_len, set_cell_size
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from gpuwiz.i18n import N_, _
from gpuwiz.tui.plain import plain
from gpuwiz.tui.screens.base import WizScreen


@dataclass(frozen=True)
class Example:
    name: str  # file name
    title: str  # first comment line
    text: str


def _shorten(text: str, width: int) -> str:
    """Cut at a word boundary with an ellipsis, never mid-word."""
    text = text.strip().rstrip(",;")
    if cell_len(text) <= width:
        return text
    head = set_cell_size(text, width - 1)  # cells, not characters; a wide character that does not fit is a space
    cut = head.rsplit(" ", 1)[0].rstrip(",;:")
    return cut + "…"


def _pad(text: str, cells: int) -> str:
    return text + " " * max(0, cells - cell_len(text))


def _menu(what: str, hint: str) -> str:
    """``New config           start from defaults``: the hint in a column (in cells, not characters)."""
    return _pad(what, 20) + " " + hint


def examples() -> list[Example]:
    """The example configs shipped in ``gpuwiz/examples`` (never raises)."""
    out: list[Example] = []
    try:
        folder = resources.files("gpuwiz").joinpath("examples")
        for entry in sorted(folder.iterdir(), key=lambda e: e.name):
            if not entry.name.endswith((".yaml", ".yml")):
                continue
            text = entry.read_text(encoding="utf-8")
            title = entry.name.rsplit(".", 1)[0].replace("-", " ").replace("_", " ")
            for line in text.splitlines():
                s = line.strip()
                if s.startswith("#"):
                    s = s.lstrip("#").strip()
                    if s:
                        title = s
                        break
                elif s:
                    break
            out.append(Example(entry.name, title, text))
    except (OSError, FileNotFoundError, ModuleNotFoundError):
        pass
    return out


class StartScreen(WizScreen):
    STEP = "start"

    def compose_body(self) -> ComposeResult:
        self._examples = examples()
        options: list[Option | None] = [
            Option(_menu(_("New config"), _("start from defaults")), id="new"),
            Option(_menu(_("Open a config file…"), _("a YAML file saved before (ctrl+o)")), id="open"),
        ]
        from gpuwiz.tui.recent import recent_files

        self._recent = recent_files(self.wiz.state_dir)
        if self._recent:
            options.append(None)
            for i, path in enumerate(self._recent):
                name = Path(path).name
                label = _("Recent: ") + _pad(_shorten(name, 30), 30) + " " + _shorten(path, 40)
                options.append(Option(plain(label), id=f"recent-{i}"))
        if self._examples:
            options.append(None)
            for i, ex in enumerate(self._examples):
                options.append(Option(plain(_("Example: ") + _shorten(ex.title, 62)), id=f"example-{i}"))
        with Vertical(id="start"):
            yield Static(
                "[b]" + _("Which GPU server should you rent or buy?") + "[/b]\n"
                + _("Answer four short steps; a live answer follows every change."),
                id="start-title",
            )
            yield OptionList(*options, id="start-menu")
            yield Static(_("↑↓ choose · enter start · f1 help · ctrl+p all commands · ctrl+q quit"),
                         id="start-hint")

    def on_mount(self) -> None:
        self.query_one("#start-menu", OptionList).focus()

    @on(OptionList.OptionSelected, "#start-menu")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        oid = event.option.id or ""
        app = self.wiz
        if oid == "new":
            def start_new() -> None:
                app.new_config()
                app.goto("model")

            app._guard_unsaved(start_new, N_("start a new config"))
        elif oid == "open":
            app.action_open()
        elif oid.startswith("recent-"):
            path = self._recent[int(oid.removeprefix("recent-"))]

            def open_recent() -> None:
                error = app.open_config(path)
                if error:
                    app.notify(error, title="Cannot open config", severity="error", timeout=10)
                else:
                    app.goto("result")

            app._guard_unsaved(open_recent, N_("open another config"))
        elif oid.startswith("example-"):
            ex = self._examples[int(oid.removeprefix("example-"))]

            def go() -> None:
                error = app.load_example(ex.name, ex.text)
                if error:
                    app.notify(error, title="Example is broken", severity="error")
                else:
                    app.goto("model")

            app._guard_unsaved(go, N_("load an example"))
