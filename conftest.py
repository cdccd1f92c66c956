"""SparkTrace's pytest entry: one hook module per stage, in flow order."""

pytest_plugins = [
    "plugins.cache.hooks",    # --work-report: compiles, nvdisasm runs, emulator builds, references; seconds per stage
    "plugins.family.hooks",   # families/ -> collected families and candidates
    "plugins.measure.hooks",  # pytest -m measure: gate, time, rank, slip (GPU)
    "plugins.items.hooks",    # slips and prompts -> items, snapshot cases
    "plugins.score.hooks",    # pytest --model NAME: items as tests, score sheets
    "pytester",  # the end-to-end tests run the suite on scratch copies of the project
]
