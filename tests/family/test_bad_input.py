"""Bad input a new family author writes (issue 10): one error each, naming the
file, the line or field, and the fix; the other families still load."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from plugins.family import manifest
from plugins.family.cuda_source import (
    SourceError,
    blank_comments,
    check_brackets,
    kernel_signatures,
    strip_comments,
    surviving_comment_markers,
)
from plugins.family.manifest import FamilyError, discover, load_family

ROOT = Path(__file__).resolve().parents[2]
GOOD = ROOT / "tests" / "fixtures" / "families" / "gather_rows"


@pytest.fixture
def fam(tmp_path: Path) -> Path:
    d = tmp_path / "gather_rows"
    shutil.copytree(GOOD, d, ignore=shutil.ignore_patterns("measurements", "__pycache__"))
    return d


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"fixture edit: {old!r} not in {path.name}"
    path.write_text(text.replace(old, new, 1))


def error_of(d: Path) -> FamilyError:
    with pytest.raises(FamilyError) as info:
        load_family(d)
    msg = str(info.value)
    assert "Fix:" in msg and "\n" not in msg, msg
    return info.value


# --------------------------------------------------------------------------- 1. non-UTF-8 bytes


@pytest.mark.parametrize("rel", ["family.toml", "kernel.cu", "rewrites/vec4.cu", "wrong/short_by_one.cu", "reference.py"])
def test_non_utf8_byte_is_one_error_with_its_offset(fam, rel):
    path = fam / rel
    data = path.read_bytes()
    cut = data.index(b"\n", data.index(b"\n") + 1) + 1  # start of line 3
    path.write_bytes(data[:cut] + b"# caf\xe9\n" + data[cut:])
    err = error_of(fam)
    assert err.file.endswith(rel) and err.line == 3
    assert f"byte 0xE9 at byte offset {cut + 5}" in str(err) and "UTF-8" in err.fix


def test_non_utf8_family_does_not_hide_the_others(tmp_path):
    shutil.copytree(GOOD, tmp_path / "gather_rows")
    bad = tmp_path / "zz_bad"
    shutil.copytree(GOOD, bad)
    edit(bad / "family.toml", 'name = "gather_rows"', 'name = "zz_bad"')
    (bad / "kernel.cu").write_bytes((bad / "kernel.cu").read_bytes().replace(b"Gather", b"Gath\xe9r"))
    found = {d.name: d for d in discover(tmp_path)}
    assert found["gather_rows"].family is not None
    assert found["zz_bad"].family is None and "kernel.cu:1" in str(found["zz_bad"].error)


# --------------------------------------------------------------------------- 3. comments


def test_digit_separator_does_not_start_a_character_literal():
    src = "int n = 1'024; // the count\nint m = 0x7'FF; /* mask */ int k = 3;\n// the end\n"
    assert strip_comments(src) == "int n = 1'024;\nint m = 0x7'FF;   int k = 3;\n"
    assert surviving_comment_markers(src) == []


@pytest.mark.parametrize("src, kept", [
    ('const char* s = "a // b"; // gone\n', 'const char* s = "a // b";\n'),
    ("char q = '\\''; char s = '/'; // gone\n", "char q = '\\''; char s = '/';\n"),
    ('auto r = R"x(/* not a comment )" still )x"; // gone\n', 'auto r = R"x(/* not a comment )" still )x";\n'),
    ("int a = 1; // gone \\\n   still the comment\nint b = 2;\n", "int a = 1;\nint b = 2;\n"),
    ('auto w = u8"//"; auto v = L\'x\'; // gone\n', 'auto w = u8"//"; auto v = L\'x\';\n'),
])
def test_literals_and_continuations(src, kept):
    assert strip_comments(src) == kept


def test_blank_comments_keeps_offsets():
    src = "int n = 1'024; // c\n/* two\nlines */ int k;\n"
    out = blank_comments(src)
    assert len(out) == len(src) and out.count("\n") == src.count("\n") and "c" not in out.split("\n")[0][15:]
    assert out.split("\n")[2].strip() == "int k;"


def test_comment_marker_in_a_string_literal_is_named_with_its_line(fam):
    edit(fam / "rewrites" / "vec4.cu", "    const int q = C / 4;", '    const char* note = "see // here";\n    const int q = C / 4;')
    err = error_of(fam)
    assert err.file.endswith("rewrites/vec4.cu") and err.line == 7 and "'//' survives comment stripping" in str(err)


def test_stripped_code_of_a_candidate_has_no_comment(fam):
    edit(fam / "kernel.cu", "    const int r = (int)(t % R);", "    const int r = (int)(t % 1'000'000 % R); // after a separator")
    start = load_family(fam).start
    assert "after a separator" not in start.code and "1'000'000" in start.code


# --------------------------------------------------------------------------- 5. brackets


@pytest.mark.parametrize("old, new, line, words", [
    ("    if (t >= (long long)R * C) return;\n", "    if (t >= (long long)R * C) {\n", 5, "never closed"),
    ("    out[(long long)r * C + c]", "    }\n    out[(long long)r * C + c]", 12, "closes nothing"),
    ("x[(long long)idx[r] * C + c];", "x[(long long)idx[r) * C + c];", 10, "closes the '['"),
])
def test_bracket_defects_are_one_error_with_a_line(fam, old, new, line, words):
    edit(fam / "kernel.cu", old, new)
    err = error_of(fam)
    assert err.file.endswith("kernel.cu") and err.line == line and words in str(err), str(err)


def test_brackets_in_comments_strings_and_directives_do_not_count():
    check_brackets('#define OPEN {\n// }}}\nconst char* s = "((";\nvoid f() { char c = \'}\'; }\n')
    with pytest.raises(SourceError) as info:
        check_brackets("void f() {\n  g(1;\n}\n")
    assert info.value.line == 3


def test_signature_errors_carry_the_line():
    with pytest.raises(SourceError) as info:
        kernel_signatures('// one\n// two\nextern "C" __global__ void k0(float** p) {}\n')
    assert info.value.line == 3


# --------------------------------------------------------------------------- 4. words that leak speed


@pytest.mark.parametrize("field, old, new, hit", [
    ("computes", 'computes = "out[r][c]', 'computes = "The fastest way: out[r][c]', "fast"),
    ("computes", 'computes = "out[r][c]', 'computes = "In half the time, out[r][c]', "half the time"),
    ("rewrites[1].text", "Has each thread copy four", "Runs 2x quicker: has each thread copy four", "2x"),
    ("rewrites[1].text", "Has each thread copy four", "Has each thread copy four (3× less work)", "3×"),
    ("rewrites[0].text", "Maps consecutive threads", "Removes the wasteful mapping; maps consecutive threads", "waste"),
    ("rewrites[0].text", "Maps consecutive threads", "Removes the stalls; maps consecutive threads", "stall"),
    ("rewrites[2].text", "Gives each row one warp", "Gives each row one warp, twice as many loads in flight", "twice as"),
])
def test_leaking_words_in_every_shown_text(fam, field, old, new, hit):
    edit(fam / "family.toml", old, new)
    err = error_of(fam)
    assert err.field == field and hit.lower() in str(err).lower(), str(err)


@pytest.mark.parametrize("rel, old, new, bad", [
    ("kernel.cu", "void k0(", "void k0_fast(", "k0_fast"),
    ("rewrites/row_major.cu", "int R, int C)", "int R, int slowC)", "slowC"),
    ("rewrites/warp_row.cu", "const float* src", "const float* stallPtr", "stallPtr"),
])
def test_leaking_kernel_and_parameter_names(fam, rel, old, new, bad):
    edit(fam / rel, old, new)
    if "k0" in old:
        edit(fam / "family.toml", 'kernel = "k0"', 'kernel = "k0_fast"')
    if "slowC" in new:
        edit(fam / rel, "x[(long long)idx[r] * C + c]", "x[(long long)idx[r] * slowC + c]")
    err = error_of(fam)
    assert err.file.endswith(rel) and bad in str(err) and err.line is not None, str(err)


def test_leaking_buffer_name(fam):
    toml = fam / "family.toml"
    toml.write_text(toml.read_text().replace('"idx"', '"idx_fast"').replace("[buffers.idx]", "[buffers.idx_fast]"))
    err = error_of(fam)
    assert err.field == "buffers.idx_fast" and "hint at intent" in str(err)


@pytest.mark.parametrize("text", ["Launches 32x8 blocks of 256 threads.", "Stages a 32 x 32 tile; half the threads load it.",
                                  "Computes y = 2 x + 1 for n values.", "Uses float4 x; k1 unchanged."])
def test_sizes_and_plain_mechanisms_are_not_leaks(text):
    assert manifest._leaks(text) == []


def test_ratio_claims_are_leaks():
    assert manifest._leaks("Issues four times fewer loads.") == ["four times fewer"]
    assert manifest._leaks("About 30% less traffic.") == ["30% less", "traffic"] or "30% less" in manifest._leaks("About 30% less traffic.")


def test_the_word_list_is_one_file_the_docs_link_to():
    readme = (ROOT / "families" / "README.md").read_text()
    rel = manifest.LEAK_WORDS_FILE.relative_to(ROOT).as_posix()
    assert f"(../{rel})" in readme, "families/README.md must link to the word list"
    for word in ("waste", "stall", "fastest"):
        assert word in manifest.LEAK_WORDS
    assert any(p.search("2x") for p in manifest.LEAK_PATTERNS) and any(p.search("half the time") for p in manifest.LEAK_PATTERNS)
    # no second copy of the list in the code
    source = (ROOT / "plugins" / "family" / "manifest.py").read_text()
    assert '"conflict", "coalesc"' not in source


def test_existing_families_pass_the_word_list():
    found = discover(ROOT / "families")
    assert found and [str(d.error) for d in found if d.error] == []


# --------------------------------------------------------------------------- 6. reference.py


def test_reference_import_error_names_the_line(fam):
    edit(fam / "reference.py", "import numpy as np\n", "import numpy as np\nimport numpyy\n")
    err = error_of(fam)
    assert err.file.endswith("reference.py") and err.line == 3
    assert "ModuleNotFoundError" in str(err) and "numpyy" in str(err)


def test_reference_syntax_error_names_the_line(fam):
    edit(fam / "reference.py", "def naive(inputs, shape):", "def naive(inputs, shape)")
    err = error_of(fam)
    assert err.line == 19 and "SyntaxError" in str(err), str(err)


def test_reference_error_raised_in_a_helper_names_the_reference_line(fam):
    edit(fam / "reference.py", "import numpy as np\n", "import numpy as np\n\nnp.zeros(-1)\n")
    err = error_of(fam)
    assert err.line == 4 and "ValueError" in str(err), str(err)


def test_reference_sys_exit_is_an_error_not_an_exit(fam):
    edit(fam / "reference.py", "import numpy as np\n", "import numpy as np\nimport sys\nsys.exit(3)\n")
    err = error_of(fam)
    assert err.line == 4 and "SystemExit" in str(err)


# --------------------------------------------------------------------------- allow_local


def test_allow_local_is_a_candidate_field(fam):
    edit(fam / "family.toml", 'file = "rewrites/warp_row.cu"', 'file = "rewrites/warp_row.cu"\nallow_local = true')
    f = load_family(fam)
    assert [c.allow_local for c in f.rewrites] == [False, False, True, False] and not f.start.allow_local
    edit(fam / "family.toml", "allow_local = true", 'allow_local = "yes"')
    err = error_of(fam)
    assert err.field == "rewrites[2].allow_local"


def test_toml_syntax_error_names_the_line(fam):
    edit(fam / "family.toml", "[sizes.timing]", "[sizes.timing")
    err = error_of(fam)
    assert err.line is not None and re.search(rf"family.toml:{err.line}:", str(err))


# --------------------------------------------------------------------------- issue 22: files outside the family, long options


def test_symlinked_rewrite_is_one_error_naming_the_file(fam, tmp_path):
    outside = tmp_path / "elsewhere.cu"
    outside.write_text((fam / "rewrites" / "vec4.cu").read_text())
    (fam / "rewrites" / "vec4.cu").unlink()
    (fam / "rewrites" / "vec4.cu").symlink_to(outside)
    err = error_of(fam)
    assert err.file.endswith("rewrites/vec4.cu") and "symbolic link" in err.problem and "regular file" in err.fix


def test_rewrite_path_escaping_the_family_is_one_error(fam, tmp_path):
    (fam / "rewrites" / "sub").mkdir()
    edit(fam / "family.toml", 'file = "rewrites/vec4.cu"', 'file = "rewrites/../../vec4.cu"')
    (tmp_path / "vec4.cu").write_text((fam / "rewrites" / "vec4.cu").read_text())
    err = error_of(fam)
    assert err.file.endswith("family.toml") and "file" in err.field


def test_option_text_over_the_limit_is_one_error(fam):
    text = (fam / "family.toml").read_text()
    first = re.search(r'^text = "([^"]*)"', text, re.M)
    long = (first.group(1) + " ") * (manifest.MAX_OPTION_TEXT // max(len(first.group(1)), 1) + 1)
    edit(fam / "family.toml", first.group(0), f'text = "{long.strip()}"')
    err = error_of(fam)
    assert "rewrites[" in err.field and f"more than {manifest.MAX_OPTION_TEXT}" in err.problem


def test_every_committed_option_text_is_within_the_limit():
    found = discover(ROOT / "families")
    assert found and all(d.error is None for d in found), [str(d.error) for d in found if d.error]
