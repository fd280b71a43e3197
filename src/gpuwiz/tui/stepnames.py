"""Step ids and titles (no pydantic import: the start screen draws before the core is loaded)."""

from __future__ import annotations

STEP_IDS: tuple[str, ...] = ("model", "data", "schedule", "deploy", "result")
STEP_TITLES: dict[str, str] = {
    "model": "Model", "data": "Data", "schedule": "Schedule", "deploy": "Deploy", "result": "Result",
}
