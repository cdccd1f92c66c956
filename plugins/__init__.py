"""SparkTrace's stages: logic modules (no pytest) and thin hook modules (hooks_*)."""
