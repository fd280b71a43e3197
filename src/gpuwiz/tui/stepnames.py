"""Step ids and titles (no pydantic import: the start screen draws before the core is loaded)."""

from __future__ import annotations

from gpuwiz.i18n import N_

STEP_IDS: tuple[str, ...] = ("model", "data", "schedule", "deploy", "result")
STEP_TITLES: dict[str, str] = {
    "model": N_("Model"), "data": N_("Data"), "schedule": N_("Schedule"), "deploy": N_("Deploy"),
    "result": N_("Result"),
}
