"""toolkit.cluster: campaigns on a Ray cluster."""
