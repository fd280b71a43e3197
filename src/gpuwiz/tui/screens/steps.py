"""The input steps (Model, Data, Schedule, Deploy): a form on the left, the live answer on the right.

Every change goes to the App (``edit_field``); an invalid value marks its row and shows why, while
the App keeps its last valid requirements (and so the panel its last valid answer). When the App's
requirements are replaced from elsewhere (open, restore, what-if) the form reloads.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.geometry import Size
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input, Label, Select, Static

from gpuwiz.i18n import _
from gpuwiz.tui.forms import NONE, YES_NO, FieldSpec, StepSpec, display, get_value, shown_placeholder
from gpuwiz.tui.plain import plain
from gpuwiz.tui.screens.base import WizScreen
from gpuwiz.tui.widgets.live_panel import LivePanel


class FormScroll(VerticalScroll, can_focus=False):
    """The form's scroll box is no focus stop of its own (shift+tab from the first field goes to the
    last one, never to an invisible container); the focused field scrolls into view."""


PRESET_FILLS = ("params_b", "layers", "hidden", "seq_len")  # model fields a catalog preset fills in


class FieldInput(Input):
    """Textual's Input, minus a layout pass of the whole screen on every typed character.

    Textual 8.2.8's ``Input._watch_value`` assigns ``virtual_size`` (a ``layout=True`` reactive),
    so each key re-arranges every widget on the screen and repaints the ones it touched (about a
    third of the UI thread's time per key here). A field has a fixed width: its virtual size is
    stored without the layout (as Textual itself does in ``_size_updated``); the value's own
    repaint shows the character. Auto-sized inputs keep Textual's behaviour."""

    def _watch_value(self, value: str) -> None:
        if not self.styles.auto_dimensions:
            self.set_reactive(Widget.virtual_size, Size(self.content_width, 1))
        super()._watch_value(value)

    def post_message(self, message: Message) -> bool:
        """Its ``Changed`` goes straight to the step screen, which handles it and stops it there:
        not through the row, the form, the body and their message queues first (five hops, each a
        turn of the event loop, on every typed key). No widget in between handles it."""
        if isinstance(message, Input.Changed) and message.input is self and self.is_attached:
            screen = self.screen
            if isinstance(screen, StepScreen):
                return screen.post_message(message)
        return super().post_message(message)


class StepScreen(WizScreen):
    BINDINGS: ClassVar[list[BindingType]] = []

    def __init__(self, spec: StepSpec) -> None:
        super().__init__(name=spec.id, id=f"step-{spec.id}")
        self.spec = spec
        self.STEP = spec.id
        self.invalid: dict[str, str] = {}  # field id -> why its text is not accepted
        self.engine_marks: dict[str, str] = {}  # field id -> why the engine refuses the config for it
        self.yaml_mark: str | None = None  # an engine refusal about a config key of this step with no field
        self._shown: dict[str, str] = {}  # field id -> the mark on screen (an invalid text wins)
        self._applied: dict[str, str] = {}  # field id -> the text last applied to the requirements
        self._by_id: dict[str, FieldSpec] = {f.id: f for f in spec.fields}
        self._loaded_revision = -1

    # ---- building ------------------------------------------------------------------------------
    def _options(self, f: FieldSpec) -> list[tuple[Text, str]]:
        opts: list[tuple[Text, str]] = [(plain(_(label) if (label, value) in YES_NO else label), value)
                                        for label, value in f.options]
        cat = self.wiz.engine.try_catalog()
        if f.source == "presets" and cat is not None:
            opts = [(plain(f"{p.id} · {p.params_b:g}B"
                           + (_(" · {n} layers").format(n=p.layers) if p.layers else "")
                           + (_(" · seq {n:,}").format(n=p.seq_len) if p.seq_len else "")), p.id)
                    for p in cat.models]
        elif f.source == "gpus" and cat is not None:
            opts = [(plain(f"{g.id} · {g.memory_gib:g} GiB"), g.id) for g in cat.gpus]
        if f.optional:
            opts.insert(0, (plain(_(f.none_label)), NONE))
        current = display(f, get_value(self.wiz.requirements, f.path))
        if current not in {v for _, v in opts}:
            opts.append((plain(current), current))  # e.g. an id the catalog does not know: shown, flagged by the engine
        return opts

    def _preset_placeholders(self) -> None:
        """With a preset chosen, its size, layers, hidden size and sequence length are the empty
        fields' placeholders (``32 (preset)``): choosing it shows what it fills in."""
        if self.spec.id != "model":
            return
        cat = self.wiz.engine.try_catalog()
        req = self.wiz.requirements
        pid = req.model.preset if req is not None else None
        preset = next((p for p in cat.models if p.id == pid), None) if cat is not None and pid else None
        for f in self.spec.fields:
            if f.path[0] != "model" or f.path[-1] not in PRESET_FILLS or f.kind == "select":
                continue
            v = getattr(preset, f.path[-1], None) if preset is not None else None
            ph = _("{value} (preset)").format(value=display(f, v)) if v is not None else shown_placeholder(f)
            inp = self.query_one(f"#{f.id}", Input)
            if inp.placeholder != ph:
                inp.placeholder = ph

    def compose_body(self) -> ComposeResult:
        req = self.wiz.requirements
        with Horizontal(classes="step-body"):
            with FormScroll(classes="form", id="form"):
                yield Static(Text.assemble((_(self.spec.title), "bold"), " · " + _(self.spec.intro)),
                             classes="step-intro")
                yield Static("", classes="field-error yaml-refusal", id="yaml-refusal")
                for f in self.spec.fields:
                    with Horizontal(classes="field-row", id=f"row-{f.id}"):
                        yield Label("  " + _(f.label), classes="field-label", markup=False)
                        value = display(f, get_value(req, f.path))
                        if f.kind == "select":
                            yield Select(self._options(f), value=value, allow_blank=False, compact=True, id=f.id,
                                         classes="field-input")
                        else:
                            yield FieldInput(value, placeholder=shown_placeholder(f), compact=True, id=f.id,
                                        classes="field-input", select_on_focus=True)
                    yield Static("", classes="field-error", id=f"err-{f.id}")
                    yield Static(plain(_(f.help)), classes="field-help", id=f"help-{f.id}")
            yield LivePanel(id="live", classes="live-panel")

    def on_mount(self) -> None:
        self._loaded_revision = self.wiz.revision
        self.watch(self.app, "answer", self._refresh_panel, init=False)
        self.watch(self.app, "engine_error", self._refresh_panel, init=False)
        self.watch(self.app, "answers", self._on_engine_answer, init=False)
        self.watch(self.app, "revision", self._on_revision, init=False)
        self._sync_engine_marks()
        self._preset_placeholders()
        self._refresh_panel()

    def on_screen_resume(self) -> None:
        super().on_screen_resume()
        if self._loaded_revision != self.wiz.revision:
            self.reload()
        self._sync_engine_marks()
        self._refresh_panel()
        if not any(w.has_focus for w in self.query(".field-input")):
            first = self.query(".field-input").first()
            first.focus()

    # ---- syncing ---------------------------------------------------------------------------------
    def _on_revision(self, _: int) -> None:
        if self.is_current and self._loaded_revision != self.wiz.revision:
            self.reload()

    def reload(self) -> None:
        """Show the App's requirements in every field and clear the invalid marks."""
        self._loaded_revision = self.wiz.revision
        req = self.wiz.requirements
        for f in self.spec.fields:
            value = display(f, get_value(req, f.path))
            if f.kind == "select":
                sel = self.query_one(f"#{f.id}", Select)
                sel.set_options(self._options(f))
                sel.value = value
            else:
                inp = self.query_one(f"#{f.id}", Input)
                self._applied[f.id] = value  # shown, not typed: its Changed message is no edit
                if inp.value != value:
                    inp.value = value
            self._mark(f, None)
        self._preset_placeholders()

    def _refresh_panel(self, *_: object) -> None:
        if not self.is_current:
            return  # the other steps' panels are drawn when shown (on_screen_resume)
        panel = self.query_one(LivePanel)
        answer = self.wiz.answer  # its brief: the full answer is not needed here (nor fetched)
        panel.show(answer.brief if answer is not None else None, self.wiz.engine_error_words(), bool(self.invalid))

    def _on_engine_answer(self, *_: object) -> None:
        if not self.is_current:
            return  # on_screen_resume syncs the marks and the panel
        self._sync_engine_marks()
        self._refresh_panel()
        self.release_frame(self.query_one(LivePanel))

    def _sync_engine_marks(self) -> None:
        """Mark the field of this step the engine's refusal is about (typed: ``GpuwizError.fields``)."""
        target = self.wiz.engine_target()
        marks = {target[1].id: target[2]} if target is not None and target[1].id in self._by_id else {}
        self._sync_yaml_mark()
        if marks == self.engine_marks:
            return
        old, self.engine_marks = self.engine_marks, marks
        for fid in set(old) | set(marks):
            self._show_mark(self._by_id[fid])

    def _sync_yaml_mark(self) -> None:
        """A refusal about a key of this step the form has no field for: one line at the top of the
        form naming the key and what to do (edit the YAML file, open it again); Next is blocked."""
        found = self.wiz.engine_yaml_key()
        mark = None
        if found is not None and found[0] == self.spec.id:
            key = found[1]
            path = self.wiz.config_path
            how = (_("edit it in {file} and open the file again (ctrl+o)").format(file=path) if path else
                   _("save the config (ctrl+s), edit it in the YAML file and open it again (ctrl+o)"))
            reason = self.wiz.engine_reason
            why = f"{key}: {reason}" if reason else (self.wiz.engine_error or key)
            mark = _("↳ {why}. {key} is set in the YAML file; the form has no field for it. To fix: {how}.").format(
                why=why, key=key, how=how)
        if mark == self.yaml_mark:
            return
        flipped = (mark is None) != (self.yaml_mark is None)
        self.yaml_mark = mark
        box = self.query_one("#yaml-refusal", Static)
        box.update(plain(mark or ""))
        box.set_class(mark is not None, "-shown")
        if flipped:
            self.refresh_bindings()  # Next greys out while the refusal stands

    def _mark(self, f: FieldSpec, error: str | None) -> None:
        """Record whether the field's text is accepted, and show it."""
        if error is None:
            self.invalid.pop(f.id, None)
        else:
            self.invalid[f.id] = error
        self._show_mark(f)

    def _show_mark(self, f: FieldSpec) -> None:
        error = self.invalid.get(f.id) or self.engine_marks.get(f.id)
        was_invalid = f.id in self._shown
        if self._shown.get(f.id) == error:
            return  # the common case (a valid edit of a valid field): touch nothing, no layout pass
        if error is None:
            self._shown.pop(f.id, None)
        else:
            self._shown[f.id] = error
        err = self.query_one(f"#err-{f.id}", Static)
        err.update(plain(f"↳ {_(f.label)}: {error}" if error else ""))
        if was_invalid == (error is not None):
            return  # only the reason changed
        self.query_one(f"#row-{f.id}").set_class(error is not None, "-invalid")
        err.set_class(error is not None, "-shown")
        self.refresh_bindings()  # Next greys out while a field is invalid (a Footer rebuild: only on a flip)
        self._refresh_panel()

    def _edit(self, fid: str | None, raw: str) -> None:
        f = self._by_id.get(fid or "")
        if f is None:
            return
        error = self.wiz.edit_field(f, raw)
        self._mark(f, error)
        self._sync_engine_marks()  # a valid edit of the refused field clears its mark until the engine answers

    # ---- events ----------------------------------------------------------------------------------
    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """The focused field's row gets the marker (▶, works without colour) and its help line."""
        fid = getattr(event.widget, "id", None) or ""
        if fid not in self._by_id:
            return
        for f in self.spec.fields:
            on_it = f.id == fid
            row = self.query_one(f"#row-{f.id}")
            if row.has_class("-focused") != on_it:
                row.set_class(on_it, "-focused")
                row.query_one(".field-label", Label).update(("▶ " if on_it else "  ") + _(f.label))
                self.query_one(f"#help-{f.id}").set_class(on_it, "-shown")

    def focus_field(self, f: FieldSpec) -> None:
        self.query_one(f"#{f.id}").focus()

    def field_text(self, fid: str | None, raw: str) -> None:
        """A field's text, applied once (a typed key applies it at once; its Changed message then
        finds it applied)."""
        if fid is None or self._applied.get(fid) == raw:
            return
        self._applied[fid] = raw
        self._edit(fid, raw)

    @on(Input.Changed, ".field-input")
    def _input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.field_text(event.input.id, event.value)

    @on(Select.Changed, ".field-input")
    def _select_changed(self, event: Select.Changed) -> None:
        event.stop()
        if event.value is Select.BLANK:
            return
        self._edit(event.select.id, str(event.value))
        if event.select.id == "f-model-preset":
            self._preset_placeholders()

    @on(Input.Submitted, ".field-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.advance_from(event.input)

    def advance_from(self, widget: Input) -> None:
        """enter in a field: the next field, or on the last one the next step."""
        inputs = list(self.query(".field-input"))
        idx = inputs.index(widget)
        if idx + 1 < len(inputs):
            self.set_focus(inputs[idx + 1])  # now, not after a refresh: the next key goes there
        else:
            if self.wiz.check_action("next", ()):
                self.wiz.action_next()

    def field_widget(self, path: tuple[str, ...]) -> Input | Select[Any]:
        """The widget editing ``path`` (tests)."""
        for f in self.spec.fields:
            if f.path == path:
                return self.query_one(f"#{f.id}")  # type: ignore[return-value]
        raise KeyError(path)
