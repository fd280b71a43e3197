"""An engine refusal (no data size, a data size the model cannot use, an unreadable config.json) marks
the field it is about, in words, blocks Next and ctrl+s, and goes away when the field is fixed.

The field comes from the error's typed ``fields`` (never from its sentence)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from textual.widgets import Input, Select, Static
from wizhelp import settle

from gpuwiz.core.catalog import load_catalog
from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.models import Requirements
from gpuwiz.core.recommend import recommend
from gpuwiz.tui.app import GpuwizApp
from gpuwiz.tui.dialogs.path_dialog import PathDialog
from gpuwiz.tui.forms import STEPS
from gpuwiz.tui.screens.steps import StepScreen
from gpuwiz.tui.widgets.live_panel import LivePanel

MakeApp = Callable[..., GpuwizApp]


def err_text(scr: StepScreen, fid: str) -> str:
    return str(scr.query_one(f"#err-{fid}", Static).render())


async def type_keys(pilot, app: GpuwizApp, fid: str, text: str) -> None:  # type: ignore[no-untyped-def]
    app.screen.query_one(f"#{fid}").focus()
    await settle(pilot, app)
    await pilot.press("ctrl+u", *list(text))
    await settle(pilot, app)


def test_the_refusals_carry_their_fields_as_typed_facts() -> None:
    cat = load_catalog()
    for data, fields in [
        ({"model": {"preset": "llama-3-8b"}}, ("data.tokens", "data.samples")),
        ({"model": {"preset": "resnet-50"}, "data": {"tokens": 1e9}}, ("data.samples",)),
        ({"data": {"tokens": 1e9}}, ("model.preset",)),
        ({"model": {"layers": 32}, "data": {"tokens": 1e9}}, ("model.hidden",)),
        ({"model": {"hf_config": "/nonexistent/config.json"}, "data": {"tokens": 1e9}}, ("model.hf_config",)),
        ({"model": {"preset": "llama-3-8b"}, "data": {"tokens": 1e9}, "hardware": {"gpu": "no-such-gpu"}},
         ("hardware.gpu",)),
    ]:
        try:
            recommend(Requirements.model_validate(data), cat)
        except GpuwizError as exc:
            assert exc.fields[: len(fields)] == fields, (data, exc.fields)
            assert exc.reason and not any(f in exc.reason for f in exc.fields), exc.reason  # words, not paths
        else:
            raise AssertionError(f"{data}: no refusal")


async def test_no_data_size_marks_tokens_blocks_next_and_save_then_recovers(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("enter")  # New config
        await settle(pilot, app)
        app.screen.query_one("#f-model-preset", Select).value = "llama-3-8b"
        await settle(pilot, app)
        assert app.check_action("next", ()) is True  # the missing data is not the Model step's to fix
        await pilot.press("alt+right")
        await settle(pilot, app)
        assert app.step == "data"
        scr = app.screen
        assert isinstance(scr, StepScreen)
        await type_keys(pilot, app, "f-data-tokens", "1B")  # a size, then taken away again: the bad value
        assert app.recommendation is not None and not scr.engine_marks
        await type_keys(pilot, app, "f-data-tokens", "")
        assert app.requirements.data.tokens is None and app.engine_fields
        assert scr.query_one("#row-f-data-tokens").has_class("-invalid")
        assert "Tokens: needed: how much data" in err_text(scr, "f-data-tokens")
        assert "data.tokens" not in err_text(scr, "f-data-tokens")  # words, not the config path
        assert "Tokens (Data step): needed" in scr.query_one(LivePanel).text
        await pilot.press("alt+right")  # Next is blocked
        await settle(pilot, app)
        assert app.step == "data" and app.check_action("next", ()) is None
        # ctrl+s from another step saves (a valid, incomplete config reopens) and says what is missing
        app.goto("deploy")
        await settle(pilot, app)
        await pilot.press("ctrl+s")
        await settle(pilot, app)
        assert isinstance(app.screen, PathDialog)  # asks where to write
        assert any("Tokens" in n.message and "saved without it" in n.message for n in app._notifications)
        await pilot.press("escape")
        await settle(pilot, app)
        app.goto("data")
        await settle(pilot, app)
        scr.focus_field(next(f for s in STEPS for f in s.fields if f.id == "f-data-tokens"))
        await settle(pilot, app)
        assert app.focused is not None and app.focused.id == "f-data-tokens"
        # recovery: type a size; the mark goes, Next works
        await pilot.press(*list("2B"))
        await settle(pilot, app)
        assert app.requirements.data.tokens == 2e9 and app.recommendation is not None
        assert not scr.engine_marks and not scr.query_one("#row-f-data-tokens").has_class("-invalid")
        assert err_text(scr, "f-data-tokens") == ""
        await pilot.press("alt+right")
        await settle(pilot, app)
        assert app.step == "schedule"


async def test_tokens_for_an_image_model_mark_samples_until_given(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("enter")
        await settle(pilot, app)
        app.screen.query_one("#f-model-preset", Select).value = "resnet-50"
        await settle(pilot, app)
        app.goto("data")
        await settle(pilot, app)
        scr = app.screen
        assert isinstance(scr, StepScreen)
        await type_keys(pilot, app, "f-data-tokens", "1B")
        assert app.recommendation is None and app.engine_error
        assert set(scr.engine_marks) == {"f-data-samples"}
        assert "counts samples" in err_text(scr, "f-data-samples")
        assert app.check_action("next", ()) is None
        await type_keys(pilot, app, "f-data-samples", "1.28M")
        assert app.requirements.data.samples == 1.28e6
        assert app.recommendation is not None and not scr.engine_marks
        assert app.check_action("next", ()) is True


async def test_an_unreadable_config_json_marks_its_field(make_app: MakeApp, tmp_path: Path) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("enter")
        await settle(pilot, app)
        app.goto("data")
        await settle(pilot, app)
        await type_keys(pilot, app, "f-data-tokens", "1B")
        app.goto("model")
        await settle(pilot, app)
        scr = app.screen
        assert isinstance(scr, StepScreen)
        missing = tmp_path / "nope" / "config.json"
        await type_keys(pilot, app, "f-model-hf-config", str(missing))
        assert "f-model-hf-config" in scr.engine_marks
        assert "no such file" in err_text(scr, "f-model-hf-config")
        assert app.check_action("next", ()) is None
        await pilot.press("ctrl+u")  # cleared: the engine now asks for a model (the Preset, same step)
        await settle(pilot, app)
        assert "f-model-hf-config" not in scr.engine_marks
        assert set(scr.engine_marks) == {"f-model-preset"} and app.check_action("next", ()) is None
        scr.query_one("#f-model-preset", Select).value = "llama-3-8b"
        await settle(pilot, app)
        assert not scr.engine_marks and app.recommendation is not None
        assert app.check_action("next", ()) is True
        assert isinstance(scr.query_one("#f-model-hf-config"), Input)


async def test_a_refused_yaml_key_without_a_field_is_named_on_its_step_and_blocks_next(
        make_app: MakeApp, tmp_path: Path) -> None:
    cfg = tmp_path / "moe.yaml"
    cfg.write_text("version: 1\nmodel:\n  preset: llama-3-8b\n  top_k: 4\ndata:\n  tokens: 1B\n", encoding="utf-8")
    app = make_app(cfg)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        assert app.engine_error and "model.top_k" in app.engine_fields
        assert app.engine_target() is None  # the form has no Top-k field
        await pilot.press("alt+left", "alt+left", "alt+left", "alt+left")  # Result → Model
        await settle(pilot, app)
        assert app.step == "model"
        scr = app.screen
        assert isinstance(scr, StepScreen)
        box = scr.query_one("#yaml-refusal", Static)
        text = str(box.render())
        assert box.has_class("-shown") and box.display
        assert "model.top_k" in text and "YAML" in text and str(cfg) in text and "ctrl+o" in text
        assert app.check_action("next", ()) is None
        await pilot.press("alt+right")  # blocked
        await settle(pilot, app)
        assert app.step == "model"
        app.goto("data")  # the other steps do not carry it
        await settle(pilot, app)
        other = app.screen
        assert isinstance(other, StepScreen) and other.yaml_mark is None
        assert not other.query_one("#yaml-refusal", Static).has_class("-shown")
        assert app.check_action("next", ()) is True
        # fixed in the file and opened again: the line goes, Next works
        cfg.write_text("version: 1\nmodel:\n  preset: llama-3-8b\ndata:\n  tokens: 1B\n", encoding="utf-8")
        assert app.open_config(str(cfg)) is None
        await settle(pilot, app)
        app.goto("model")
        await settle(pilot, app)
        assert app.recommendation is not None and scr.yaml_mark is None
        assert not scr.query_one("#yaml-refusal", Static).has_class("-shown")
        assert app.check_action("next", ()) is True
