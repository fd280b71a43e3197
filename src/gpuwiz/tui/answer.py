"""An engine answer as the wizard holds it: what the live panel shows at once, the rest on demand.

The live panel shows a dozen numbers of a ``Recommendation`` (``Brief``: the key numbers and, when
nothing fits, the first suggestions). The engine's child process sends that first, a ~1 KB pickle,
and the whole ``Recommendation`` (15-19 KB: every alternative, the cost curve, the bill of
materials) after it; the wizard keeps those bytes as they came and unpickles them only when a
screen asks for the full answer (the Result screen, Compare, Export, a pinned baseline). A key on
an input step, which only the live panel follows, costs neither side the whole answer's pickle:
~0.16 ms of the child's time between its answer and the bytes on the pipe, ~0.17-0.45 ms of the
UI thread's (measured 2026-12-06, small-team-lora-7b and enterprise-70b-pretrain).

An ``Answer`` is always one answer: its brief and its full answer come from the same engine run
(the full one is fetched by the answer's own sequence number, or computed again from the same
requirements when the child can no longer give it; the engine is pure), so a screen asking for
the full answer never gets an older or a newer one than the panel shows.

No Textual and no Rich here: the engine's child imports this module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpuwiz.core.whatif import KeyNumbers, key_numbers

if TYPE_CHECKING:
    from gpuwiz.core.models import Recommendation, Requirements

SUGGESTIONS = 3  # how many of a "nothing fits" answer's suggestions the live panel lists


@dataclass(frozen=True, slots=True)
class Brief:
    """What the live panel shows of an answer (derived from its public fields, ``of``)."""

    numbers: KeyNumbers  # gpuwiz.core.whatif.key_numbers of the answer and the requirements it is for
    suggestions: tuple[str, ...] = ()  # the first few, when nothing fits

    @classmethod
    def of(cls, rec: Recommendation, req: Requirements | None) -> Brief:
        kn = key_numbers(rec, req)
        return cls(kn, () if kn.found else tuple(rec.suggestions[:SUGGESTIONS]))


class Answer:
    """One engine answer: ``brief`` now, ``rec`` (the full ``Recommendation``) when first asked for,
    from ``fetch`` (which gets the same answer's full form; called once, its result kept)."""

    __slots__ = ("_fetch", "_rec", "brief")

    def __init__(self, brief: Brief, rec: Recommendation | None = None,
                 fetch: Callable[[], Recommendation | None] | None = None) -> None:
        if rec is None and fetch is None:
            raise ValueError("an Answer needs its full answer or a way to fetch it")
        self.brief = brief
        self._rec = rec
        self._fetch = fetch

    @property
    def fetched(self) -> bool:
        """True once the full answer is here (tests: typing on an input step never asks for it)."""
        return self._rec is not None

    @property
    def rec(self) -> Recommendation | None:
        """The full answer (None only if it cannot be had at all: the engine refused it meanwhile)."""
        if self._rec is None and self._fetch is not None:
            fetch, self._fetch = self._fetch, None
            self._rec = fetch()
        return self._rec

    def __repr__(self) -> str:
        return f"Answer({self.brief.numbers.gpu_label!r}, fetched={self.fetched})"
