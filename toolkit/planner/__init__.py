"""The VRAM planner: model folders (resolved without torch), memory estimates, the GPU catalog."""
