"""User settings: ``settings.yaml`` in the platform's config directory (``GPUWIZ_CONFIG_DIR`` overrides).

Only key bindings for now, by binding id (the ids are listed by ``f1`` help and in the README)::

    keys:
      back: alt+left,ctrl+left
      next: alt+right
      save: ctrl+s

A file that cannot be read or is malformed is reported in one line and the defaults are used.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

ENV_CONFIG_DIR = "GPUWIZ_CONFIG_DIR"
SETTINGS_NAME = "settings.yaml"
_KEY = re.compile(r"^[a-z0-9_+\-,]+$")


def config_dir() -> Path:
    env = os.environ.get(ENV_CONFIG_DIR)
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_config_dir("gpuwiz", appauthor=False))


@dataclass(frozen=True)
class Settings:
    keymap: dict[str, str] = field(default_factory=dict)
    problem: str | None = None  # one line: why the file was not used


def load_settings(known_ids: set[str]) -> Settings:
    path = config_dir() / SETTINGS_NAME
    if not path.exists():
        return Settings()
    from gpuwiz.core.errors import GpuwizError
    from gpuwiz.core.yamlio import read_text

    try:
        import yaml

        data = yaml.safe_load(read_text(path, max_bytes=64 * 1024))
    except GpuwizError as exc:
        return Settings(problem=str(exc).splitlines()[0] + "; default keys used")
    except yaml.YAMLError as exc:
        return Settings(problem=f"{path}: not valid YAML ({type(exc).__name__}); default keys used")
    if data is None:
        return Settings()
    keys = data.get("keys") if isinstance(data, dict) else None
    if not isinstance(data, dict) or not isinstance(keys, (dict, type(None))):
        return Settings(problem=f"{path}: expected 'keys:' mapping binding ids to keys; default keys used")
    keymap: dict[str, str] = {}
    for bid, key in (keys or {}).items():
        if bid not in known_ids:
            return Settings(problem=f"{path}: keys: unknown binding id {str(bid)[:40]!r}; default keys used")
        if not isinstance(key, str) or not _KEY.match(key.strip().lower()):
            return Settings(problem=f"{path}: keys: {bid}: not a key name like 'alt+left'; default keys used")
        keymap[str(bid)] = key.strip().lower()
    return Settings(keymap=keymap)
