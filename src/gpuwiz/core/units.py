"""Unit conventions and forgiving number parsing.

Conventions (DESIGN.md): ``_gb`` is decimal (1e9 bytes), ``_gib`` binary (2**30), ``_w`` watts,
``_usd`` US dollars, ``_hours`` hours, ``_tflops`` 1e12 FLOP/s. Conversions live here only.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

from pydantic import BeforeValidator

GIB = 2**30
GB = 1e9
GB_PER_GIB = GIB / GB  # a GiB in decimal GB (1.0737)
HOURS_PER_MONTH = 730.0  # 8760 / 12
HOURS_PER_YEAR = 8760.0


def bytes_to_gib(n: float) -> float:
    return n / GIB


def gib_to_gb(x: float) -> float:
    return x * GIB / GB


_SUFFIX = {
    "": 1.0,
    "k": 1e3, "thousand": 1e3,
    "m": 1e6, "mn": 1e6, "million": 1e6,
    "b": 1e9, "bn": 1e9, "g": 1e9, "billion": 1e9,
    "t": 1e12, "trillion": 1e12,
    "p": 1e15,
}
# Size units normalise to the field's unit via ``unit_scale`` (a GB field reading "2 TB" gets 2000).
_BYTES = {
    "b": 1.0, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12, "pb": 1e15,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "pib": 2**50,
}
_NUM = re.compile(r"^\s*([-+]?(?:\d[\d_,]*\.?\d*|\.\d+)(?:e[-+]?\d+)?)\s*([a-z]*)\s*$", re.IGNORECASE)


def parse_number(value: Any, *, byte_unit: float | None = None) -> Any:
    """Turn human forms into numbers: ``2e12`` (a string to PyYAML), ``2T``, ``1.5B``, ``150 GB``.

    ``byte_unit`` is the size in bytes of the field's unit (1e9 for a ``_gb`` field, 1e3 for
    ``_kb``); byte suffixes are then converted. Values that are not strings pass through so that
    pydantic reports the type error. Unparseable strings also pass through (pydantic complains).
    """
    if not isinstance(value, str):
        return value
    m = _NUM.match(value)
    if not m:
        return value
    num_s, suffix = m.group(1).replace("_", "").replace(",", ""), m.group(2).lower()
    try:
        num = float(num_s)
    except ValueError:
        return value
    if byte_unit is not None and suffix in _BYTES:
        return num * _BYTES[suffix] / byte_unit
    if suffix in _SUFFIX:
        return num * _SUFFIX[suffix]
    return value


def _finite(v: Any) -> Any:
    if isinstance(v, bool):  # YAML `true` is not 1 GPU / 1 token
        raise ValueError("must be a number, not true/false")
    if isinstance(v, str) and v.strip().lower().lstrip("+-") in ("nan", "inf", "infinity"):
        v = float(v)  # pydantic would parse these strings into NaN / infinity
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError("must be a finite number (not NaN or infinity)")
    return v


def _human(v: Any) -> Any:
    return _finite(parse_number(v))


def _human_gb(v: Any) -> Any:
    return _finite(parse_number(v, byte_unit=GB))


def _human_kb(v: Any) -> Any:
    return _finite(parse_number(v, byte_unit=1e3))


_MONEY = re.compile(r"^\s*(?:US)?\$\s*(.*?)\s*$|^\s*(.*?)\s*USD\s*$", re.IGNORECASE)


def parse_money(value: Any) -> Any:
    """``$250,000``, ``US$ 250K`` or ``250,000 USD`` → a number (other forms as ``parse_number``)."""
    if isinstance(value, str):
        mt = _MONEY.match(value)
        if mt:
            value = mt.group(1) if mt.group(1) is not None else mt.group(2)
    return parse_number(value)


def _human_usd(v: Any) -> Any:
    return _finite(parse_money(v))


HumanFloat = Annotated[float, BeforeValidator(_human)]
HumanUSD = Annotated[float, BeforeValidator(_human_usd)]
HumanInt = Annotated[int, BeforeValidator(lambda v: _int_like(_human(v)))]
SizeGB = Annotated[float, BeforeValidator(_human_gb)]
SizeKB = Annotated[float, BeforeValidator(_human_kb)]


def _int_like(v: Any) -> Any:
    """Accept 4.0 or "4k" for an integer field, but not 4.5."""
    if isinstance(v, float) and not isinstance(v, bool):
        if v.is_integer():
            return int(v)
        raise ValueError("must be a whole number")
    return v
