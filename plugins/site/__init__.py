"""Stage 6: the report site, static HTML built from what runs left on disk."""
