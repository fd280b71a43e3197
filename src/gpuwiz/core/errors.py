"""The one exception type for errors a user can cause (bad file, bad value, unknown id)."""

from __future__ import annotations


class GpuwizError(Exception):
    """A user-facing error. ``str(err)`` is one line: ``FILE:LINE: field.path: what is wrong``.

    Several problems can be carried at once (``problems``); ``str`` joins them with newlines,
    each still one self-contained line.

    An engine refusal about config fields also carries them as typed facts, so a UI marks the
    field instead of reading the sentence: ``fields`` are the dotted config paths it is about (any
    one of them fixes it; most relevant first), ``reason`` the problem in words without paths.
    """

    def __init__(self, message: str, *, problems: list[str] | None = None, fields: tuple[str, ...] = (),
                 reason: str | None = None) -> None:
        self.problems = problems or [message]
        self.fields: tuple[str, ...] = tuple(fields)
        self.reason: str | None = reason
        super().__init__("\n".join(self.problems))

    @classmethod
    def at(cls, file: str | None, line: int | None, field: str | None, what: str) -> GpuwizError:
        return cls(format_problem(file, line, field, what))


def printable(text: str) -> str:
    """``text`` with unprintable characters (ESC, BEL, bidi overrides ...) shown as escapes.

    User-supplied keys, values and file names end up in messages; an ``\\x1b[2J`` in a config
    must not clear the user's terminal.
    """
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


def format_problem(file: str | None, line: int | None, field: str | None, what: str) -> str:
    file = printable(str(file)) if file else file
    field = printable(str(field)) if field else field
    what = printable(" ".join(str(what).split()))
    where = ""
    if file:
        where = f"{file}:{line}: " if line else f"{file}: "
    elif line:
        where = f"line {line}: "
    what = " ".join(str(what).split())  # one line, always
    return f"{where}{field}: {what}" if field else f"{where}{what}"
