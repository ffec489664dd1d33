"""The test suite: one folder per package of toolkit/ (tests/README.md)."""
