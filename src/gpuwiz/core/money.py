"""Money: amounts as people write them (``¥1,800,000``, ``250,000 EUR``, ``$250k``), currency
conversion at the catalog's FX rates, and display in the user's currency.

The engine computes in USD; FX rates are catalog data (``fx``: USD per unit, with source and
date). ``¥`` is read as CNY (JPY users write ``JPY`` or ``円``); ``$`` is USD (other dollars:
write the ISO code, ``CAD 1,000``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BeforeValidator, ValidationInfo

from gpuwiz.core.units import parse_number

SYMBOLS = {"$": "USD", "US$": "USD", "€": "EUR", "£": "GBP", "¥": "CNY", "￥": "CNY", "元": "CNY",
           "円": "JPY", "₩": "KRW", "₹": "INR", "S$": "SGD", "C$": "CAD", "CA$": "CAD", "RMB": "CNY"}
DISPLAY = {"USD": "$", "EUR": "€", "GBP": "£", "CNY": "¥", "JPY": "JP¥", "KRW": "₩", "INR": "₹",
           "SGD": "S$", "CAD": "C$"}
_ISO = re.compile(r"^[A-Za-z]{3}$")
_SYM = sorted(SYMBOLS, key=len, reverse=True)


@dataclass(frozen=True)
class Money:
    amount: float
    currency: str | None  # ISO 4217, or None when the text named no currency


def parse_money(value: Any) -> Any:
    """``Money`` for a string that names a currency (symbol before or after, ISO code before or
    after), the number for a plain number or a plain numeric string (thousands separators and
    k/M suffixes allowed), and the value unchanged when it is not money (pydantic then says so)."""
    if not isinstance(value, str):
        return value
    text = value.strip().replace("\u00a0", " ")
    code: str | None = None
    for sym in _SYM:
        if text.upper().startswith(sym.upper()):
            code, text = SYMBOLS[sym], text[len(sym):].strip()
            break
        if text.upper().endswith(sym.upper()):
            code, text = SYMBOLS[sym], text[: -len(sym)].strip()
            break
    if code is None:
        parts = text.split()
        if len(parts) == 2 and _ISO.match(parts[0]) and not _ISO.match(parts[1]):
            code, text = parts[0].upper(), parts[1]
        elif len(parts) == 2 and _ISO.match(parts[1]):
            code, text = parts[1].upper(), parts[0]
    if code is not None and text.startswith(("-", "+")) and len(text) > 1 and text[1:2] in SYMBOLS:
        return value
    num = parse_number(text.replace(" ", ""))
    if isinstance(num, bool) or not isinstance(num, (int, float)):
        return value
    if not math.isfinite(float(num)):
        return value
    return Money(float(num), code) if code is not None else num


def convert(amount: float, code: str, usd_per_unit: dict[str, float], to: str = "USD") -> float:
    """``amount`` of ``code`` in ``to`` at ``usd_per_unit`` rates (USD itself needs no entry)."""
    rates = {"USD": 1.0, **{k.upper(): v for k, v in usd_per_unit.items()}}
    src, dst = code.upper(), to.upper()
    if src not in rates:
        raise KeyError(src)
    if dst not in rates:
        raise KeyError(dst)
    return amount * rates[src] / rates[dst]


def format_money(amount: float | None, currency: str = "USD", decimals: int | None = None) -> str:
    """``$1,234``, ``¥8,860``, ``€1,071.50``; small amounts keep two decimals."""
    if amount is None:
        return "-"
    code = currency.upper()
    sym = DISPLAY.get(code)
    if decimals is None:
        decimals = 2 if abs(amount) < 100 else 0
    num = f"{abs(amount):,.{decimals}f}"
    sign = "-" if amount < 0 else ""
    return f"{sign}{sym}{num}" if sym else f"{sign}{num} {code}"


def _to_usd(value: Any, info: ValidationInfo) -> Any:
    """Config money field (USD): accept ``$250,000``, ``250k USD``, ``¥1,800,000`` (converted at the
    FX rates the config loader passes in the validation context as ``{"fx": {code: usd_per_unit}}``)."""
    from gpuwiz.core.units import _finite

    got = parse_money(value)
    if isinstance(got, Money):
        if got.currency == "USD":
            return got.amount
        fx = (info.context or {}).get("fx") if info.context else None
        if not fx or got.currency not in fx:
            known = ", ".join(sorted({"USD", *(fx or {})}))
            raise ValueError(f"no exchange rate for {got.currency} here (known: {known}); write the amount in USD")
        return got.amount * float(fx[got.currency])
    return _finite(got)


MoneyUSD = Annotated[float, BeforeValidator(_to_usd)]
