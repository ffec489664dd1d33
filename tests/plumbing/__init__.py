"""toolkit.plumbing: atomic writes, digests, the helper process, special files."""
