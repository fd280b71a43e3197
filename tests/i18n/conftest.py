"""Fixtures of the interface-language tests: the process language is reset after every test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gpuwiz import i18n


@pytest.fixture
def zh() -> Iterator[None]:
    """The Chinese interface for one test (English again afterwards, whatever happens)."""
    i18n.set_language("zh-CN")
    try:
        yield
    finally:
        i18n.set_language("en")


@pytest.fixture(autouse=True)
def _english_after() -> Iterator[None]:
    yield
    i18n.set_language("en")
