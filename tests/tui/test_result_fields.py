"""The result screen shows the new answer fields (issue 12): the time / cost Pareto front, the
binding constraint when nothing fits, and a rented pick as instances (vCPU, RAM, local NVMe,
instances x GPUs) instead of a chassis and PSU. Driven with Pilot like a user: open, switch tabs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.widgets import Static
from wizhelp import settle

from gpuwiz.tui.app import GpuwizApp
from gpuwiz.tui.screens.result import ResultScreen

MakeApp = Callable[..., GpuwizApp]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

NOTHING_FITS = """\
version: 1
model: {preset: llama-2-70b}
training: {method: full, global_batch: 64}
data: {tokens: 1B}
schedule: {runs_per_month: 1, deadline_days: 7}
deployment: {mode: buy, budget_usd: 3000, site: desk}
"""


def shown(widget: Static, width: int = 110) -> str:
    import io

    from rich.console import Console

    content: Any = widget.content
    if isinstance(content, str):
        return content
    console = Console(width=width, file=io.StringIO(), color_system=None, legacy_windows=False)
    with console.capture() as cap:
        console.print(content)
    return cap.get()


def _config(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


async def test_options_tab_shows_the_pareto_front_against_the_pick(make_app: MakeApp, tmp_path: Path) -> None:
    cfg = _config(tmp_path, "qlora.yaml", (EXAMPLES / "llama3-8b-qlora.yaml").read_text())
    app = make_app(cfg)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        assert isinstance(app.screen, ResultScreen)
        rec = app.recommendation
        assert rec is not None and len(rec.pareto) >= 2
        await pilot.press("3")
        await pilot.pause()
        text = shown(app.screen.query_one("#options", Static))
        assert "Time vs cost (Pareto front)" in text and "the pick" in text
        assert "faster for" in text  # e.g. "1.5x faster for +17%"
        for p in rec.pareto:  # every point of the front, with its price
            assert f"{p.count} × {p.gpu}" in text


async def test_nothing_fits_names_the_binding_constraint(make_app: MakeApp, tmp_path: Path) -> None:
    app = make_app(_config(tmp_path, "tiny.yaml", NOTHING_FITS))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        rec = app.recommendation
        assert rec is not None and not rec.found and rec.binding_constraint is not None
        text = shown(app.screen.query_one("#build", Static))
        assert "Nothing fits" in text
        assert f"Binding constraint ({rec.binding_constraint.kind})" in text
        assert rec.binding_constraint.message.split(":")[0] in text


async def test_a_rented_pick_is_shown_as_instances_not_a_chassis(make_app: MakeApp, tmp_path: Path) -> None:
    cfg = _config(tmp_path, "resnet.yaml", (EXAMPLES / "resnet50-imagenet.yaml").read_text())
    app = make_app(cfg)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        rec = app.recommendation
        assert rec is not None and rec.build is not None and rec.build.rented
        offer = rec.cost.rent_offer if rec.cost else None
        assert offer is not None
        text = shown(app.screen.query_one("#build", Static))
        rented_part = text.split("If you would rather own it")[0]
        assert f"Instances: {offer.instances} × {offer.provider} {offer.instance}" in rented_part
        assert f"({offer.gpus_per_instance} GPU" in rented_part
        assert "Each instance:" in rented_part and "vCPU" in rented_part and "RAM" in rented_part
        assert "NVMe" in rented_part
        assert "PSU" not in rented_part and "Chassis" not in rented_part and "Bill of materials" not in rented_part
