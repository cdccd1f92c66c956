"""The SparkTrace task for Inspect AI: `inspect eval harnesses/inspect/sparktrace.py --model ...`.

Task arguments (-T): items=PATH (an export: python -m plugins.items export), else key=GPU and
family_set=classic|hard|all to build the items from families/; key_intended=true for a dry
run on an unmeasured key (refused otherwise; the log says so); passes=N for epochs.
The logic is plugins/score/inspect_task.py; this file only puts the repository on the path.
"""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from inspect_ai import Task, task  # noqa: E402

from plugins.score.inspect_task import sparktrace_task  # noqa: E402


@task
def sparktrace(items: str | None = None, key: str | None = None, family_set: str = "classic",
               key_intended: bool = False, passes: int = 1, families: str = "families") -> Task:
    return sparktrace_task(items=items, key=key, family_set=family_set, key_intended=key_intended,
                           passes=passes, families=families)
