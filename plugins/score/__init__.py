"""Stage 5, score: ask a model every item, read its letter, tally and report."""
