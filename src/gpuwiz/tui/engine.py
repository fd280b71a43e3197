"""The bridge between the wizard and the pure core: load the catalog once, run the engine safely.

The engine is imported lazily (it is not needed to draw the first frame). Errors a user can cause
(``GpuwizError``) come back as one-line messages; anything else is a bug, reported in one line too
and never as a traceback on screen.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpuwiz.core.errors import GpuwizError

if TYPE_CHECKING:
    from gpuwiz.core.catalog import Catalog
    from gpuwiz.core.models import Recommendation, Requirements


@dataclass(frozen=True)
class Outcome:
    rec: Recommendation | None
    error: str | None
    ms: float
    fields: tuple[str, ...] = ()  # the config paths an engine refusal is about (GpuwizError.fields)
    reason: str | None = None  # the refusal in words, without paths (GpuwizError.reason)


class Engine:
    def __init__(self, catalog_overlay: str | os.PathLike[str] | None = None) -> None:
        self.catalog_overlay = catalog_overlay
        self._catalog: Catalog | None = None
        self._regions: set[str] | None = None

    def catalog(self) -> Catalog:
        if self._catalog is None:
            from gpuwiz.core.catalog import load_catalog

            self._catalog = load_catalog(self.catalog_overlay)
        return self._catalog

    def try_catalog(self) -> Catalog | None:
        try:
            return self.catalog()
        except (GpuwizError, OSError):  # a bad overlay: run() reports it
            return None

    def gpu_ids(self) -> list[str]:
        cat = self.try_catalog()
        return [g.id for g in cat.gpus] if cat else []

    def region_ids(self) -> set[str] | None:
        """The cloud regions (and their countries) of the catalog's offers; None without a catalog."""
        cat = self.try_catalog()
        if cat is None:
            return None
        if self._regions is None:
            self._regions = {r for inst in cat.cloud_instances for r in (inst.region, inst.country) if r}
        return self._regions

    def run(self, req: Requirements) -> Outcome:
        t0 = time.perf_counter()
        try:
            from gpuwiz.core.recommend import recommend

            rec = recommend(req, self.catalog())
            return Outcome(rec, None, (time.perf_counter() - t0) * 1e3)
        except GpuwizError as exc:
            return Outcome(None, str(exc).splitlines()[0], (time.perf_counter() - t0) * 1e3, exc.fields, exc.reason)
        except ImportError as exc:
            return Outcome(None, f"engine not available: {exc}", (time.perf_counter() - t0) * 1e3)
        except Exception as exc:  # noqa: BLE001 - the TUI's boundary to the engine: a bug is one line, not a crash
            return Outcome(None, f"internal error: {type(exc).__name__}: {exc}".splitlines()[0],
                           (time.perf_counter() - t0) * 1e3)

    def markdown(self, rec: Recommendation, req: Requirements) -> str:
        from gpuwiz.core.report import render_recommendation

        return render_recommendation(rec, req, "md")
