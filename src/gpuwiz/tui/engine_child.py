"""The wizard's engine process: reads (seq, requirements) frames on stdin, answers on stdout.

Started by ``gpuwiz.tui.engine.EngineProcess``; not a user command. It loads the core and the
catalog once, says "ready", then answers each request with the same ``Outcome`` the wizard's
thread would give, in two frames: the live panel's ``Brief`` of it first, then the whole
``Recommendation``'s pickle (gpuwiz.tui.answer; the bytes the panel waits for are ~1 KB, not
15-19 KB, and pickled in ~0.02 ms, not ~0.16). When several requests are waiting only the newest
is computed (older ones are stale: the wizard drops their answers anyway), and an answer whose
newer request is already waiting is sent without its whole form (nothing will ask for it). It
ends at end of file on stdin (the wizard quit or died).
"""

from __future__ import annotations

import argparse
import os
import select
import sys
from typing import IO, Any


def main(argv: list[str] | None = None) -> int:
    if argv is None:  # the child is the process: the code dataclasses & co. generate, compiled, from the
        from gpuwiz._codegen import install_codegen  # cache folder (as gpuwiz.cli.main does), before the core loads

        install_codegen("engine")
    import pickle

    from gpuwiz.tui.answer import Brief
    from gpuwiz.tui.engine import Engine, Outcome, read_request, write_frame

    ap = argparse.ArgumentParser(prog="gpuwiz.tui.engine_child")
    ap.add_argument("--lang", default="en")
    ap.add_argument("--catalog", default=None)
    args = ap.parse_args(argv)
    from gpuwiz.i18n import set_language

    set_language(args.lang)
    engine = Engine(args.catalog)
    engine.try_catalog()  # loaded before "ready" (a bad overlay: each answer says so, as in the thread)
    _warm_up(engine)
    import gc

    from gpuwiz.core import gcpause

    gc.freeze()  # the core, pydantic and the catalog live as long as the child: out of the collector's walk
    if argv is None:  # the child is the process: its heap is the engine's (each answer's objects join the frozen)
        gcpause.keep_frozen()
    answered = 0

    stdin = os.fdopen(sys.stdin.fileno(), "rb", buffering=0)  # unbuffered: select() sees every waiting byte
    stdout = sys.stdout.buffer
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - a stray print must never corrupt the frames
    write_frame(stdout, ("ready", 0, None))
    while True:
        if argv is None:
            answered = _sweep_when_idle(stdin, answered)
        request = read_request(stdin)
        if request is None:
            return 0
        answered += 1
        while _more_waiting(stdin):  # a burst of keys: only the newest requirements count
            newer = read_request(stdin)
            if newer is None:
                return 0
            request = newer
        seq, req = request
        out = engine.run(req)
        rec = out.rec
        if rec is None:  # refused: the error is the whole answer
            write_frame(stdout, ("answer", seq, out))
            continue
        write_frame(stdout, ("answer", seq, Outcome(None, None, out.ms, out.fields, out.reason, Brief.of(rec, req))))
        if not _more_waiting(stdin):  # else the wizard has asked again: this answer is stale
            write_frame(stdout, ("full", seq, pickle.dumps(rec, protocol=pickle.HIGHEST_PROTOCOL)))


def _warm_up(engine: Any) -> None:
    """One answer before "ready" (the engine's lazy imports and caches): the first real one is as
    fast as the rest. An example config, as the wizard's own first answer usually is."""
    from importlib import resources

    from gpuwiz.core.config_io import loads_config
    from gpuwiz.core.errors import GpuwizError

    try:
        text = resources.files("gpuwiz").joinpath("examples", "small-team-lora-7b.yaml").read_text(encoding="utf-8")
        engine.run(loads_config(text, "warm-up"))
    except (GpuwizError, OSError):  # no examples installed: the first answer is a little slower
        pass


# An answer's objects join the frozen ones (gcpause.keep_frozen): once in a while, when the wizard has sent
# nothing for a few seconds, a full collection frees any reference cycle among them (the engine makes none;
# the sweep is the backstop, ~30-50 ms, at a time nobody waits for an answer).
SWEEP_AFTER = 200  # answers at least between two sweeps
SWEEP_IDLE_S = 5.0  # ... and this long without a request first


def _sweep_when_idle(stream: IO[bytes], answered: int) -> int:
    """The answers counted since the last sweep: 0 after sweeping now (``SWEEP_AFTER`` answers since the last
    one and no request for ``SWEEP_IDLE_S``), else ``answered`` (a request came first: it is answered at once)."""
    if answered < SWEEP_AFTER or _more_waiting(stream, SWEEP_IDLE_S):
        return answered
    from gpuwiz.core import gcpause

    gcpause.sweep()
    return 0


def _more_waiting(stream: IO[bytes], timeout: float = 0.0) -> bool:
    try:
        ready, _w, _x = select.select([stream], [], [], timeout)
    except (OSError, ValueError):
        return False
    return bool(ready)


if __name__ == "__main__":
    raise SystemExit(main())
