"""toolkit.serving: the serving benchmark and serve-bench."""
