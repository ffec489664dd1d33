"""Support code for the tests, not tests: builders, recorded runs, recalculation, paths."""
