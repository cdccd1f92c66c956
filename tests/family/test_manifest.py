"""Malformed families: each gets one clear error naming the file, the field and the fix."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from plugins.family.manifest import FamilyError, discover, load_family, selected_sets
from plugins.family.plan import ExprError, evaluate

EXAMPLE = Path(__file__).resolve().parents[2] / "families" / "clamp_smem"


@pytest.fixture
def fam_dir(tmp_path: Path) -> Path:
    d = tmp_path / "clamp_smem"
    shutil.copytree(EXAMPLE, d, ignore=shutil.ignore_patterns("measurements", "__pycache__"))
    return d


def edit(path: Path, old: str, new: str, count: int = 1) -> None:
    text = path.read_text()
    assert old in text, f"fixture edit: {old!r} not in {path.name}"
    path.write_text(text.replace(old, new, count))


def error_of(d: Path) -> FamilyError:
    with pytest.raises(FamilyError) as info:
        load_family(d)
    return info.value


def test_example_family_loads():
    fam = load_family(EXAMPLE)
    assert [c.id for c in fam.rewrites] == ["wide_tile", "tile_once", "warp_sync", "registers"]
    assert fam.intended_winner == "registers"
    assert "//" not in fam.start.code


@pytest.mark.parametrize(
    "mutate, file_part, field_part, words",
    [
        (lambda d: (d / "kernel.cu").unlink(), "kernel.cu", "", "missing"),
        (lambda d: (d / "reference.py").unlink(), "reference.py", "", "missing"),
        (lambda d: (d / "rewrites" / "registers.cu").unlink(), "registers.cu", "", "missing"),
        (lambda d: edit(d / "family.toml", 'bound = "memory"', 'bound = "memory"\ncolour = "red"'), "family.toml", "colour", "unknown field"),
        (lambda d: edit(d / "family.toml", 'computes = "', 'computed = "'), "family.toml", "computed", "unknown field"),
        (lambda d: edit(d / "family.toml", 'bound = "memory"\n', ""), "family.toml", "bound", "missing required"),
        (lambda d: edit(d / "family.toml", '[[rewrites.launch]]\nkernel = "k0"', '[[rewrites.launch]]\nkernel = "k9"'), "family.toml", "rewrites[0].launch[0].kernel", "does not define"),
        (lambda d: edit(d / "family.toml", 'args = ["x", "out", "n", "lo", "hi"]', 'args = ["x", "out", "n", "lo"]'), "family.toml", "start.launch[0].args", "takes 5"),
        (lambda d: edit(d / "family.toml", 'args = ["x", "out", "n", "lo", "hi"]', 'args = ["x", "out", "lo", "n", "hi"]'), "family.toml", "start.launch[0].args", "integer parameter"),
        (lambda d: edit(d / "family.toml", 'args = ["x", "out", "n", "lo", "hi"]', 'args = ["out", "x", "n", "lo", "hi"]'), "family.toml", "start.launch[0].args", "non-const"),
        (lambda d: edit(d / "family.toml", '[[rewrites]]\nid = "warp_sync"', '[[unused]]\nid = "warp_sync"'), "family.toml", "unused", "unknown field"),
        (lambda d: edit(d / "family.toml", 'text = "Declares the tile', 'text = "Faster: declares the tile'), "family.toml", "rewrites[0].text", "speed"),
        (lambda d: edit(d / "family.toml", 'grid = "cdiv(n, 1024)"', 'grid = "cdiv(m, 1024)"'), "family.toml", "start.launch[0]", "unknown name"),
        (lambda d: edit(d / "family.toml", "block = [32, 32]", "block = [64, 32]"), "family.toml", "start.launch[0].block", "1024 threads"),
        (lambda d: edit(d / "family.toml", 'dtype = "float32"', 'dtype = "uint32"'), "family.toml", "start.launch[0].args", "is uint32 but"),
        (lambda d: edit(d / "family.toml", 'winner = "registers"', 'winner = "register"'), "family.toml", "intended.winner", "not a rewrite id"),
        (lambda d: edit(d / "family.toml", 'name = "clamp_smem"', 'name = "clamp"'), "family.toml", "name", "directory"),
        (lambda d: edit(d / "family.toml", 'bound = "memory"', 'bound = "memory"\nconstraints = ["n % 7 == 0"]'), "family.toml", "sizes.timing[0]", "constraint"),
        (lambda d: edit(d / "family.toml", "[sizes.timing]", "[sizes.timing\n"), "family.toml", "", "not valid TOML"),
        (lambda d: edit(d / "family.toml", 'tolerance = "exact"', 'tolerance = "roughly"'), "family.toml", "buffers.out.tolerance.kind", "roughly"),
        (lambda d: edit(d / "rewrites" / "registers.cu", "const long long g", "const long long fast_g", 1), "registers.cu", "", "hint at intent"),
        (lambda d: (d / "rewrites" / "extra.cu").write_text((d / "kernel.cu").read_text()), "rewrites", "", "exactly the four"),
        (lambda d: edit(d / "reference.py", "def naive", "def naive_loop"), "reference.py", "naive", "missing"),
        (lambda d: edit(d / "reference.py", "import numpy as np", "import numpy as np\nraise RuntimeError('boom')"), "reference.py", "", "import failed"),
    ],
    ids=[
        "missing-kernel", "missing-reference", "missing-rewrite-file", "unknown-top-field", "misspelt-field",
        "missing-field", "undefined-kernel", "too-few-args", "scalar-type-mismatch", "input-written",
        "three-rewrites", "leaky-option-text", "unknown-size-name", "block-too-large", "dtype-mismatch",
        "bad-winner", "name-mismatch", "constraint-violated", "bad-toml", "bad-tolerance", "leaky-identifier",
        "fifth-rewrite-file", "reference-missing-function", "reference-import-error",
    ],
)
def test_broken_family_gets_one_clear_error(fam_dir, mutate, file_part, field_part, words):
    mutate(fam_dir)
    err = error_of(fam_dir)
    msg = str(err)
    assert file_part in err.file, msg
    assert field_part in err.field, msg
    assert words in msg, msg
    assert "Fix:" in msg and "Traceback" not in msg
    assert msg.count("\n") == 0, "one line"


def test_four_rewrites_required(fam_dir):
    toml = fam_dir / "family.toml"
    text = toml.read_text()
    start = text.index('[[rewrites]]\nid = "warp_sync"')
    end = text.index('[[rewrites]]\nid = "registers"')
    toml.write_text(text[:start] + text[end:])
    (fam_dir / "rewrites" / "warp_sync.cu").unlink()
    err = error_of(fam_dir)
    assert err.field == "rewrites" and "declares 3 rewrites" in str(err)


def test_discover_isolates_bad_families(tmp_path):
    good = tmp_path / "clamp_smem"
    shutil.copytree(EXAMPLE, good, ignore=shutil.ignore_patterns("measurements", "__pycache__"))
    bad = tmp_path / "zz_broken"
    shutil.copytree(EXAMPLE, bad, ignore=shutil.ignore_patterns("measurements", "__pycache__"))
    (bad / "kernel.cu").unlink()
    found = {d.name: d for d in discover(tmp_path)}
    assert found["clamp_smem"].family is not None and found["clamp_smem"].error is None
    assert found["zz_broken"].family is None and "kernel.cu" in str(found["zz_broken"].error)


def test_broken_family_is_one_failure_and_hides_nothing(project, tmp_path):
    """In a real pytest run: one failing case per broken family, the good one fully tested."""
    pytester, root = project, Path(__file__).resolve().parents[2]
    shutil.copy(root / "tests" / "family" / "test_families.py", pytester.path / "tests" / "test_families.py")
    fams = pytester.path / "families"
    shutil.copytree(EXAMPLE, fams / "clamp_smem", ignore=shutil.ignore_patterns("measurements", "__pycache__"))
    shutil.copytree(EXAMPLE, fams / "broken_a", ignore=shutil.ignore_patterns("measurements", "__pycache__"))
    edit(fams / "broken_a" / "family.toml", 'name = "clamp_smem"', 'name = "broken_a"')
    edit(fams / "broken_a" / "family.toml", 'kernel = "k0"', 'kernel = "k7"')
    (fams / "broken_b").mkdir()
    (fams / "broken_b" / "family.toml").write_text('name = "broken_b"\n')
    result = pytester.runpytest_subprocess("tests/test_families.py", "-p", "no:cacheprovider", "--resources-out", str(tmp_path / "r.json"))
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed") == 2, result.stdout.str()
    result.stdout.fnmatch_lines([
        "*test_family_is_valid?broken_a?*",
        "*kernel 'k7'*does not define*Fix:*",
        "*test_family_is_valid?broken_b?*",
        "*broken_b/kernel.cu: file is missing*",
    ])
    assert "Traceback" not in result.stdout.str()
    assert outcomes.get("passed", 0) >= 20  # the good family's compile/reference cases all ran


@pytest.mark.parametrize("expr, want", [("cdiv(10, 4)", 3), ("4 * sm_count", 528), ("min(n, 7) + 1", 8), ("n % 4 == 0", 1)])
def test_expressions(expr, want):
    assert evaluate(expr, {"n": 100, "sm_count": 132}) == want


@pytest.mark.parametrize("expr", ["__import__('os')", "n.real", "[n]", "lambda: 1", "open('x')"])
def test_expressions_cannot_run_code(expr):
    with pytest.raises(ExprError):
        evaluate(expr, {"n": 1})


def test_leak_words_documented():
    readme = (Path(__file__).resolve().parents[2] / "families" / "README.md").read_text()
    assert re.search(r"word list", readme)


def test_set_selection_filters_families_and_keeps_broken_ones(tmp_path):
    """--set picks families by their `set` field; a family whose set cannot be read stays in every selection."""
    for name, fam_set in (("clamp_smem", None), ("hard_one", "hard")):
        d = tmp_path / name
        shutil.copytree(EXAMPLE, d, ignore=shutil.ignore_patterns("measurements", "__pycache__"))
        edit(d / "family.toml", 'name = "clamp_smem"', f'name = "{name}"' + (f'\nset = "{fam_set}"' if fam_set else ""))
    broken = tmp_path / "zz_broken"
    broken.mkdir()
    (broken / "family.toml").write_text("not toml [")
    names = lambda sets: [d.name for d in discover(tmp_path, sets)]
    assert names(selected_sets("classic")) == ["clamp_smem", "zz_broken"]
    assert names(selected_sets("hard")) == ["hard_one", "zz_broken"]
    assert names(selected_sets("all")) == ["clamp_smem", "hard_one", "zz_broken"]
    assert load_family(tmp_path / "hard_one").set == "hard" and load_family(tmp_path / "clamp_smem").set == "classic"
    with pytest.raises(ValueError, match="--set 'easy'"):
        selected_sets("easy")
    edit(tmp_path / "hard_one" / "family.toml", 'set = "hard"', 'set = "medium"')
    err = error_of(tmp_path / "hard_one")
    assert err.field == "set" and "medium" in str(err)


def test_an_unchanged_family_is_validated_once_and_any_change_is_seen(fam_dir):
    """load_family keeps what it validated per directory and contents: the catalog and the items
    stage read the same families in one session. An edit that keeps the file's size and its
    mtime (one clock tick) must still give the new family, and a broken family reports on every load."""
    import os

    toml = fam_dir / "family.toml"

    def edit_in_place(old: str, new: str) -> None:
        st = toml.stat()
        edit(toml, old, new)
        assert toml.stat().st_size == st.st_size
        os.utime(toml, ns=(st.st_atime_ns, st.st_mtime_ns))

    first = load_family(fam_dir)
    assert load_family(fam_dir) is first
    edit_in_place('winner = "registers"', 'winner = "tile_once"')
    assert load_family(fam_dir).intended_winner == "tile_once"
    edit_in_place('winner = "tile_once"', 'winner = "tile_onc3"')
    assert "not a rewrite id" in str(error_of(fam_dir))
    edit_in_place('winner = "tile_onc3"', 'winner = "registers"')
    again = load_family(fam_dir)
    assert again == first and again is not first  # validated afresh, equal to the first
    (fam_dir / "rewrites" / "notes.txt").symlink_to(fam_dir / "kernel.cu")  # a new entry, never opened
    assert load_family(fam_dir) is not again
