"""Keys that arrive together (one terminal read: fast typing over ssh, a loaded machine, the keys
right after a step switch) act in the order they were pressed.

Textual types a character at once but runs editing keys (backspace, ctrl+u, ←, tab, enter) only
after they bubble up the widget tree; without GpuwizApp._key_in_order ``ctrl+u 1 2`` right after
``alt+←`` left an empty field and ``1 backspace 2`` left ``1``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from textual import events
from textual.widgets import Input
from wizhelp import settle

from gpuwiz.tui.app import GpuwizApp

MakeApp = Callable[..., GpuwizApp]


def burst(app: GpuwizApp, *keys: str) -> None:
    """Post every key at once, letting the app process none in between (one terminal read)."""
    for k in keys:
        app.post_message(events.Key(k, k if len(k) == 1 else None))


async def wait_for(pilot, app: GpuwizApp, cond: Callable[[], bool]) -> None:  # type: ignore[no-untyped-def]
    for _ in range(100):  # bounded: each round waits for the app to go idle and the engine to answer
        await settle(pilot, app)
        if cond():
            return
    raise AssertionError("condition never held")


def value(app: GpuwizApp, fid: str) -> str:
    return app.screen.query_one(f"#{fid}", Input).value


async def test_keys_right_after_a_switch_reach_the_new_steps_first_field(make_app: MakeApp,
                                                                        config_file: Path) -> None:
    app = make_app(config_file)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        app.goto("schedule")
        await settle(pilot, app)
        # the Data step was never shown: it is built on this switch, while the keys wait
        burst(app, "alt+left", "ctrl+u", *"12B")
        await wait_for(pilot, app, lambda: app.requirements.data.tokens == 12e9)
        assert app.step == "data" and value(app, "f-data-tokens") == "12B"
        assert app.focused is not None and app.focused.id == "f-data-tokens"
        # typing, then Next in the same read: the typed value counts, the next step gets the rest
        burst(app, "ctrl+u", *"3B", "alt+right", "ctrl+u", *"weekly")
        await wait_for(pilot, app, lambda: app.step == "schedule"
                       and value(app, "f-schedule-runs-per-month") == "weekly")
        assert app.requirements.data.tokens == 3e9
        assert abs(app.requirements.schedule.runs_per_month - 52 / 12) < 1e-9


async def test_editing_keys_keep_their_place_among_typed_characters(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        app.goto("data")
        await settle(pilot, app)
        burst(app, *"1", "backspace", *"2")
        await wait_for(pilot, app, lambda: value(app, "f-data-tokens") == "2")
        burst(app, "ctrl+u", *"12", "left", *"3")
        await wait_for(pilot, app, lambda: value(app, "f-data-tokens") == "132")
        # tab and enter move on before the next character arrives
        burst(app, "end", "ctrl+u", *"5B", "tab", *"7", "enter", *"2")  # ctrl+u clears left of the cursor
        await wait_for(pilot, app, lambda: value(app, "f-data-epochs") == "2")
        assert value(app, "f-data-tokens") == "5B" and value(app, "f-data-samples") == "7"
        assert app.requirements.data.tokens == 5e9 and app.requirements.data.epochs == 2


async def test_enter_through_the_last_field_walks_on_with_what_was_typed(make_app: MakeApp,
                                                                         config_file: Path) -> None:
    app = make_app(config_file)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        app.goto("data")
        await settle(pilot, app)
        app.screen.query_one("#f-data-tokens").focus()
        await settle(pilot, app)
        burst(app, "ctrl+u", *"1B", *["enter"] * 5, "ctrl+u", *"3")
        await wait_for(pilot, app, lambda: app.step == "schedule"
                       and value(app, "f-schedule-runs-per-month") == "3")
        assert app.requirements.data.tokens == 1e9 and app.requirements.schedule.runs_per_month == 3
