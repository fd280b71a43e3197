"""The pure engine: models, catalog, estimator, recommender, pitfalls, config I/O, reports.

Nothing in this package imports Textual (tests/core/test_import_hygiene.py checks it).
"""
