"""Benchmarks that print figures (run by `autograph bench`; not part of the tests)."""
