"""Validation of the estimator against published training runs (``gpuwiz validate``).

A sibling of ``gpuwiz.core``, not part of it: the engine never imports this package (an import-linter
contract in pyproject.toml and ``tests/core/test_import_hygiene.py`` check it), and the CLI imports it
lazily, only for ``gpuwiz validate``. ``harness`` maps each published entry to a config and runs the
estimator on it; ``loso`` refits the model's free parameters leaving one source out at a time and
derives the P10-P90 ranges that the engine reads back from ``gpuwiz/data/ranges.yaml``.
"""
