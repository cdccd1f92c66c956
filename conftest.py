"""SparkTrace's pytest entry: the plugins below do the collecting and scoring."""

pytest_plugins = [
    "plugins.hooks_families",
    "plugins.hooks_measure",
    "plugins.hooks_items",
    "plugins.hooks_model",
]
