"""SparkTrace's pytest entry: the plugins below do the collecting and scoring."""

pytest_plugins = [
    "plugins.hooks_families",
    "plugins.hooks_measure",
    "plugins.hooks_items",
    "plugins.hooks_model",
    "pytester",  # the end-to-end tests run the suite on scratch copies of the project
]
