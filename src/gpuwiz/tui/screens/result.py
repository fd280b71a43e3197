"""Result: the build, the memory breakdown, the alternatives, rent vs buy, pitfalls, and what-if keys.

Each what-if key turns the current requirements into new ones (``gpuwiz.core.whatif``), the App
recomputes, and the strip at the top shows every key number against the pinned baseline.
"""

from __future__ import annotations

from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static, TabbedContent, TabPane

from gpuwiz.core import whatif
from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.models import Requirements
from gpuwiz.i18n import N_, _
from gpuwiz.tui.plain import escaped, plain
from gpuwiz.tui.screens.base import WizScreen
from gpuwiz.tui.widgets.cost_plot import CostPlot
from gpuwiz.tui.widgets.result_views import (
    alternatives_view,
    build_view,
    cost_summary,
    deltas_table,
    memory_view,
    pitfalls_view,
)

# (action, title, help) - also offered in the command palette
WHATIF_COMMANDS: list[tuple[str, str, str]] = [
    ("gpu_next", N_("next GPU type"), N_("Pin the next GPU type of the catalog (g)")),
    ("gpu_prev", N_("previous GPU type"), N_("Pin the previous GPU type (G)")),
    ("count_up", N_("more GPUs"), N_("GPU count one step up (+)")),
    ("count_down", N_("fewer GPUs"), N_("GPU count one step down (-)")),
    ("auto_hw", N_("automatic hardware"), N_("Let gpuwiz pick GPU type and count again (a)")),
    ("method", N_("cycle method"), N_("full / LoRA / QLoRA (m)")),
    ("precision", N_("cycle precision"), N_("bf16 / fp8 / fp16 / tf32 / fp32 (p)")),
    ("data_double", N_("dataset ×2"), N_("Double tokens / samples / dataset size (d)")),
    ("data_half", N_("dataset ÷2"), N_("Halve tokens / samples / dataset size (D)")),
    ("deadline_later", N_("later deadline"), N_("Deadline one step later (])")),
    ("deadline_sooner", N_("sooner deadline"), N_("Deadline one step sooner ([)")),
    ("mode", N_("rent / buy / either"), N_("Cycle the deployment mode (r)")),
    ("pin", N_("pin baseline"), N_("Pin the current answer as the baseline for the deltas (b)")),
    ("reset", N_("back to baseline"), N_("Restore the baseline's requirements (0)")),
]

TABS = ("tab-build", "tab-memory", "tab-options", "tab-cost", "tab-pitfalls")


class ResultScreen(WizScreen):
    STEP = "result"
    _gpu_from: int | None = None  # the GPU count before a `g`, until the new answer arrives
    _drawn: tuple[object, ...] | None = None  # what the tabs were last drawn from (see _inputs)
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("g", "gpu_next", "GPU", show=False, id="whatif-gpu"),
        Binding("G", "gpu_prev", "GPU back", show=False, id="whatif-gpu-prev"),
        Binding("plus,equals_sign", "count_up", "Count", key_display="+/-", show=False, id="whatif-count-up"),
        Binding("minus", "count_down", "Count-", key_display="-", show=False, id="whatif-count-down"),
        Binding("m", "method", "Method", show=False, id="whatif-method"),
        Binding("p", "precision", "Prec", show=False, id="whatif-precision"),
        Binding("d", "data_double", "Data×2", key_display="d/D", show=False, id="whatif-data-double"),
        Binding("D", "data_half", "Data÷2", show=False, id="whatif-data-half"),
        Binding("right_square_bracket", "deadline_later", "Deadline+", key_display="]", show=False,
                id="whatif-deadline-later"),
        Binding("left_square_bracket", "deadline_sooner", "Deadline-", key_display="[", show=False,
                id="whatif-deadline-sooner"),
        Binding("r", "mode", "Rent/buy", show=False, id="whatif-mode"),
        Binding("a", "auto_hw", "Auto pick", show=False, id="whatif-auto"),
        Binding("b", "pin", "Pin", id="whatif-pin"),
        Binding("0", "reset", "Reset to baseline", show=False, id="whatif-reset"),
        Binding("c", "app.compare", "Compare", id="compare"),
        Binding("e", "app.export", "Export", id="export"),
        Binding("y", "app.copy", "Copy", show=False, id="copy"),
        Binding("question_mark", "app.help", "Help", show=False, id="help-alt"),
        Binding("1", "tab(0)", "Build tab", show=False, id="tab-1"),
        Binding("2", "tab(1)", "Memory tab", show=False, id="tab-2"),
        Binding("3", "tab(2)", "Options tab", show=False, id="tab-3"),
        Binding("4", "tab(3)", "Rent vs buy tab", show=False, id="tab-4"),
        Binding("5", "tab(4)", "Pitfalls tab", show=False, id="tab-5"),
    ]

    def compose_body(self) -> ComposeResult:
        yield Static("", id="result-req", classes="result-req")
        yield Static("", id="whatif", classes="whatif")
        with TabbedContent(id="result-tabs"):
            with TabPane("1 " + _("Build"), id="tab-build"), VerticalScroll():
                yield Static("", id="build")
            with TabPane("2 " + _("Memory"), id="tab-memory"), VerticalScroll():
                yield Static("", id="memory")
            with TabPane("3 " + _("Options"), id="tab-options"), VerticalScroll():
                yield Static("", id="options")
            # the plot keeps its rows (axis, legend); the summary above it scrolls
            with TabPane("4 " + _("Rent vs buy"), id="tab-cost"), Vertical(id="cost-box"):
                with VerticalScroll(id="cost-summary-box"):
                    yield Static("", id="cost-summary")
                yield CostPlot(id="cost-plot")
            with TabPane("5 " + _("Pitfalls"), id="tab-pitfalls"), VerticalScroll():
                yield Static("", id="pitfalls")

    def on_mount(self) -> None:
        self.watch(self.app, "answer", self._refresh, init=False)
        self.watch(self.app, "engine_error", self._refresh, init=False)
        self._refresh()  # the screen may have been resumed before its tabs were there

    def on_screen_resume(self) -> None:
        super().on_screen_resume()
        self._refresh()

    def on_resize(self) -> None:
        self._refresh()
        self.call_after_refresh(self._refresh)  # again once laid out: the strip fits its new width

    # ---- drawing ---------------------------------------------------------------------------------
    def _refresh(self, *_args: object) -> None:
        app = self.wiz
        if app.answer is not None and app.baseline is None:
            app.pin_baseline()
        if not self.is_current:
            return  # drawn when shown (on_screen_resume): no work per keystroke on the input steps
        rec = app.recommendation  # only here: an input step's answers are never fetched in full
        if not self.query("#build"):
            return  # resumed before its tabs were composed (a config opened and the app quit at once): on_mount draws
        inputs, last = self._inputs(), self._drawn
        if last is not None and inputs[0] is last[0] and inputs[1] is last[1] and inputs[2:] == last[2:]:
            return  # nothing the tabs show has changed (mount, resume and resize each ask while a config opens)
        self._drawn = inputs
        self._draw_whatif()
        self._draw_requirements()
        if rec is None:
            msg = plain(app.engine_error_words() or _("computing…"))  # the field in words, as the live panel
            for sid in ("build", "memory", "options", "cost-summary", "pitfalls"):
                self.query_one(f"#{sid}", Static).update(msg)
            return
        self._after_gpu_change()
        width = self.query_one("#result-tabs").content_size.width or 76
        self.query_one("#build", Static).update(build_view(rec))
        self.query_one("#memory", Static).update(memory_view(rec, width - 2))
        self.query_one("#options", Static).update(alternatives_view(rec))
        self.query_one("#cost-summary", Static).update(cost_summary(rec))
        plot = self.query_one(CostPlot)
        plot.points = tuple(rec.cost.monthly) if rec.cost else ()
        plot.breakeven = rec.cost.payback_months if rec.cost else None
        plot.currency = rec.currency
        self.query_one("#pitfalls", Static).update(pitfalls_view(rec))

    def _inputs(self) -> tuple[object, ...]:
        """Everything the drawing reads: the answer and the baseline (compared by identity: a new
        answer is a new object), the requirements, the words around them, the widths the strip and
        the bars fit."""
        app = self.wiz
        return (app.recommendation, app.baseline, app.requirements, app.last_change, app.engine_error,
                app.answered, self._gpu_from, self.query_one("#result-tabs").content_size.width,
                self.query_one("#whatif", Static).content_size.width)

    def _draw_whatif(self) -> None:
        app = self.wiz
        box = self.query_one("#whatif", Static)
        now = whatif.key_numbers(app.recommendation, app.requirements)
        base = whatif.key_numbers(app.baseline[1], app.baseline[0]) if app.baseline else now
        deltas = whatif.diff(base, now)
        box.border_title = _("What-if vs pinned baseline")
        # at the baseline just opened (a file, an example) the keys are the news, not "opened x"
        fresh = app.baseline is not None and app.baseline[0] == app.requirements and app.last_change not in (
            N_("baseline pinned"), N_("back to the baseline"))
        subtitle = (_("last change: {what}").format(what=_(app.last_change)) if app.last_change and not fresh
                    else _("g + - m p d r change it · b pins"))
        if app.engine_error:
            subtitle = "⚠ " + (app.engine_error_words() or app.engine_error) + (
                _(" (showing the last valid answer)") if app.recommendation is not None else "")
        box.border_subtitle = escaped(subtitle)
        if app.recommendation is None:  # no answer at all: never "nothing fits" against the baseline
            why = app.engine_error_words()
            box.update(plain(_("No answer: the engine refused this config ({why})").format(why=why), "yellow")
                       if why else plain(_("computing…"), "dim"))
            self.deltas = []
            return
        spans = {"time": whatif.fmt_span(now.wall_hours_range, whatif.fmt_hours),  # P10-P90, as the live panel
                 "cost": whatif.fmt_span(now.cost_per_run_usd_range, whatif.money_fmt(now.currency))}
        box.update(deltas_table(deltas, two_columns=True, width=box.content_size.width or None, spans=spans))
        self.deltas = deltas

    def _draw_requirements(self) -> None:
        """What the answer is for: method, precision, data size, deadline (the what-if keys change them)."""
        r = self.wiz.requirements
        if r is None:
            return
        d = r.data
        if d.tokens:
            data = _("{n} tokens").format(n=whatif.fmt_human(d.tokens))
        elif d.samples:
            data = _("{n} samples").format(n=whatif.fmt_human(d.samples))
        elif d.dataset_gb:
            data = f"{whatif.fmt_human(d.dataset_gb)} GB"
        else:
            data = _("data: preset default")
        if d.epochs != 1:
            data += _(" × {n} epochs").format(n=whatif.fmt_human(d.epochs))
        deadline = (_("deadline {n} d").format(n=whatif.fmt_human(r.schedule.deadline_days))
                    if r.schedule.deadline_days else _("no deadline"))
        mode = _("rent/buy: {mode}").format(mode=r.deployment.mode)  # the value as the form shows it
        line = f"{r.training.method} · {r.training.precision} · {data} · {deadline} · {mode}"
        self.query_one("#result-req", Static).update(plain(line, "dim"))

    def _after_gpu_change(self) -> None:
        """``g`` pins a GPU type; when the count of the new answer differs, say so."""
        pending = self._gpu_from
        if pending is None or not self.wiz.answered:
            return
        self._gpu_from = None
        old_count = pending
        kn = whatif.key_numbers(self.wiz.recommendation)
        if kn.count is not None and old_count is not None and kn.count != old_count:
            note = _("the GPU count changed too: {old} → {new} (what fits {gpu})").format(
                old=old_count, new=kn.count, gpu=kn.gpu or _("it"))
            self.wiz.last_change = _("GPU → {gpu}; count {old} → {new}").format(gpu=kn.gpu, old=old_count,
                                                                               new=kn.count)
            self.wiz.notify(note, title="GPU changed", timeout=4)
            self._draw_whatif()

    def action_tab(self, index: int) -> None:
        self.query_one(TabbedContent).active = TABS[index]

    # ---- what-if -----------------------------------------------------------------------------------
    def _apply(self, fn: Any) -> None:
        app = self.wiz
        try:
            new, change = fn(app.requirements)
        except (GpuwizError, ValueError) as exc:  # a knob past a limit (ValidationError): say so, change nothing
            app.notify(_("cannot change that: {why}").format(why=str(exc).splitlines()[0]), severity="warning")
            return
        if new == app.requirements:
            self._gpu_from = None
            app.notify(_("nothing changed: {what}").format(what=_(change)), severity="warning", timeout=3)
            return
        app.replace_requirements(new, change)

    def _current(self) -> tuple[str | None, int | None]:
        kn = whatif.key_numbers(self.wiz.recommendation)
        return kn.gpu, kn.count

    def action_gpu_next(self) -> None:
        gpu, count = self._current()
        self._gpu_from = count
        self._apply(lambda r: whatif.cycle_gpu(r, self.wiz.engine.gpu_ids(), gpu, +1))

    def action_gpu_prev(self) -> None:
        gpu, count = self._current()
        self._gpu_from = count
        self._apply(lambda r: whatif.cycle_gpu(r, self.wiz.engine.gpu_ids(), gpu, -1))

    def action_count_up(self) -> None:
        gpu, count = self._current()
        self._apply(lambda r: whatif.step_count(r, count, +1, gpu))

    def action_count_down(self) -> None:
        gpu, count = self._current()
        self._apply(lambda r: whatif.step_count(r, count, -1, gpu))

    def action_auto_hw(self) -> None:
        self._apply(whatif.unpin_hardware)

    def action_method(self) -> None:
        self._apply(whatif.cycle_method)

    def action_precision(self) -> None:
        self._apply(whatif.cycle_precision)

    def action_data_double(self) -> None:
        self._apply(lambda r: whatif.scale_data(r, 2.0))

    def action_data_half(self) -> None:
        self._apply(lambda r: whatif.scale_data(r, 0.5))

    def action_deadline_later(self) -> None:
        self._apply(lambda r: whatif.shift_deadline(r, +1))

    def action_deadline_sooner(self) -> None:
        self._apply(lambda r: whatif.shift_deadline(r, -1))

    def action_mode(self) -> None:
        self._apply(whatif.cycle_mode)

    def action_pin(self) -> None:
        self.wiz.pin_baseline()
        self.wiz.last_change = N_("baseline pinned")
        self._refresh()

    def action_reset(self) -> None:
        base = self.wiz.baseline
        if base is None:
            return
        req: Requirements = base[0]
        self._apply(lambda r: (req, N_("back to the baseline")))
