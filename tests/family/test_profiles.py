"""Every family's [[profile_checks]] hold in the binary on every target; the
profile reports are deterministic; a malformed check is one clear error."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from plugins.family.binary import profile_source
from plugins.family.compile import compile_source
from plugins.family.manifest import FamilyError, load_family
from plugins.family.profile_checks import CheckSpecError, failures, parse_profile_checks
from plugins.family.profiles import check_failures, main, write_profiles

SYNTH = Path(__file__).resolve().parents[1] / "fixtures" / "items" / "synth_scale"


def test_profile_checks_hold(compile_case):
    """CI's proof that what a family says about its binary is true on this target."""
    fam, cand, arch = compile_case
    if not compile_source(cand.source, arch, cand.path.name).ok:  # cached: the compile test already ran it
        pytest.skip(f"{cand.path}: does not compile for {arch}; reported once, by test_compiles[{fam.name}/{cand.id}/{arch}]")
    bad = check_failures(fam, cand.id, profile_source(cand.source, arch, cand.path.name))
    if bad:
        pytest.fail(f"{fam.name}/{cand.id} on {arch}: profile checks fail:\n  " + "\n  ".join(bad), pytrace=False)


# -- a synthetic family with checks ----------------------------------------------

CHECKS = """
[[profile_checks]]
candidate = "rw_stage"
count = "shared_loads"
op = ">="
value = 1
why = "the slice is read back from shared memory"

[[profile_checks]]
candidate = ["rw_one", "rw_two"]
kernel = "k0"
count = "barriers"
op = "=="
value = 0
why = "no barrier"

[[profile_checks]]
candidate = "rw_grid"
count = "global_loads"
scope = "each_loop"
op = ">="
value = 1
why = "the grid-stride loop loads every pass"

[[profile_checks]]
candidate = "rw_grid"
count = "global_stores"
scope = "any_loop"
op = ">="
value = 1
why = "some loop stores"
"""


def _synth(tmp_path: Path, extra: str) -> Path:
    fam = tmp_path / "families" / "synth_scale"
    shutil.copytree(SYNTH, fam)
    toml = fam / "family.toml"
    toml.write_text(toml.read_text() + extra)
    return fam


def test_checks_pass_and_a_false_claim_names_family_candidate_target_and_count(tmp_path):
    fam = load_family(_synth(tmp_path, CHECKS + """
[[profile_checks]]
candidate = "rw_two"
count = "global_loads_64"
op = ">="
value = 1
per = 2
why = "claims float2 loads"
"""))
    assert len(fam.profile_checks) == 5
    for cand in fam.candidates:
        lines = check_failures(fam, cand.id, profile_source(cand.source, "sm_90"))
        if cand.id == "rw_two":
            (line,) = lines
            assert "k0 on sm_90" in line and "global_loads_64 per 2 >= 1 fails, counted 0" in line
            assert "claims float2 loads" in line
        else:
            assert lines == []
    grid = fam.candidate("rw_grid")
    import dataclasses
    none_loop = dataclasses.replace(fam.profile_checks[3], value=99.0)
    (line,) = failures(none_loop, "rw_grid", profile_source(grid.source, "sm_90"))
    assert "global_stores (any_loop) >= 99 fails in every loop, counted [" in line


def test_report_files_are_deterministic_and_failing_checks_fail_the_command(tmp_path, capsys):
    root = _synth(tmp_path, CHECKS.replace('value = 0\nwhy = "no barrier"', 'value = 1\nwhy = "one barrier"')).parent
    out = tmp_path / "profiles"
    (out / "gone_family.md").parent.mkdir(parents=True)
    (out / "gone_family.md").write_text("stale")
    args = ["--families", str(root), "--out", str(out)]
    assert main(args) == 1  # the false "one barrier" claim
    err = capsys.readouterr().err
    assert "synth_scale/rw_one on sm_90" in err and "barriers == 1 fails, counted 0" in err
    first = {p.name: p.read_bytes() for p in out.iterdir()}
    assert sorted(first) == ["synth_scale.json", "synth_scale.md"]  # the stale file is gone
    profile_source.cache_clear()  # the second run disassembles again
    main(args)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == first
    md = first["synth_scale.md"].decode()
    assert "## sm_90" in md and "| rw_stage (rewrite) | k0 |" in md and "rw_one on sm_90" in md


def test_write_profiles_keeps_families_of_other_sets(tmp_path):
    out = tmp_path / "p"
    out.mkdir()
    (out / "other.json").write_text("{}")
    fam = load_family(_synth(tmp_path, ""))
    write_profiles([fam], out, known=["other", "synth_scale"])
    assert sorted(p.name for p in out.iterdir()) == ["other.json", "synth_scale.json", "synth_scale.md"]


def _two_families(tmp_path: Path) -> Path:
    """families/synth_scale and families/synth_two: the same small family under two names."""
    root = _synth(tmp_path, "").parent
    two = root / "synth_two"
    shutil.copytree(root / "synth_scale", two)
    toml = two / "family.toml"
    toml.write_text(toml.read_text().replace('name = "synth_scale"', 'name = "synth_two"', 1))
    return root


def test_named_families_are_regenerated_and_the_others_left_alone(tmp_path, capsys):
    root = _two_families(tmp_path)
    out = tmp_path / "profiles"
    out.mkdir()
    (out / "synth_scale.json").write_text("untouched")
    assert main(["synth_two", "--families", str(root), "--out", str(out)]) == 0
    assert (out / "synth_scale.json").read_text() == "untouched"
    assert sorted(p.name for p in out.iterdir()) == ["synth_scale.json", "synth_two.json", "synth_two.md"]
    assert '"family": "synth_two"' in (out / "synth_two.json").read_text()


def test_a_name_that_is_not_a_family_is_one_error_saying_how_to_list_them(tmp_path, capsys):
    root = _two_families(tmp_path)
    out = tmp_path / "profiles"
    with pytest.raises(SystemExit) as info:
        main(["synth_two", "nope", "--families", str(root), "--out", str(out)])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "'nope' is not a family" in err and f"ls {root}/" in err
    assert not out.exists()  # nothing was written


def test_parallel_run_writes_the_serial_runs_bytes(tmp_path):
    root = _two_families(tmp_path)
    serial, parallel = tmp_path / "serial", tmp_path / "parallel"
    assert main(["--families", str(root), "--out", str(serial), "-j", "1"]) == 0
    assert main(["--families", str(root), "--out", str(parallel), "-j", "2"]) == 0
    files = {p.name: p.read_bytes() for p in serial.iterdir()}
    assert sorted(files) == ["synth_scale.json", "synth_scale.md", "synth_two.json", "synth_two.md"]
    assert {p.name: p.read_bytes() for p in parallel.iterdir()} == files


def test_jobs_below_one_is_an_error(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["--families", str(_two_families(tmp_path)), "--out", str(tmp_path / "p"), "-j", "0"])
    assert "-j 0: give 1 or more processes" in capsys.readouterr().err


# -- bad input ---------------------------------------------------------------------

KERNELS = {"start": ("k0", "k1"), "rw": ("k0",)}


@pytest.mark.parametrize("raw, field, words", [
    ({"candidate": "nope", "count": "barriers", "op": "==", "value": 0, "why": "w"}, "[0].candidate", "not a candidate"),
    ({"candidate": "rw", "kernel": "k1", "count": "barriers", "op": "==", "value": 0, "why": "w"}, "[0].kernel", "not an entry point"),
    ({"candidate": "rw", "count": "lds", "op": "==", "value": 0, "why": "w"}, "[0].count", "not an instruction class"),
    ({"candidate": "rw", "count": "barriers", "op": "=<", "value": 0, "why": "w"}, "[0].op", "'=<'"),
    ({"candidate": "rw", "count": "barriers", "op": "==", "value": "0", "why": "w"}, "[0].value", "'0'"),
    ({"candidate": "rw", "count": "barriers", "op": "==", "value": 0, "why": " "}, "[0].why", "empty"),
    ({"candidate": "rw", "count": "barriers", "op": "==", "value": 0}, "[0].why", "missing"),
    ({"candidate": "rw", "count": "barriers", "op": "==", "value": 0, "why": "w", "per": 0}, "[0].per", "0"),
    ({"candidate": "rw", "count": "loops", "op": "==", "value": 0, "why": "w", "scope": "each_loop"}, "[0].scope", "whole kernel"),
    ({"candidate": "rw", "count": "barriers", "op": "==", "value": 0, "why": "w", "extra": 1}, "[0].extra", "unknown field"),
])
def test_bad_check_names_the_field_and_the_fix(raw, field, words):
    with pytest.raises(CheckSpecError) as info:
        parse_profile_checks([raw], KERNELS)
    assert info.value.field == field and words in info.value.problem and info.value.fix


def test_bad_check_in_family_toml_is_a_family_error(tmp_path):
    fam_dir = _synth(tmp_path, '\n[[profile_checks]]\ncandidate = "rw_one"\ncount = "shared_loads"\nop = ">="\nvalue = 1\n')
    with pytest.raises(FamilyError, match=r"family.toml: field 'profile_checks\[0\]\.why': missing required field"):
        load_family(fam_dir)


def test_committed_report_describes_the_current_sources(family):
    """reports/profiles/<family>.json is committed for readers: a changed candidate or check must regenerate it."""
    import json

    from plugins.family.profiles import stale_reasons

    path = Path(__file__).resolve().parents[2] / "reports" / "profiles" / f"{family.name}.json"
    committed = json.loads(path.read_text()) if path.is_file() else None
    why = stale_reasons(family, committed)
    assert not why, (f"{path} is stale: {'; '.join(why)}. Fix: python -m plugins.family.profiles {family.name} "
                     "(rewrites that family's report whole), then commit reports/profiles/")


VERIFY_ENV = "SPARKTRACE_VERIFY_SASS"
SEED_ENV = "SPARKTRACE_VERIFY_SASS_SEED"


def verify_target(seed: str, source: str, targets: tuple[str, ...]) -> str:
    """The target a session disassembles `source` on: random per session (the seed is xdist's
    testrun_uid, the same in every worker, or SPARKTRACE_VERIFY_SASS_SEED to replay a session's
    draw, which the junit properties record), the same for every family holding that source."""
    import hashlib
    import random

    return random.Random(f"{seed}:{hashlib.sha256(source.encode()).hexdigest()}").choice(targets)


def test_a_shared_source_draws_one_target_and_every_target_is_drawn():
    """Families with byte-identical candidates share one disassembly; over sessions, each target comes up."""
    from plugins.family.compile import ARCHS

    src, other = "__global__ void k() {}\n", "__global__ void k2() {}\n"
    assert all(verify_target(f"s{i}", src, ARCHS) == verify_target(f"s{i}", src, ARCHS) for i in range(50))
    assert {verify_target(f"s{i}", src, ARCHS) for i in range(200)} == set(ARCHS)
    assert {verify_target("s", f"{src}// {i}\n", ARCHS) for i in range(200)} == set(ARCHS)  # sources draw apart
    assert any(verify_target(f"s{i}", src, ARCHS) != verify_target(f"s{i}", other, ARCHS) for i in range(50))


def test_recorded_profiles_are_what_nvdisasm_reads(family, record_property, testrun_uid):
    """The committed report serves profile_source only where it was read from the same cubin;
    this holds it to nvdisasm every session: each candidate on one target drawn at random
    (SPARKTRACE_VERIFY_SASS=all: on every target), disassembled now and compared row by row.

    The draw (verify_target) is seeded by the session and the candidate's source, so a source
    that several families share (the diagnose groups' identical prompts: 333 candidates, 239
    sources) draws the same target in all of them and is disassembled once: a cold run of this
    test alone made 239 nvdisasm runs where a draw per candidate made 312."""
    import os

    from plugins.family.binary import fresh_profile_source, nvdisasm_version
    from plugins.family.recorded import committed

    record, seed = committed(nvdisasm_version()), os.environ.get(SEED_ENV) or testrun_uid
    every = os.environ.get(VERIFY_ENV) == "all"
    compared, wrong = [], []
    record_property("sass_verify_seed", seed)
    for cand in family.all_candidates:
        for arch in (family.targets if every else (verify_target(seed, cand.source, family.targets),)):
            res = compile_source(cand.source, arch, cand.path.name)
            if not res.ok or (rec := record.lookup(arch, res.cubin)) is None:
                continue  # not served from the record: profile_source disassembles it
            compared.append(f"{cand.id}/{arch}")
            if rec != fresh_profile_source(cand.source, arch, cand.path.name):
                wrong.append(f"{cand.id} on {arch}")
    record_property("sass_verified", ",".join(compared))
    if not compared:
        pytest.skip(f"{family.name}: no row of its report matches today's binaries, so none is served from it "
                    "(test_committed_report_describes_the_current_sources says why)")
    assert not wrong, (f"reports/profiles/{family.name}.json records profiles nvdisasm does not read from the same "
                       f"cubin: {', '.join(wrong)}. Fix: python -m plugins.family.profiles {family.name}, then review the diff")


def test_a_recorded_row_is_served_only_for_its_own_cubin(tmp_path):
    """A report row keyed by a cubin's sha256 comes back equal to nvdisasm's profile; another
    target's cubin, another nvdisasm release or another profiler gets nothing from it."""
    import json

    from plugins.family.binary import fresh_profile_source, nvdisasm_version
    from plugins.family.profiles import report_texts
    from plugins.family.recorded import profiler_digest, read_record

    fam = load_family(SYNTH)
    (tmp_path / f"{fam.name}.json").write_text(report_texts(fam)[0])
    record = read_record(tmp_path, nvdisasm_version(), profiler_digest())
    cand, (a, b) = fam.all_candidates[0], fam.targets[:2]
    cubin_a = compile_source(cand.source, a, cand.path.name).cubin
    assert record.lookup(a, cubin_a) == fresh_profile_source(cand.source, a, cand.path.name)
    assert record.lookup(b, cubin_a) is None
    other = next(c for c in fam.all_candidates if c.code != cand.code)
    assert record.lookup(a, compile_source(other.source, a, other.path.name).cubin) != record.lookup(a, cubin_a)
    assert record.lookup(a, cubin_a.replace(b".text.", b".texx.", 1)) is None  # its code section renamed
    assert read_record(tmp_path, "0.0", profiler_digest()).lookup(a, cubin_a) is None
    assert read_record(tmp_path, nvdisasm_version(), "0" * 64).lookup(a, cubin_a) is None
    rep = json.loads((tmp_path / f"{fam.name}.json").read_text())
    assert rep["tools"]["profiler"] == profiler_digest() and set(rep["candidates"][cand.id]["code_sections_sha256"]) == set(fam.targets)


def test_the_code_digest_sees_the_code_and_not_the_symbol_table():
    """NVRTC's PCH can reorder .symtab/.strtab between processes (moe_permute/bulk_smem): the record's key
    must not change with them, and must change with any byte of an executable section."""
    from plugins.family.recorded import _code_sections, code_digest

    fam = load_family(SYNTH)
    cubin = bytearray(compile_source(fam.start.source, "sm_90", fam.start.path.name).cubin)
    sections = dict(_code_sections(bytes(cubin)))
    text = next(data for name, data in sections.items() if name.startswith(b".text."))
    at = bytes(cubin).index(text)
    strtab_name = bytes(cubin).index(b"\0k0\0") + 1  # the symbol k0 in .strtab (.shstrtab has ".text.k0")
    renamed = bytearray(cubin)
    renamed[strtab_name] = ord("q")
    flipped = bytearray(cubin)
    flipped[at + 8] ^= 0x01
    assert code_digest(bytes(renamed)) == code_digest(bytes(cubin))
    assert code_digest(bytes(flipped)) != code_digest(bytes(cubin))


def test_the_profiler_digest_ignores_comments_and_sees_code(tmp_path, monkeypatch):
    import plugins.family.recorded as recorded

    src = (Path(recorded.__file__).parent / "sass.py").read_text()
    digests = []
    for text in (src, src.replace("from __future__ import annotations", "# a comment\nfrom __future__ import annotations"),
                 src + "\nEXTRA = 1\n"):
        (tmp_path / "sass.py").write_text(text)
        monkeypatch.setattr(recorded, "__file__", str(tmp_path / "recorded.py"))
        recorded.profiler_digest.cache_clear()
        digests.append(recorded.profiler_digest())
    recorded.profiler_digest.cache_clear()
    assert digests[0] == digests[1] != digests[2]


def test_stale_reasons_name_what_changed():
    fam = load_family(SYNTH)
    from plugins.family.profiles import family_record, stale_reasons

    rec = json_roundtrip(family_record(fam))
    assert stale_reasons(fam, None) == ["no report"]
    assert stale_reasons(fam, rec) == []
    rec["candidates"]["rw_one"]["code_sha256"] = "0" * 64
    assert "candidate rw_one's code changed (families/synth_scale/rewrites/rw_one.cu)" in stale_reasons(fam, rec)
    del rec["candidates"]["rw_two"]["targets"]["sm_121"]
    assert "candidate rw_two lacks target sm_121" in stale_reasons(fam, rec)
    del rec["candidates"]["rw_two"]
    assert "candidate rw_two is not in it" in stale_reasons(fam, rec)


def test_a_report_from_another_binary_or_tool_is_stale():
    """Same code, other cubin (NVRTC changed) or other nvdisasm/profiler: the report must be remade."""
    from plugins.family.profiles import family_record, stale_reasons

    fam = load_family(SYNTH)
    rec = json_roundtrip(family_record(fam))
    arch = fam.targets[0]
    rec["candidates"]["rw_one"]["code_sections_sha256"][arch] = "0" * 64
    assert stale_reasons(fam, rec) == [f"candidate rw_one's cubin for {arch} is not the one it was read from "
                                       "(families/synth_scale/rewrites/rw_one.cu)"]
    rec = json_roundtrip(family_record(fam))
    rec["tools"]["profiler"] = "old"
    (why,) = stale_reasons(fam, rec)
    assert why.startswith("it was made with profiler 'old', this is ")


def test_a_comment_keeps_the_report_fresh_and_a_code_change_names_the_file(tmp_path):
    """The digest is of the comment-stripped code the prompt shows, so only a code edit is stale."""
    from plugins.family.profiles import family_record, stale_reasons

    fam_dir = _synth(tmp_path, "")
    rec = json_roundtrip(family_record(load_family(fam_dir)))
    cu = fam_dir / "rewrites" / "rw_one.cu"
    code = cu.read_text()
    cu.write_text(code.replace("out[i] = a * x[i];", "out[i] = a * x[i];  /* scale */\n    // a reader's note, not code"))
    assert stale_reasons(load_family(fam_dir), rec) == []
    cu.write_text(code.replace("a * x[i]", "x[i] * a"))
    assert stale_reasons(load_family(fam_dir), rec) == [
        "candidate rw_one's code changed (families/synth_scale/rewrites/rw_one.cu)"]


def json_roundtrip(obj):
    import json

    return json.loads(json.dumps(obj))
