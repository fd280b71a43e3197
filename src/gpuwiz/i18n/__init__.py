"""The interface language: English (the message ids themselves) or Simplified Chinese (``zh-CN``).

The language is chosen once per process, before anything is drawn or printed: ``--lang en|zh-CN``,
else the first of ``LANGUAGE`` (a colon list), ``LC_ALL``, ``LC_MESSAGES``, ``LANG`` that is set
(``zh_CN.UTF-8`` → Chinese; ``C``/``POSIX`` → English). English loads nothing: ``_`` returns its
argument and the ``gettext`` module is not even imported. Chinese reads the compiled catalog
``locale/zh_CN/LC_MESSAGES/gpuwiz.mo`` shipped in the package, with the standard library's gettext.
When the output stream's encoding cannot carry Chinese (an ``ascii`` or ``latin-1`` terminal) the
interface stays English and one line says why.

Strings are marked ``_("...")`` where they are used, or ``N_("...")`` where they are defined ahead
of the language choice (module constants: field labels, key descriptions) and translated where they
are shown. Text with values is a ``str.format`` template: ``_("{n} nodes").format(n=3)``, so the
translator can move the values. Money follows ``deployment.currency`` / country, never the language.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the running program needs neither (English start-up imports nothing more than os)
    from collections.abc import Mapping
    from gettext import GNUTranslations

__all__ = ["LANGS", "N_", "Msg", "_", "cells", "choose_language", "current_language", "encoding_note", "ljust",
           "set_language", "setup"]

LANGS = ("en", "zh-CN")
DOMAIN = "gpuwiz"
ENV_ORDER = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")
_PROBE = "显存算力"  # what a stream must be able to encode to show the Chinese interface


_current = "en"
_tr: GNUTranslations | None = None


def _(message: str) -> str:
    """``message`` in the interface language (itself in English, or when the catalog lacks it)."""
    tr = _tr
    return message if tr is None else tr.gettext(message)


def N_(message: str) -> str:
    """Marks ``message`` for translation where it is defined; ``_`` translates it where it is shown."""
    return message


class Msg:
    """A sentence kept as its English template and values, rendered where it is shown: what the
    engine memoises between calls (a candidate's problems and notes) holds no language.

    ``str(msg)`` is the English text (the language-neutral form, byte-identical to the sentence the
    template formats); ``msg.text()`` is the sentence in the interface language. The template is
    marked ``N_`` where it is written, so the catalog tools find it."""

    __slots__ = ("params", "template")

    def __init__(self, template: str, **params: object) -> None:
        self.template = template
        self.params = params

    def __str__(self) -> str:
        return self.template.format(**self.params) if self.params else self.template

    def __repr__(self) -> str:
        return f"Msg({self.template!r}, {self.params!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Msg) and (self.template, self.params) == (other.template, other.params)

    def __hash__(self) -> int:
        return hash((self.template, tuple(sorted(self.params))))

    def text(self) -> str:
        t = _(self.template)
        return t.format(**self.params) if self.params else t


def normalize(code: str) -> str | None:
    """``en`` / ``zh-CN`` for a language tag or a POSIX locale name (None when neither)."""
    tag = code.strip().split(".", 1)[0].split("@", 1)[0].replace("-", "_").lower()
    if tag in ("c", "posix") or tag == "en" or tag.startswith("en_"):
        return "en"
    if tag in ("zh", "zh_cn", "zh_sg", "zh_hans", "zh_hans_cn", "zh_hans_sg", "chinese"):
        return "zh-CN"
    return None


def choose_language(cli: str | None, environ: Mapping[str, str] | None = None) -> str:
    """The language for ``--lang`` (wins when given) or the environment, in gettext's order.

    ``LANGUAGE`` is a colon list: its first entry gpuwiz has is taken, and when it names none of
    them the next variable decides. The first of ``LC_ALL``, ``LC_MESSAGES``, ``LANG`` that is set
    decides alone (``de_DE.UTF-8`` → English, the language of the message ids)."""
    if cli:
        got = normalize(cli)
        if got is None:
            raise ValueError(f"unknown language {cli!r} (choose from: {', '.join(LANGS)})")
        return got
    env = os.environ if environ is None else environ
    for name in ENV_ORDER:
        value = env.get(name, "")
        if not value:
            continue
        if name == "LANGUAGE":
            for item in value.split(":"):
                got = normalize(item) if item else None
                if got is not None:
                    return got
            continue
        return normalize(value) or "en"
    return "en"


def can_show(encoding: str | None) -> bool:
    """Whether text in ``encoding`` can carry Chinese (UTF-8, GB2312/GBK/GB18030 can; ascii cannot)."""
    if not encoding:
        return False
    try:
        _PROBE.encode(encoding)
    except (UnicodeError, LookupError):
        return False
    return True


def encoding_note(encoding: str | None) -> str:
    return (f"gpuwiz: the terminal's encoding ({encoding or 'unknown'}) cannot show Chinese; using English "
            "(set LANG=zh_CN.UTF-8 for the Chinese interface)")


def set_language(lang: str) -> str:
    """Switch the interface to ``lang`` (``en`` or ``zh-CN``); returns it."""
    global _current, _tr
    code = normalize(lang)
    if code is None:
        raise ValueError(f"unknown language {lang!r} (choose from: {', '.join(LANGS)})")
    if code == "en":
        _current, _tr = "en", None
        return code
    import gettext
    from importlib import resources

    mo = resources.files("gpuwiz.i18n").joinpath("locale", "zh_CN", "LC_MESSAGES", f"{DOMAIN}.mo")
    with mo.open("rb") as fh:
        _tr = gettext.GNUTranslations(fh)
    _current = code
    return code


def current_language() -> str:
    return _current


def setup(cli: str | None, encoding: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """Choose and set the language; returns a one-line note when Chinese was asked for but the
    output ``encoding`` cannot carry it (English is used then), else None. ValueError: bad ``--lang``."""
    lang = choose_language(cli, environ)
    if lang != "en" and not can_show(encoding):
        set_language("en")
        return encoding_note(encoding)
    set_language(lang)
    return None


def cells(text: str) -> int:
    """Terminal cells ``text`` takes: East Asian wide and fullwidth characters take two, combining
    marks none (the rule Rich's ``cell_len`` follows, in the standard library for the engine)."""
    from unicodedata import combining, east_asian_width

    if text.isascii():
        return len(text)
    return sum(0 if combining(ch) else 2 if east_asian_width(ch) in ("W", "F") else 1 for ch in text)


def ljust(text: str, width: int) -> str:
    """``text`` padded with spaces to ``width`` cells (``str.ljust`` counts characters)."""
    return text + " " * max(0, width - cells(text))
