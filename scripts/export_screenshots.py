"""Regenerate screenshots/*.svg by driving the real wizard headless (never edit them by hand).

    .venv/bin/python scripts/export_screenshots.py [--size 100x30] [--theme textual-dark]

Uses the same ``create_app`` factory as the CLI, an example config shipped with the package, and a
throw-away state directory, so it never touches the user's home.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
from importlib import resources
from pathlib import Path

from gpuwiz.tui.app import create_app

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "screenshots"
EXAMPLE = "small-team-lora-7b.yaml"

# name -> keys pressed after the example config opened (it lands on the Result screen)
SHOTS: list[tuple[str, list[str] | None]] = [
    ("01-start", None),
    ("02-model", ["alt+left", "alt+left", "alt+left", "alt+left"]),
    ("03-data", ["alt+left", "alt+left", "alt+left"]),
    ("04-schedule", ["alt+left", "alt+left"]),
    ("05-deploy", ["alt+left"]),
    ("06-result-build", []),
    ("07-result-memory", ["2"]),
    ("08-result-options", ["3"]),
    ("09-result-rent-vs-buy", ["4"]),
    ("10-result-pitfalls", ["5"]),
    ("11-whatif", ["m", "plus", "d"]),
    ("12-compare", ["m", "plus", "c"]),
    ("13-invalid-input", ["alt+left", "alt+left", "alt+left", "tab", "end", "x"]),
    ("14-help", ["f1"]),
    ("15-command-palette", ["ctrl+p", "g", "o", " ", "t", "o"]),
    ("16-save-as", ["f2"]),
    ("17-too-small", "small"),  # type: ignore[list-item]
]
# pictures at the smallest supported size, 80×24 (the README shows the first)
SHOTS_80x24: list[tuple[str, list[str] | None]] = [
    ("00-data-80x24", ["alt+left", "alt+left", "alt+left", "tab", "tab"]),
    ("18-result-80x24", []),
    ("19-rent-vs-buy-80x24", ["4"]),
]


async def shoot(name: str, keys: list[str] | str | None, config: Path, size: tuple[int, int], theme: str | None,
                state: Path) -> Path:
    app = create_app(None if keys is None or keys == "small" else config, state_dir=state, theme=theme,
                     handle_signals=False, offer_restore=False)
    term = (60, 20) if keys == "small" else size
    async with app.run_test(size=term) as pilot:
        await pilot.pause()
        for key in keys if isinstance(keys, list) else []:
            await pilot.press(key)
        await pilot.pause(0.3)
        for _ in range(100):  # until the answer on screen is the one for what is on screen
            await app.workers.wait_for_complete()
            await pilot.pause()
            if app.answered:
                break
        path = app.save_screenshot(filename=f"{name}.svg", path=str(OUT))
    return Path(path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="100x30")
    ap.add_argument("--theme", default=None)
    args = ap.parse_args()
    w, h = (int(x) for x in args.size.lower().split("x"))
    OUT.mkdir(exist_ok=True)
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        # Work inside the temp folder with a relative config path, so pictures that show the path
        # (save as) are the same on every run.
        os.chdir(tmp)
        try:
            config = Path(EXAMPLE)
            config.write_text(resources.files("gpuwiz").joinpath("examples", EXAMPLE).read_text(encoding="utf-8"))
            for shots, size in ((SHOTS, (w, h)), (SHOTS_80x24, (80, 24))):
                for name, keys in shots:
                    path = asyncio.run(shoot(name, keys, config, size, args.theme, Path(tmp) / "state"))
                    print(Path(path).resolve().relative_to(ROOT))
        finally:
            os.chdir(cwd)


if __name__ == "__main__":
    main()
