"""Textual's compositor, minus most of the work of a partial frame (a typed key, the live panel).

Textual 8.2.8 paints a partial update (``Compositor.render_partial_update``) by taking the box
around every changed region and asking EVERY widget that overlaps that box for ALL its visible
lines, then keeping only the changed lines. A key on a step screen changes the step bar (row 0),
the field (left) and the live panel (right): the box is the whole screen, so each frame asked ~24
widgets (cProfile, headless 100x30, Data step) for all their lines, mostly from their caches, to write
~25 lines. With this compositor and the live panel's per-line repaint, the frames of a key cost 3.9
instead of 7.6 ms of the UI thread (headless, engine in the child, small-team-lora-7b, 2026-12-01).

``SpanCompositor`` asks each widget only for the lines where it would give a piece that is
written, in runs of consecutive lines, and composes them exactly as Textual does (the topmost
widget's piece of a cut wins). What reaches the terminal is the same: a piece of a line outside
every changed span is never written (``ChopsUpdate`` skips it); a piece that is written goes to the
topmost widget covering it, which is asked for it; the widgets below it are not (the containers and
the screen under the live panel's lines were asked for all of them, ~0.3 ms of a key's frame).
tests/tui/test_compositor.py checks the output against Textual's own on real screens.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import pairwise

from textual._compositor import ChopsUpdate, Compositor
from textual.geometry import Region
from textual.strip import Strip


def _runs(rows: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted row numbers as [start, end) runs of consecutive rows."""
    runs: list[tuple[int, int]] = []
    for y in rows:
        if runs and runs[-1][1] == y:
            runs[-1] = (runs[-1][0], y + 1)
        else:
            runs.append((y, y + 1))
    return runs


class SpanCompositor(Compositor):
    def render_partial_update(self) -> ChopsUpdate | None:
        update_regions = self._dirty_regions.copy()
        self._dirty_regions.clear()
        if not update_regions:
            return None
        crop = Region.from_union(list(update_regions)).intersection(self.size.region)
        spans = list(self._regions_to_spans(update_regions))
        chops = self.render_span_chops(crop, spans)
        return ChopsUpdate(chops, spans, [cut_set[1:] for cut_set in self.cuts])

    def render_span_chops(self, crop: Region, spans: list[tuple[int, int, int]]) -> list[dict[int, Strip | None]]:
        """The chops of the lines in ``spans`` ((y, x1, x2), as ``_regions_to_spans`` gives them),
        each widget asked only for its lines where it would give a piece that is written.

        A piece (a line's cut ``c`` up to the next cut) is written when ``ChopsUpdate`` writes it:
        when some span of its line does not end before it starts nor start at or after its end.
        Widgets are visited topmost first and the first piece for a cut wins, as in Textual: a
        widget whose pieces on a line are all taken already by widgets above it (the containers
        under the live panel, the screen under them) is not asked for that line at all."""
        cuts = self.cuts
        chops: list[dict[int, Strip | None]] = [dict.fromkeys(cut_set[:-1]) for cut_set in cuts]
        by_row: dict[int, list[tuple[int, int]]] = {}
        for y, x1, x2 in spans:
            by_row.setdefault(y, []).append((x1, x2))
        open_cuts: dict[int, list[int]] = {}  # per line: the cuts whose piece is written and not taken yet
        for y, row_spans in by_row.items():
            line_cuts = cuts[y]
            open_cuts[y] = [cut for cut, end in pairwise(line_cuts)
                            if any(not (cut > x2 or end <= x1) for x1, x2 in row_spans)]
        active = sorted(y for y, row_cuts in open_cuts.items() if row_cuts)  # the lines still missing a piece
        for widget, (region, clip) in self.visible_widgets.items():  # topmost first, as Textual's
            if not active:
                break  # every written piece is taken: the widgets below give none
            if not crop.overlaps(clip):
                continue
            visible = region.intersection(clip)
            if not visible.width or not visible.height:
                continue
            first_cut, last_cut = visible.column_span
            top, bottom = visible.y, visible.bottom
            rows = [y for y in active if top <= y < bottom
                    and any(first_cut <= cut < last_cut for cut in open_cuts[y])]
            if not rows:
                continue
            for start, end in _runs(rows):
                strips = widget.render_lines(Region(visible.x - region.x, start - region.y, visible.width, end - start))
                for y, strip in zip(range(start, end), strips, strict=False):
                    chops_line = chops[y]
                    final_cuts = [cut for cut in cuts[y] if last_cut >= cut >= first_cut]
                    pieces = strip.divide([cut - visible.x for cut in final_cuts[1:]])
                    for cut, piece in zip(final_cuts, pieces, strict=False):
                        if chops_line.get(cut) is None:  # the topmost widget's piece wins
                            chops_line[cut] = piece
                    open_cuts[y] = [cut for cut in open_cuts[y] if chops_line[cut] is None]
            active = [y for y in active if open_cuts[y]]
        return chops
