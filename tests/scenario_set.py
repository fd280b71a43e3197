"""The example configs and the expert scenario suite as requirements, for the scenario suite and
the differential tests (memo on/off, pruned/unpruned) that run the engine on all of them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gpuwiz.core.config_io import load_config
from gpuwiz.core.models import Requirements

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
SCENARIO_DIR = ROOT / "tests" / "scenarios"
SCENARIOS: list[dict[str, Any]] = yaml.safe_load((SCENARIO_DIR / "scenarios.yaml").read_text())["scenarios"]
SECTIONS = {"m": "model", "t": "training", "d": "data", "s": "schedule", "dep": "deployment", "hw": "hardware"}


def scenario_requirements(sc: dict[str, Any]) -> Requirements:
    """A scenario's config: its file, or its shorthand sections (m, t, d, s, dep, hw)."""
    if "file" in sc:
        return load_config(SCENARIO_DIR / sc["file"])
    return Requirements.model_validate({SECTIONS[k]: v for k, v in sc.items() if k in SECTIONS})
