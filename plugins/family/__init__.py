"""Stage 1, families: read a family directory, check it, compile its candidates for every target."""
