"""toolkit.planner: the GPU catalog, offers, splits, memory estimates, model files."""
