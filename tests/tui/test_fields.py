"""Every dropdown offers every value the schema allows, and choosing one changes the answer."""

from __future__ import annotations

import types
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import pytest
from pydantic import BaseModel
from textual.widgets import Input, Select
from textual.widgets._select import SelectOverlay
from wizhelp import settle

from gpuwiz.core.catalog import load_catalog
from gpuwiz.core.models import Requirements
from gpuwiz.tui.app import GpuwizApp
from gpuwiz.tui.forms import NONE, STEPS, get_value
from gpuwiz.tui.screens.steps import StepScreen
from gpuwiz.tui.widgets.live_panel import LivePanel

MakeApp = Callable[..., GpuwizApp]


def schema_choices(path: tuple[str, ...]) -> tuple[list[str], bool] | None:
    """(the values the pydantic annotation allows, optional?) read straight from the model classes."""
    model: Any = Requirements
    ann: Any = None
    for part in path:
        ann = model.model_fields[part].annotation
        args = [a for a in get_args(ann) if a is not type(None)] if get_origin(ann) in (Union, types.UnionType) else []
        optional = bool(args) and len(args) < len(get_args(ann))
        inner = args[0] if args else ann
        if isinstance(inner, type) and issubclass(inner, BaseModel):
            model = inner
    if get_origin(inner) is Literal:
        return [str(v) for v in get_args(inner)], optional
    if inner is bool:
        return ["no", "yes"], optional
    return None


def offered(sel: Select[Any]) -> list[str]:
    overlay = sel.query_one(SelectOverlay)
    return [str(overlay.get_option_at_index(i).prompt) for i in range(overlay.option_count)]


async def test_every_select_offers_every_schema_value_and_a_choice_changes_the_answer(
        make_app: MakeApp, config_file: Path) -> None:
    cat = load_catalog()
    app = make_app(config_file)
    checked = 0
    changed: list[tuple[str, ...]] = []
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        for step in STEPS:
            app.goto(step.id)
            await settle(pilot, app)
            scr = app.screen
            assert isinstance(scr, StepScreen)
            for f in step.fields:
                if f.kind != "select":
                    continue
                sel = scr.field_widget(f.path)
                assert isinstance(sel, Select)
                sel.focus()
                await pilot.press("enter")  # open the dropdown, as a user does
                await settle(pilot, app)
                assert sel.expanded, f.path
                labels = offered(sel)
                choices = schema_choices(f.path)
                if f.path == ("model", "preset"):
                    want = [p.id for p in cat.models]
                    got = [lab.split(" · ")[0] for lab in labels[1:]]
                elif f.path == ("hardware", "gpu"):
                    want = [g.id for g in cat.gpus]
                    got = [lab.split(" · ")[0] for lab in labels[1:]]
                else:
                    assert choices is not None, f"{f.path} is a dropdown but the schema has no fixed values"
                    want, optional = choices
                    got = labels[1:] if optional else labels
                    assert (len(labels) == len(want) + 1) == optional, (f.path, labels)
                assert got == want, (f.path, got, want)
                # choose a value other than the current one with the keyboard
                before_req, before_rec = app.requirements, app.recommendation
                panel = scr.query_one(LivePanel)
                before_version = panel.version
                current = str(sel.value)
                values = [v for _, v in sel._options]
                target = next(i for i, v in enumerate(values) if v != current and v != NONE)
                overlay = sel.query_one(SelectOverlay)
                steps_down = target - (overlay.highlighted or 0)
                await pilot.press(*(["down"] * steps_down if steps_down > 0 else ["up"] * -steps_down), "enter")
                await settle(pilot, app)
                assert not sel.expanded
                new_value = get_value(app.requirements, f.path)
                shown_value = values[target]
                assert str(new_value).lower() == shown_value or (new_value is True and shown_value == "true") \
                    or (new_value is False and shown_value == "false"), (f.path, new_value, shown_value)
                assert app.requirements != before_req
                assert app.answer_for == app.requirements  # the engine answered the new requirements
                if app.recommendation != before_rec or app.engine_error:
                    assert panel.version > before_version  # and the live panel shows that answer
                    changed.append(f.path)
                # put it back so the next field starts from the same config
                sel.value = current
                await settle(pilot, app)
                checked += 1
    assert checked == sum(f.kind == "select" for s in STEPS for f in s.fields) >= 13
    # most choices change the answer (not all: e.g. the family of a preset model is the preset's)
    assert len(changed) >= checked // 2, changed


def test_a_new_config_key_is_one_declarative_line() -> None:
    from gpuwiz.tui.forms import F

    f = F("training.optimizer", "Optimizer", "what updates the weights")
    assert f.kind == "select" and [v for _, v in f.options] == ["adamw", "adamw-8bit", "sgd"] and not f.optional
    t = F("model.seq_len", "Sequence length")
    assert t.kind == "text" and t.integer


async def test_defaults_are_placeholders_and_typing_replaces(make_app: MakeApp, config_file: Path) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        app.goto("data")
        await settle(pilot, app)
        scr = app.screen
        assert isinstance(scr, StepScreen)
        epochs = scr.field_widget(("data", "epochs"))
        assert isinstance(epochs, Input)
        assert epochs.value == "" and "1" in epochs.placeholder  # the default is shown, not typed in
        epochs.focus()
        await pilot.press("4")
        await settle(pilot, app)
        assert app.requirements.data.epochs == 4  # not 14
        assert app.open_config(str(config_file)) is None  # seq_len: 2048 in the file
        app.goto("model")
        await settle(pilot, app)
        seq = app.screen.field_widget(("model", "seq_len"))  # type: ignore[attr-defined]
        assert seq.value == "2,048"  # whole numbers as 2,048 (not 2.048K)
        seq.focus()
        await pilot.press("4", "0", "9", "6")  # focus selects the value: typing replaces it
        await settle(pilot, app)
        assert app.requirements.model.seq_len == 4096


async def test_human_entries_schedule_money_and_tokens(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        for step, path, raw, check in [
            ("schedule", ("schedule", "runs_per_month"), "weekly",
             lambda r: abs(r.schedule.runs_per_month - 52 / 12) < 1e-9),
            ("schedule", ("schedule", "runs_per_month"), "3 per month", lambda r: r.schedule.runs_per_month == 3),
            ("schedule", ("schedule", "runs_per_month"), "daily", lambda r: r.schedule.runs_per_month == 30),
            ("schedule", ("schedule", "runs_per_month"), "once",
             lambda r: abs(r.schedule.runs_per_month * 12 * r.deployment.horizon_years - 1) < 1e-9),
            ("deploy", ("deployment", "budget_usd"), "$250,000", lambda r: r.deployment.budget_usd == 250_000),
        ]:
            app.goto(step)
            await settle(pilot, app)
            w = app.screen.field_widget(path)  # type: ignore[attr-defined]
            w.value = raw
            await settle(pilot, app)
            assert check(app.requirements), (raw, app.requirements)
            assert not app.screen.invalid  # type: ignore[attr-defined]
        app.goto("data")
        await settle(pilot, app)
        tokens = app.screen.field_widget(("data", "tokens"))  # type: ignore[attr-defined]
        tokens.value = "0.5"
        await settle(pilot, app)
        assert app.requirements.data.tokens is None
        assert "must be at least 1" in app.screen.invalid["f-data-tokens"]  # type: ignore[attr-defined]
        assert app.check_action("next", ()) is None  # Next is blocked while the field is invalid


async def test_whatif_feedback_g_count_and_the_result_header(make_app: MakeApp, config_file: Path) -> None:
    from textual.widgets import Static

    app = make_app(config_file)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        header = str(app.screen.query_one("#result-req", Static).render())
        for word in ("lora", "bf16", "200M tokens", "2 epochs", "deadline 2 d"):
            assert word in header, header
        await pilot.press("m")
        await settle(pilot, app)
        assert app.requirements.training.method != "lora"
        assert app.requirements.training.method in str(app.screen.query_one("#result-req", Static).render())
        # a key that changes nothing says so
        await pilot.press("a")  # hardware is automatic already
        await settle(pilot, app)
        assert any("nothing changed" in n.message for n in app._notifications)
        # `g` through the GPU types: when the count of the new answer differs, a notice says so
        before_notes = len(app._notifications)
        counts = set()
        for _ in range(8):
            kn_before = app.recommendation.estimate.plan.gpus if app.recommendation.estimate else None  # type: ignore[union-attr]
            await pilot.press("g")
            await settle(pilot, app)
            rec = app.recommendation
            kn_after = rec.estimate.plan.gpus if rec is not None and rec.estimate else None
            counts.add(kn_after)
            if kn_after != kn_before and kn_before is not None and kn_after is not None:
                assert any("count changed" in n.message for n in list(app._notifications)[before_notes:])
                break
        else:
            pytest.skip(f"no GPU type in the first 8 changed the count ({counts})")


async def test_regions_land_in_the_requirements_and_limit_what_may_be_rented(make_app: MakeApp,
                                                                             config_file: Path) -> None:
    cat = load_catalog()
    where = {(i.provider, i.instance_type, i.region): i.country for i in cat.cloud_instances}
    app = make_app(config_file)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        before = app.recommendation
        assert before is not None and before.cost is not None
        countries_before = {where[(c.provider, c.instance, c.region)] for c in before.cost.cloud}
        assert countries_before - {"DE"}, countries_before  # the unrestricted answer rents elsewhere too
        app.goto("deploy")
        await settle(pilot, app)
        field = app.screen.query_one("#f-deployment-regions", Input)
        field.focus()
        await pilot.press(*list("de, eu-centrl-1"))  # a typo in a region id is refused, with the nearest
        await settle(pilot, app)
        scr = app.screen
        assert isinstance(scr, StepScreen)
        assert "did you mean eu-central-1" in scr.invalid["f-deployment-regions"]
        assert "eu-centrl-1" not in (app.requirements.deployment.regions or [])  # the last valid text
        assert app.check_action("next", ()) is None
        await pilot.press("ctrl+u", *list("de"))
        await settle(pilot, app)
        assert app.requirements.deployment.regions == ["DE"]
        rec = app.recommendation
        assert rec is not None and rec.market is not None and rec.market.regions == ["DE"]
        assert rec.cost is not None and rec.cost.cloud
        assert {where[(c.provider, c.instance, c.region)] for c in rec.cost.cloud} == {"DE"}
        await pilot.press("ctrl+u")  # empty = anywhere again
        await settle(pilot, app)
        assert app.requirements.deployment.regions is None
        # a config with regions shows them in the field
        other = config_file.with_name("eu.yaml")
        other.write_text(config_file.read_text() + "  regions: [DE, eu-central-1]\n", encoding="utf-8")
        assert app.open_config(str(other)) is None
        app.goto("deploy")
        await settle(pilot, app)
        assert app.screen.query_one("#f-deployment-regions", Input).value == "DE, eu-central-1"


async def test_typing_in_a_field_repaints_only_what_changed(make_app: Any, config_file: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A typed character and its answer cost no layout pass of the screen and no full repaint (an App
    reactive and Input's virtual size used to cause both on every key); a long value still scrolls."""
    from textual._compositor import Compositor
    from textual.screen import Screen
    from wizhelp import settle

    counts = {"layout": 0, "full": 0}
    layout, full = Screen._refresh_layout, Compositor.render_full_update

    def counted_layout(self: Any, *a: Any, **k: Any) -> Any:
        counts["layout"] += 1
        return layout(self, *a, **k)

    def counted_full(self: Any, *a: Any, **k: Any) -> Any:
        counts["full"] += 1
        return full(self, *a, **k)

    app = make_app(config_file)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        app.goto("data")
        await settle(pilot, app)
        field = app.screen.query_one("#f-data-epochs")
        field.focus()
        await pilot.press("end")
        await settle(pilot, app)
        monkeypatch.setattr(Screen, "_refresh_layout", counted_layout)
        monkeypatch.setattr(Compositor, "render_full_update", counted_full)
        for key in ("3", "backspace", "4", "backspace", "5"):
            await pilot.press(key)
            await settle(pilot, app)
        assert app.requirements.data.epochs == 25 and app.answer_for == app.requirements
        assert counts == {"layout": 0, "full": 0}, counts
        monkeypatch.undo()
        app.goto("model")  # a value wider than the field still scrolls with the cursor
        await settle(pilot, app)
        inp = app.screen.query_one("#f-model-hf-config")
        inp.focus()
        await settle(pilot, app)
        text = "/a/long/path/that/does/not/fit/in/the/field/at/all/config.json"
        await pilot.press(*list(text))
        await pilot.pause()
        assert inp.value == text and inp.scroll_x > 0  # type: ignore[attr-defined]
        assert "config.json" in inp.render_line(0).text


async def test_owned_gpus_typed_in_the_wizard_become_have_and_lead_the_answer(make_app: MakeApp,
                                                                             config_file: Path) -> None:
    """Owned hardware (have:) had no field in the wizard: a team could say what it owns only in the YAML. Typed
    on the Deploy step ('8x h100-sxm'), it lands in the requirements, the answer prices it at its energy (first
    among the alternatives), a typo is refused with the nearest id, and the text comes back on reopening."""
    app = make_app(config_file)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        assert app.requirements.have == ()
        app.goto("deploy")
        await settle(pilot, app)
        field = app.screen.query_one("#f-have", Input)
        field.focus()
        await pilot.press(*list("8x h100-sx"))
        await settle(pilot, app)
        scr = app.screen
        assert isinstance(scr, StepScreen)
        assert "did you mean h100-sxm" in scr.invalid["f-have"]
        assert app.requirements.have == ()  # the last valid value
        await pilot.press("m")
        await settle(pilot, app)
        assert [(h.gpu, h.count) for h in app.requirements.have] == [("h100-sxm", 8)]
        rec = app.recommendation
        assert rec is not None and rec.alternatives and rec.alternatives[0].gpu == "h100-sxm"
        assert "already owned" in rec.alternatives[0].reason
        saved = config_file.parent / "owned.yaml"
        assert app.save_to(str(saved)) is None
        await pilot.press("ctrl+u")  # empty = owns nothing
        await settle(pilot, app)
        assert app.requirements.have == ()
        assert app.open_config(str(saved)) is None
        app.goto("deploy")
        await settle(pilot, app)
        assert app.screen.query_one("#f-have", Input).value == "8x h100-sxm"


def test_owned_gpus_field_reads_counts_and_ids() -> None:
    from gpuwiz.core.models import HaveSpec
    from gpuwiz.tui.forms import parse_have

    ids = {g.id for g in load_catalog().gpus}
    assert parse_have("8x h100-sxm, 2 × RTX-4090, a100-80gb-sxm", ids) == [
        {"gpu": "h100-sxm", "count": 8}, {"gpu": "rtx-4090", "count": 2}, {"gpu": "a100-80gb-sxm", "count": 1}]
    # a key the field does not show (gpus_per_node) stays with the same GPU and count
    kept = (HaveSpec(gpu="h100-sxm", count=16, gpus_per_node=4),)
    assert parse_have("16x h100-sxm", ids, kept) == [{"gpu": "h100-sxm", "count": 16, "gpus_per_node": 4}]
    assert parse_have("32x h100-sxm", ids, kept) == [{"gpu": "h100-sxm", "count": 32}]
    for bad, why in (("8x", "is not a count and a GPU id"), ("1,000x h100-sxm", "is not a count and a GPU id"),
                     ("8x h100", "no GPU in the catalog has this id")):
        got = parse_have(bad, ids)
        assert isinstance(got, str) and why in got, (bad, got)


async def test_saving_keeps_the_comment_lines_a_config_starts_with(make_app: MakeApp, tmp_path: Path) -> None:
    """Saving an opened example replaced its opening comment ('A small research team fine-tunes 7B-class models
    ...') with gpuwiz's one-line header: a save keeps the comment lines a file starts with (other comments still go,
    as the README says), and a file without them gets gpuwiz's header."""
    from gpuwiz.core.config_io import CONFIG_HEADER, load_config

    src = (Path(__file__).resolve().parents[2] / "examples" / "small-team-lora-7b.yaml").read_text()
    head = "".join(line + "\n" for line in src.splitlines()[:3])
    assert head.startswith("# A small research team") and head.count("\n") == 3
    cfg = tmp_path / "team.yaml"
    cfg.write_text(src, encoding="utf-8")
    bare = tmp_path / "bare.yaml"
    bare.write_text("version: 1\nmodel: {preset: mistral-7b}\ndata: {tokens: 1B}\n", encoding="utf-8")
    app = make_app(cfg)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        assert app.save_to(str(cfg)) is None
        text = cfg.read_text()
        assert text.startswith(head) and CONFIG_HEADER not in text
        assert load_config(str(cfg)) == app.requirements
        assert app.save_to(str(bare)) is None  # (an existing file: its own opening lines, here none)
        assert bare.read_text().startswith(CONFIG_HEADER)
        new = tmp_path / "copy.yaml"  # saved as a new file: the opening lines of the config open (bare.yaml now)
        assert app.save_to(str(new)) is None and new.read_text().startswith(CONFIG_HEADER)
        app.config_path = str(cfg)
        newer = tmp_path / "copy2.yaml"
        assert app.save_to(str(newer)) is None and newer.read_text().startswith(head)
