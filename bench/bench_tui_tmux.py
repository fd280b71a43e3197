"""Key → screen latency of the wizard in a real terminal (tmux), as a user sees it.

    .venv/bin/python bench/bench_tui_tmux.py [--keys 30] [--size 100x30] [--config NAME ...]
                                             [--engine process|thread|both] [--floor] [--fresh]
                                             [--no-color] [--client control|fork]

Starts ``python -m gpuwiz EXAMPLE.yaml`` in a detached tmux session, goes to the Data step (the
Epochs field), then for each of K keys (alternately a digit and backspace) sends the key with
``tmux send-keys`` and runs ``tmux capture-pane`` each time the pane writes (a control-mode client,
``tmux -C``, is told so by tmux; ``--client fork`` instead starts a tmux process for every key and
every capture and polls in a busy loop, as round 1 did: on a 2-CPU machine that poller takes about a
CPU from the wizard and adds a client's start-up to every key) until

  * the typed character shows in the Epochs line (key → typed character), and
  * the live panel (the right-hand box) has changed (key → live panel).

Prints p50 / p95 of both. The keys type 2..9 and backspace in turn, so half of them make an Epochs
value the engine has not answered before and half go back to one it has (answered from its memo).
The engine's own time for each key is measured in-process afterwards by replaying the same values
in the same order on a warm engine; the bench prints the live panel's latency minus that key's
engine time (the target's "+ 15 ms"), for all keys and for the new values alone.
Wall times depend on the machine's load; beside them it prints the CPU time the wizard spent per key
(from /proc: schedstat nanoseconds, else utime+stime ticks), far less load-sensitive:
the UI thread alone, the whole wizard process (UI, Textual's input and writer threads, the engine
thread in ``--engine thread``), and the engine's child process (``--engine process``, the command
line's default; GPUWIZ_ENGINE=thread keeps the engine in a thread). The CPU window of a key runs
from sending it until both changes are on screen plus the pause before the next key; the idle rate
(the same process with no key) is printed so it can be subtracted. It also prints how long opening
the config took, from starting the wizard to its answer on the Result screen.

``--floor`` first times the same keys in ``cat`` (tmux alone) and in a minimal Textual app with one
Input: the part of the targets that the stack below gpuwiz takes.

Targets (issue 9): typed character p95 ≤ 35 ms whatever the engine costs; live panel p95 ≤ engine
time + 15 ms. Figures include tmux's own latency and one capture-pane per poll (~1-3 ms),
and depend on the machine's load: say on what machine and load they were taken.
"""

from __future__ import annotations

import argparse
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path


def pythonpath() -> str:
    """`` PYTHONPATH=...`` for a command run in tmux when this bench has one (a worktree's src/): a
    tmux server started earlier would otherwise run the wizard with ITS environment (another tree)."""
    import shlex

    path = os.environ.get("PYTHONPATH")
    return f" PYTHONPATH={shlex.quote(path)}" if path else ""


# ---- talking to tmux ----------------------------------------------------------------------------
# How the bench sends keys and reads the screen. "control" (the default): one tmux control-mode client
# per session (``tmux -C attach``) takes every send-keys and capture-pane over a pipe, and the bench
# sleeps until tmux says the pane wrote something (a ``%output`` notification), then captures. "fork"
# (round 1's way, kept to compare): a new ``tmux`` client process for every key and every capture, the
# captures in a busy loop. On a 2-CPU machine the fork poller keeps about one CPU busy (a fork and
# exec per poll) while the wizard and its engine need both, and its key's time starts before a
# client process has even connected: a user's terminal has one attached client, not one per key.
CLIENT = "control"
_controls: dict[str, Control] = {}


class Control:
    """A tmux control-mode client attached to one session: commands go down its stdin; each answer is
    a ``%begin`` ... ``%end`` block; notifications (``%output`` when the pane wrote) come between."""

    def __init__(self, session: str) -> None:
        self.proc = subprocess.Popen(["tmux", "-C", "attach-session", "-t", session], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.fd = self.proc.stdin, self.proc.stdout.fileno()
        self.buf = b""
        self.outputs = 0  # %output notifications not yet waited for
        self.command("display-message", "-p", "ready")  # attached (the attach's own block comes first)

    def _line(self, timeout: float | None) -> bytes | None:
        while b"\n" not in self.buf:
            if not select.select([self.fd], [], [], timeout)[0]:
                return None
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                raise SystemExit("the tmux control client ended")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    def _note(self, line: bytes) -> None:
        if line.startswith(b"%output "):
            self.outputs += 1

    def command(self, *args: str) -> str:
        self.stdin.write(" ".join(_quoted(a) for a in args).encode() + b"\n")
        while True:  # notifications until this command's block
            line = self._line(None)
            assert line is not None
            if line.startswith(b"%begin "):
                break
            self._note(line)
        out: list[bytes] = []
        while True:
            line = self._line(None)
            assert line is not None
            if line.startswith((b"%end ", b"%error ")):
                if line.startswith(b"%error "):
                    raise SystemExit(f"tmux {' '.join(args)}: {b' '.join(out).decode(errors='replace')}")
                return "".join(ln.decode(errors="replace") + "\n" for ln in out)
            out.append(line)

    def wait_output(self, timeout: float) -> None:
        """Until the pane writes something (or ``timeout`` seconds: a change is never missed for longer)."""
        end = time.perf_counter() + timeout
        while not self.outputs:
            left = end - time.perf_counter()
            if left <= 0:
                return
            line = self._line(left)
            if line is None:
                return
            self._note(line)
        self.outputs = 0

    def close(self) -> None:
        self.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def _quoted(arg: str) -> str:
    """One argument of a control-mode command line (tmux's own parser: '#' starts a comment unquoted)."""
    return "'" + arg.replace("'", "'\\''") + "'"


def _target(args: tuple[str, ...]) -> str | None:
    return args[args.index("-t") + 1] if "-t" in args[:-1] else None


def tmux(*args: str) -> str:
    control = _controls.get(_target(args) or "")
    if control is not None and args[0] != "kill-session":
        return control.command(*args)
    if args[0] == "kill-session" and (target := _target(args)) in _controls:
        _controls.pop(target).close()
    out = subprocess.run(["tmux", *args], check=True, capture_output=True, text=True).stdout
    if args[0] == "new-session" and CLIENT == "control":
        session = args[args.index("-s") + 1]
        _controls[session] = Control(session)
    return out


def add_client_arg(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--client", choices=("control", "fork"), default="control",
                    help="how keys are sent and the screen read: one tmux control-mode client woken by the pane's "
                         "output (control), or a tmux process per key and per capture in a busy loop (fork, round 1's)")


def use_client(kind: str) -> None:
    global CLIENT
    CLIENT = kind
    how = ("one control-mode client, woken by the pane" if kind == "control"
           else "a tmux process per key and per capture, polled in a busy loop")
    print(f"tmux client: {kind} ({how})")


def kill(session: str) -> None:
    """End a session (and its control client); quietly when it has ended already."""
    try:
        tmux("kill-session", "-t", session)
    except subprocess.CalledProcessError:
        pass


def capture(session: str) -> list[str]:
    return tmux("capture-pane", "-p", "-t", session).splitlines()


def next_change(session: str) -> None:
    """Between two captures: with a control client, sleep until the pane writes (at most 20 ms);
    with the fork client, nothing (the next capture at once, as round 1 polled)."""
    control = _controls.get(session)
    if control is not None:
        control.wait_output(0.02)


def wait_for(session: str, pred, timeout: float = 30.0) -> tuple[float, list[str]]:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    while True:
        lines = capture(session)
        if pred(lines):
            return time.perf_counter() - t0, lines
        if time.perf_counter() - t0 > timeout:
            raise SystemExit("timed out waiting for the screen:\n" + "\n".join(lines))
        next_change(session)


def to_epochs(session: str) -> None:
    """From the Result screen to the Data step's Epochs field, the cursor after its text."""
    for _ in range(3):  # Result → Deploy → Schedule → Data (pageup; alt+← works too)
        before = capture(session)
        tmux("send-keys", "-t", session, "PageUp")
        wait_for(session, lambda ls, b=before: ls != b)
    wait_for(session, lambda ls: "Epochs" in "".join(ls) and "[2 Data]" in ls[0])
    for _ in range(2):  # focus the Epochs field: tab from the first field (Tokens) twice
        before = capture(session)
        tmux("send-keys", "-t", session, "Tab")
        wait_for(session, lambda ls, b=before: ls != b)
    # focus selects the field's text (the first key would replace it): End puts the cursor after it
    tmux("send-keys", "-t", session, "End")


def key_for(i: int) -> str:
    """The i-th key of a run: 2..9 and backspace in turn. Not "1": a field left at its default (the
    70B's epochs) is empty with "1" as its placeholder, and typing the default changes no answer."""
    return "BSpace" if i % 2 else "23456789"[(i // 2) % 8]


def fresh_base(k: int) -> str:
    """``--fresh``: the Epochs value round k of the keys types after (1.0, 1.1, ... 1.9, 2.0, ...)."""
    return f"{1 + k // 10}.{k % 10}"


def fresh_start(session: str, k: int) -> None:
    """``--fresh``: before round k, clear the Epochs field and type ``fresh_base(k)`` (not measured)."""
    for _ in range(8):
        tmux("send-keys", "-t", session, "BSpace")
    for key in fresh_base(k):
        tmux("send-keys", "-t", session, key)
    wait_for(session, lambda ls: epochs_value(epochs_line(ls)) == fresh_base(k))
    time.sleep(0.5)  # (its answers settle; not measured)


def fresh_key_for(i: int) -> str:
    """The i-th key of a ``--fresh`` run: a digit and backspace in turn, 2..9, after the round's base
    (``fresh_start`` sets a new one every 16 keys): 1.02, 1.0, 1.03, ... 1.09, then 1.12, ... Every digit makes an
    Epochs value no earlier key made (a new answer, about a per cent from the base), every backspace the base,
    which the engine answered before. The plain run repeats 2..9, so after its first eight only memoised values
    come."""
    j = i % 16
    return "BSpace" if j % 2 else "23456789"[j // 2]


def epochs_line(lines: list[str]) -> str:
    return next((ln for ln in lines if "Epochs" in ln), "")


def panel(lines: list[str]) -> list[str]:
    """The live panel: the box right of the form, from its top (╭ Live answer) to its bottom (╰) row.
    Only the box: the step bar above it changes with the typed key (● unsaved), not with the answer."""
    top = next((i for i, ln in enumerate(lines) if "Live answer" in ln and "╭" in ln), None)
    if top is None:
        return lines
    col = lines[top].index("╭")
    bottom = next((i for i in range(top + 1, len(lines)) if lines[i][col:col + 1] == "╰"), len(lines) - 1)
    return [ln[col:] for ln in lines[top:bottom + 1]]


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def cpu_ns(pid: int, tid: int | None = None) -> int:
    """CPU time of a thread (``tid``) or of the whole process, in nanoseconds."""
    base = f"/proc/{pid}" if tid is None else f"/proc/{pid}/task/{tid}"
    try:
        with open(f"{base}/schedstat") as fh:
            return int(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    if tid is None:  # schedstat of the whole process is missing: add up its threads
        try:
            return sum(cpu_ns(pid, int(t)) for t in os.listdir(f"/proc/{pid}/task"))
        except OSError:
            return 0
    try:
        with open(f"{base}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 10**9 // os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0


def process_cpu_ns(pid: int) -> int:
    """All threads of ``pid`` (schedstat of /proc/PID is the main thread's only on some kernels)."""
    try:
        return sum(cpu_ns(pid, int(t)) for t in os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return cpu_ns(pid)


def children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return [int(x) for x in fh.read().split()]
    except (OSError, ValueError):
        return []


def switches(pid: int, tid: int) -> tuple[int, int]:
    """(voluntary, involuntary) context switches of a thread so far: a wake of another thread that
    takes this one's CPU, a wait for the GIL or a pipe, a preemption by another process."""
    try:
        with open(f"/proc/{pid}/task/{tid}/status") as fh:
            got = dict(ln.split(":", 1) for ln in fh if "ctxt_switches" in ln)
        return int(got["voluntary_ctxt_switches"]), int(got["nonvoluntary_ctxt_switches"])
    except (OSError, ValueError, KeyError):
        return 0, 0


class CpuMeter:
    """CPU of the wizard's UI thread, its whole process and its children (the engine process)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def sample(self) -> tuple[int, int, int]:
        kids = sum(process_cpu_ns(c) for c in children(self.pid))
        return cpu_ns(self.pid, self.pid), process_cpu_ns(self.pid), kids


def epochs_value(line: str) -> str:
    """The number typed in the Epochs field, as the screen shows it."""
    import re

    m = re.search(r"Epochs\W*?([0-9][0-9.]*)", line)
    return m.group(1) if m else ""


def engine_per_key(config: Path, values: list[str]) -> list[float]:
    """The engine's own time for each key, in-process, replaying the keys' values in order on a
    warm engine as the wizard's engine sees them (the same memo: a value seen before is answered
    from it), so a key's panel latency can be set against the engine time of that same key."""
    from gpuwiz.core.catalog import load_catalog
    from gpuwiz.core.config_io import load_config
    from gpuwiz.core.recommend import recommend

    req, cat = load_config(config), load_catalog()
    recommend(req, cat)
    out = []
    for v in values:
        edit = req.model_copy(update={"data": req.data.model_copy(update={"epochs": float(v)})})
        t0 = time.perf_counter()
        recommend(edit, cat)
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def bench(config: Path, keys: int, size: str, engine: str, fresh: bool = False, no_color: bool = False) -> None:
    cols, rows = size.split("x")
    session = f"gpuwiz-bench-{os.getpid()}"
    state = tempfile.mkdtemp(prefix="gpuwiz-bench-state-")
    copy = shutil.copy(config, state)  # a copy: nothing the wizard does reaches the example
    # exec: the pane's process is the wizard itself (its pid is what the CPU meter reads)
    colour = " NO_COLOR=1" if no_color else ""
    cmd = (f"exec env GPUWIZ_STATE_DIR={state} GPUWIZ_ENGINE={engine}{colour}{pythonpath()} {sys.executable} "
           f"-m gpuwiz {copy}")
    t_open = time.perf_counter()
    tmux("new-session", "-d", "-s", session, "-x", cols, "-y", rows, cmd)
    try:
        wait_for(session, lambda ls: any("What-if" in ln for ln in ls), 60)  # the Result screen
        t_open = time.perf_counter() - t_open
        pid = int(tmux("display-message", "-p", "-t", session, "#{pane_pid}").strip())
        meter = CpuMeter(pid)
        to_epochs(session)
        time.sleep(1.0)  # let the first answers settle (not measured)
        if engine == "process":  # the engine's child starts after the first answer: wait until it is up
            deadline = time.perf_counter() + 30
            while not children(pid) and time.perf_counter() < deadline:
                time.sleep(0.1)
            time.sleep(2.0)  # it loads the core and the catalog (about a second), then answers the keys
        idle0, t_idle = meter.sample(), time.perf_counter()
        time.sleep(1.5)
        idle1, t_idle = meter.sample(), time.perf_counter() - t_idle
        idle_rate = [(b - a) / t_idle for a, b in zip(idle0, idle1, strict=True)]  # ns of CPU per s, idle
        typed: list[float] = []
        shown: list[float] = []
        cpu_keys = [0, 0, 0]
        sw0 = switches(pid, pid)
        values: list[str] = []  # the Epochs value after each key
        window = 0.0
        for i in range(keys):
            if fresh and i % 16 == 0:
                fresh_start(session, i // 16)
            before = capture(session)
            line0, panel0 = epochs_line(before), panel(before)
            key = fresh_key_for(i) if fresh else key_for(i)
            c0 = meter.sample()
            t0 = time.perf_counter()
            tmux("send-keys", "-t", session, key)
            t_char = t_panel = None
            while t_char is None or t_panel is None:
                now = capture(session)
                dt = time.perf_counter() - t0
                if t_char is None and epochs_line(now) != line0:
                    t_char = dt
                if t_panel is None and panel(now) != panel0:
                    t_panel = dt
                if dt > 10:
                    raise SystemExit(f"key {key!r}: screen did not change in 10 s")
                if t_char is None or t_panel is None:
                    next_change(session)
            values.append(epochs_value(epochs_line(now)))
            typed.append(t_char * 1e3)
            shown.append(t_panel * 1e3)
            time.sleep(0.15)  # keys at a typing pace, not a burst
            c1 = meter.sample()
            window += time.perf_counter() - t0
            for j in range(3):
                cpu_keys[j] += c1[j] - c0[j]
        sw1 = switches(pid, pid)
    finally:
        kill(session)
        shutil.rmtree(state, ignore_errors=True)
    eng = engine_per_key(config, values)
    seen: set[str] = {fresh_base(k) for k in range(keys // 16 + 1)} if fresh else set()  # (answered unmeasured)
    new: list[int] = []  # keys that made a value the engine had not answered before
    for i, v in enumerate(values):
        if v not in seen:
            new.append(i)
        seen.add(v)
    excess = [shown[i] - eng[i] for i in range(keys)]
    excess_new = [excess[i] for i in new]
    per_key = [c / keys / 1e6 for c in cpu_keys]
    idle_per_key = [r * window / keys / 1e6 for r in idle_rate]
    print(f"{config.name} at {size}{colour and ', NO_COLOR'}, engine in a {engine}, {keys} keys "
          f"({len(new)} made a new value):\n"
          f"  wall: key → typed char p50 {pct(typed, .5):.0f} ms, p95 {pct(typed, .95):.0f} ms (target ≤ 35)\n"
          f"  key → live panel, all keys: p50 {pct(shown, .5):.0f} ms, p95 {pct(shown, .95):.0f} ms; "
          f"engine for the same keys p50 {pct(eng, .5):.1f}, p95 {pct(eng, .95):.1f} ms\n"
          f"  live panel minus that key's engine time: all keys p50 {pct(excess, .5):.0f}, "
          f"p95 {pct(excess, .95):.0f} ms; new values only p50 {pct(excess_new, .5):.0f}, "
          f"p95 {pct(excess_new, .95):.0f} ms (target ≤ 15)\n"
          f"  CPU per key: UI thread {per_key[0]:.1f} ms, wizard process {per_key[1]:.1f} ms, "
          f"engine process {per_key[2]:.1f} ms (idle over the same window: {idle_per_key[0]:.1f} / "
          f"{idle_per_key[1]:.1f} / {idle_per_key[2]:.1f} ms); UI thread context switches per key "
          f"{(sw1[0] - sw0[0]) / keys:.1f} voluntary, {(sw1[1] - sw0[1]) / keys:.1f} involuntary\n"
          f"  open the config → answer on screen (the Result screen drawn): {t_open * 1e3:.0f} ms")


FLOOR_APP = """
from textual.app import App
from textual.widgets import Input, Label
class Floor(App):
    def compose(self):
        yield Label("Epochs"); yield Input(value="1")
Floor().run()
"""


def floor(keys: int, size: str) -> None:
    """What the key -> screen path costs without gpuwiz, measured as ``bench`` measures a typed
    character (the same keys, one capture-pane per poll): ``cat`` (tmux alone: send-keys, the pty,
    the redraw, the polling) and a minimal Textual app with one Input (Textual's input thread, key
    handling, one frame). The targets are gpuwiz's; these say how much of them the stack below takes."""
    cols, rows = size.split("x")
    for label, cmd in (("cat (tmux alone)", "cat"),
                       ("a minimal Textual app with one Input", f"{sys.executable} -c '{FLOOR_APP}'")):
        session = f"gpuwiz-floor-{os.getpid()}"
        tmux("new-session", "-d", "-s", session, "-x", cols, "-y", rows, cmd)
        try:
            if cmd != "cat":
                wait_for(session, lambda ls: "Epochs" in "".join(ls))
            lat: list[float] = []
            for i in range(keys):
                before = capture(session)
                t0 = time.perf_counter()
                tmux("send-keys", "-t", session, key_for(i))
                wait_for(session, lambda ls, b=before: ls != b)
                lat.append((time.perf_counter() - t0) * 1e3)
                time.sleep(0.1)  # between keys, as a user types: not a wait for a condition (no test)
        finally:
            kill(session)
        print(f"floor, {label} at {size}: key -> screen p50 {pct(lat, 0.5):.0f} ms, p95 {pct(lat, 0.95):.0f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=30)
    ap.add_argument("--size", default="100x30")
    ap.add_argument("--config", nargs="*", default=["small-team-lora-7b.yaml", "enterprise-70b-pretrain.yaml"])
    ap.add_argument("--engine", choices=("process", "thread", "both"), default="process",
                    help="where the wizard runs the engine (process: the command line's default)")
    ap.add_argument("--fresh", action="store_true",
                    help="type Epochs values 1.02, 1.03, ... 1.12, ...: every digit a new value (fresh_key_for)")
    ap.add_argument("--no-color", action="store_true", help="run the wizard with NO_COLOR=1")
    ap.add_argument("--floor", action="store_true",
                    help="also time the same keys in `cat` and in a minimal Textual app (what tmux and Textual take)")
    add_client_arg(ap)
    args = ap.parse_args()
    use_client(args.client)
    if shutil.which("tmux") is None:
        raise SystemExit("tmux is not installed")
    folder = Path(str(resources.files("gpuwiz").joinpath("examples")))
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = float("nan")
    print(f"machine: {os.cpu_count()} CPUs, load average {load:.1f}; Python {sys.version.split()[0]}")
    if args.floor:
        floor(args.keys, args.size)
    for name in args.config:
        for engine in (("process", "thread") if args.engine == "both" else (args.engine,)):
            bench(folder / name, args.keys, args.size, engine, args.fresh, args.no_color)
    try:
        print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    except OSError:
        pass


if __name__ == "__main__":
    main()
