"""The wizard's partial frames (gpuwiz.tui.compositor.SpanCompositor) write exactly what Textual's
own compositor writes, and the live panel's lines (kept per part, repainted per changed line) are
exactly what Textual draws for its Group: on real screens, after real edits, byte for byte."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual._compositor import Compositor
from textual.geometry import Region
from wizhelp import assert_draws_as_textual, focus_epochs, settle

from gpuwiz.tui.app import GpuwizApp
from gpuwiz.tui.compositor import SpanCompositor
from gpuwiz.tui.widgets.live_panel import LivePanel

MakeApp = Callable[..., GpuwizApp]
EXAMPLES = Path(__file__).resolve().parents[2] / "src" / "gpuwiz" / "examples"


def _example(tmp_path: Path, name: str) -> Path:
    """A copy of an example config (nothing the wizard does reaches the example)."""
    copy = tmp_path / name
    copy.write_bytes((EXAMPLES / name).read_bytes())
    return copy


def _written(app: GpuwizApp, compositor: Compositor, regions: list[Region], own: bool) -> list[Any]:
    """The segments (text, style, cursor moves) a partial update of ``regions`` sends to the terminal."""
    compositor._dirty_regions.update(regions)
    update = compositor.render_partial_update() if own else Compositor.render_partial_update(compositor)
    assert update is not None
    return list(app.console.render(update))


def _regions_of_a_key(app: GpuwizApp) -> list[list[Region]]:
    """What a typed key changes: the field, the step bar, the panel's lines (one by one and a few
    together), and all of them in one frame."""
    scr = app.screen
    field = scr.query_one("#f-data-epochs").region
    bar = scr.query_one("#stepbar").region
    panel = scr.query_one(LivePanel).content_region
    lines = [Region(panel.x, panel.y + y, panel.width, 1) for y in range(panel.height)]
    return [[field], [bar], [field, bar], lines[:3], [lines[0], lines[5], lines[-1]],
            [field, bar, *lines[2:9]], [field, bar, *lines]]


@pytest.mark.parametrize("size", [(100, 30), (80, 24)])
async def test_a_partial_frame_writes_what_textual_writes(make_app: MakeApp, config_file: Path,
                                                          size: tuple[int, int]) -> None:
    app = make_app(config_file)
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        await focus_epochs(pilot, app)
        await pilot.press("end", "7")
        await settle(pilot, app)
        compositor = app.screen._compositor
        assert isinstance(compositor, SpanCompositor)
        rng = random.Random(9)
        w, h = size
        regions = _regions_of_a_key(app)
        screen = Region(0, 0, w, h)
        for _ in range(40):  # and odd ones: anywhere on screen (as Textual clips them), any size, overlapping
            rs = [Region(rng.randrange(0, w), rng.randrange(0, h), rng.randrange(1, w // 2), rng.randrange(1, 6))
                  .intersection(screen) for _ in range(rng.randrange(1, 5))]
            regions.append(rs)
        for rs in regions:
            ours = _written(app, compositor, rs, own=True)
            theirs = _written(app, compositor, rs, own=False)
            assert ours == theirs, rs


async def _at_epochs(pilot: Any, app: Any) -> None:
    """The config's answer in, on the Data step, with the Epochs field focused (where the edits type)."""
    await settle(pilot, app)
    await focus_epochs(pilot, app)


async def test_the_live_panel_shows_what_textual_draws_for_its_answer_after_every_edit(
        make_app: MakeApp, config_file: Path) -> None:
    app = make_app(config_file)
    async with app.run_test(size=(100, 30)) as pilot:
        await _at_epochs(pilot, app)
        panel = app.screen.query_one(LivePanel)
        seen: set[str] = set()
        # new values, values seen before (parts from the cache), an invalid one (the stale mark),
        # and a value four answers back (its parts from the cache's older end)
        for keys in (("end", "3"), ("backspace",), ("end", "3"), ("ctrl+u", "x"), ("ctrl+u", "1", "2"),
                     ("ctrl+u", "2")):
            await pilot.press(*keys)
            await settle(pilot, app)
            await pilot.pause()
            seen.add(panel.text)
            assert_draws_as_textual(panel, keys)
            # and what the screen shows of it (its lines repainted one by one) is a fresh render's
            shown = panel.render_lines(Region(0, 0, *panel.size))
            panel._lines = None
            panel._styles_cache.clear()
            assert shown == panel.render_lines(Region(0, 0, *panel.size))
        assert len(seen) >= 3  # the edits did change what the panel says
        assert any("invalid" in t for t in seen)


async def test_the_step_bar_shows_what_textual_draws_for_its_state_after_every_edit(
        make_app: MakeApp, config_file: Path) -> None:
    """The step bar keeps its lines per state (a key flips ``dirty``): each state, seen before or
    not, is what Textual renders for it afresh, and the unsaved mark comes and goes with the edits."""
    from gpuwiz.tui.widgets.chrome import StepBar

    app = make_app(config_file)
    async with app.run_test(size=(100, 30)) as pilot:
        await _at_epochs(pilot, app)
        bar = app.screen.query_one(StepBar)
        marks: list[bool] = []
        for keys in (("end", "3"), ("backspace",), ("3",), ("backspace",), ("3",)):
            await pilot.press(*keys)
            await settle(pilot, app)
            await pilot.pause()
            shown = bar.render_lines(Region(0, 0, *bar.size))
            bar._render_content()  # Textual's own render of the widget, afresh
            textual = bar._render_cache.lines
            assert bar.render_line(0) == textual[0]
            bar._styles_cache.clear()
            assert bar.render_lines(Region(0, 0, *bar.size)) == shown
            marks.append("●" in shown[0].text)
        assert marks == [True, False, True, False, True]
        app.goto("schedule")  # another state (the current step): drawn as Textual draws it
        await settle(pilot, app)
        bar = app.screen.query_one(StepBar)
        ours = bar.render_line(0)
        bar._render_content()
        assert ours == bar._render_cache.lines[0] and "[3 Schedule]" in ours.text


async def _shifting_edits(pilot: Any, app: GpuwizApp, panel: LivePanel) -> Any:
    """Epochs of the small-team example typed 1 → 12 → 1 → 13 → 1: the answer changes its GPU count
    and one of its ranges wraps or not, so the panel gains and loses a line and every line below
    it moves. Yields after each edit (its answer in)."""
    for keys in (("end", "2"), ("backspace",), ("3",), ("backspace",), ("2",)):
        await pilot.press(*keys)
        await settle(pilot, app)
        await pilot.pause()
        yield len(panel._lines or ())


async def test_moved_panel_lines_are_drawn_as_textual_draws_them(make_app: MakeApp, tmp_path: Path) -> None:
    """The panel's rows are kept by the line they show (RowCache): after answers that move its
    lines up and down, every row on screen is what Textual's own StylesCache draws afresh."""
    from textual._styles_cache import StylesCache

    from gpuwiz.tui.widgets.live_panel import RowCache

    app = make_app(_example(tmp_path, "small-team-lora-7b.yaml"))
    async with app.run_test(size=(100, 30)) as pilot:
        await _at_epochs(pilot, app)
        panel = app.screen.query_one(LivePanel)
        assert isinstance(panel._styles_cache, RowCache)
        full = Region(0, 0, *panel.size)
        counts = []
        async for count in _shifting_edits(pilot, app, panel):
            counts.append(count)
            shown = panel.render_lines(full)  # the rows as the frames left them (kept, moved)
            assert shown == StylesCache().render_widget(panel, full)
        assert len(set(counts)) > 1, counts  # the edits did move the lines


@pytest.mark.parametrize("size", [(100, 30), (80, 24)])
async def test_a_partial_frame_after_moved_panel_lines_writes_what_textual_writes(
        make_app: MakeApp, tmp_path: Path, size: tuple[int, int]) -> None:
    """The widgets under the live panel are not asked for its lines (the panel's pieces win): what
    is written is still byte for byte Textual's, for a key's regions and for random ones."""
    app = make_app(_example(tmp_path, "small-team-lora-7b.yaml"))
    async with app.run_test(size=size) as pilot:
        await _at_epochs(pilot, app)
        panel = app.screen.query_one(LivePanel)
        compositor = app.screen._compositor
        rng = random.Random(11)
        w, h = size
        screen = Region(0, 0, w, h)
        async for _count in _shifting_edits(pilot, app, panel):
            regions = _regions_of_a_key(app)
            for _ in range(15):
                regions.append([Region(rng.randrange(0, w), rng.randrange(0, h), rng.randrange(1, w // 2),
                                       rng.randrange(1, 6)).intersection(screen) for _ in range(rng.randrange(1, 5))])
            for rs in regions:
                assert _written(app, compositor, rs, own=True) == _written(app, compositor, rs, own=False), rs
