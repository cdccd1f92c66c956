"""Transcript files: layout, atomic writes, tolerant reads, strict records."""
import json
import logging

import pytest

from plugins.score.transcripts import (
    SCHEMA,
    TranscriptError,
    read_transcript,
    record_of,
    slug,
    transcript_path,
    utc_now,
    write_transcript,
)


def test_path_layout_keeps_item_id_folders(tmp_path):
    p = transcript_path(tmp_path, "gpt-5.4-nano", 2, "clamp_smem/no-conflicts/mirror")
    assert p == tmp_path / "transcripts" / "gpt-5.4-nano" / "pass2" / "clamp_smem" / "no-conflicts" / "mirror.json"


@pytest.mark.parametrize("bad", ["../escape", "a//b", "/abs", "a/b c", "a/./b"])
def test_path_rejects_ids_that_escape_or_are_odd(tmp_path, bad):
    with pytest.raises(TranscriptError, match="cannot name a transcript file"):
        transcript_path(tmp_path, "m", 1, bad)


def test_slug_makes_one_safe_segment():
    assert slug("meta/llama 3:70b") == "meta_llama_3_70b"
    with pytest.raises(TranscriptError):
        slug("///")


def test_write_is_atomic_and_round_trips(tmp_path):
    p = tmp_path / "t" / "x.json"
    write_transcript(p, {"item": "a/b/c", "n": 1})
    write_transcript(p, {"item": "a/b/c", "n": 2})
    assert read_transcript(p) == {"schema": SCHEMA, "item": "a/b/c", "n": 2}
    assert [f.name for f in p.parent.iterdir()] == ["x.json"]  # no temp file left behind


def test_write_leaves_old_file_when_serialising_fails(tmp_path):
    p = tmp_path / "x.json"
    write_transcript(p, {"n": 1})
    with pytest.raises(TypeError):
        write_transcript(p, {"n": object()})
    assert read_transcript(p)["n"] == 1
    assert [f.name for f in tmp_path.iterdir()] == ["x.json"]


def test_read_missing_corrupt_or_foreign_is_none_and_logged(tmp_path, caplog):
    assert read_transcript(tmp_path / "none.json") is None
    (tmp_path / "bad.json").write_text("{ half")
    (tmp_path / "foreign.json").write_text(json.dumps({"schema": "other/1"}))
    with caplog.at_level(logging.WARNING, logger="sparktrace.transcripts"):
        assert read_transcript(tmp_path / "bad.json") is None
        assert read_transcript(tmp_path / "foreign.json") is None
    assert "bad.json: unreadable transcript" in caplog.text
    assert "foreign.json: not a sparktrace.transcript/1 record" in caplog.text


def test_record_of_reads_scoring_fields_and_names_missing_ones(tmp_path):
    data = {"item": "f/full/forward", "family": "f", "condition": "full", "order": "forward", "pass": 3,
            "expected": "B", "chosen": "B", "strict": None, "outcome": "correct",
            "key": {"gpu": "fx", "measured": False}}
    r = record_of(data)
    assert (r.pass_index, r.outcome, r.strict, r.key_measured, r.key) == (3, "correct", None, False, "fx")
    del data["expected"]
    with pytest.raises(TranscriptError, match=r"x\.json: field 'expected' is missing"):
        record_of(data, tmp_path / "x.json")
    with pytest.raises(TranscriptError, match="field 'outcome'"):
        record_of({**data, "expected": "B", "outcome": "skipped"}, "y.json")


def test_utc_now_is_iso_utc():
    s = utc_now()
    assert s.endswith("Z") and "T" in s
