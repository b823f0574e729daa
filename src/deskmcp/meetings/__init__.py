"""The meetings server: Granola's local cache, read-only, indexed for search."""
