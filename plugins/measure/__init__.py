"""Stage 3, measure (GPU): time and rank the candidates, capture the slip, write the key with provenance."""
