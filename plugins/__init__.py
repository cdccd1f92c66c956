"""SparkTrace's stages, one package each in flow order: family, gate, measure, items, score.

A stage imports only from stages before it (tests/test_layering.py); atomicio is shared."""
