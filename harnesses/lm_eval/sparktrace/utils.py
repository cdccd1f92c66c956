"""lm-evaluation-harness hooks for SparkTrace: the prompt as exported, the letter read by
SparkTrace's own extractor (plugins/score/extract.py), one task per condition.

lm-eval loads this file from the YAML's folder, not as part of the repository, so the
repository root is put on the path here. What lm-eval cannot see: a reply's stop reason (its
generate_until returns text only), so a reply cut off by its budget counts as a miss here,
where SparkTrace and the Inspect task count it as "truncated"; and an item too long for the
model's window is the server's error, not an omission.
"""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from plugins.score.session import PluginExtractor  # noqa: E402
from plugins.score.tally import outcome_of  # noqa: E402

_EXTRACT = PluginExtractor()


def doc_to_text(doc: dict) -> str:
    return doc["prompt"]


def process_results(doc: dict, results: list) -> dict:
    text = results[0] if results else ""
    letter = _EXTRACT.letter(text) if text else None
    outcome = outcome_of(doc["answer"], letter)
    return {"acc": 1.0 if outcome == "correct" else 0.0, "no_letter": 1.0 if outcome == "no-letter" else 0.0}


def _condition(dataset, condition: str):
    return dataset.filter(lambda d: d["condition"] == condition)


def source_docs(dataset):
    return _condition(dataset, "source")


def full_docs(dataset):
    return _condition(dataset, "full")


def no_conflicts_docs(dataset):
    return _condition(dataset, "no-conflicts")


def no_cue_docs(dataset):
    """The diagnose set's third condition: the slip without the family's declared cue rows."""
    return _condition(dataset, "no-cue")
