"""Broken families written independently of the validator (the issue 10 red team).

Each case copies tests/fixtures/families/stencil_cross (a family written from
families/README.md alone) and breaks one thing the way an author would. The
validation cases share one `discover` call; the cases only a compiler, the
emulator or a test can see share one real pytest session. Either way a broken
family gets exactly one error naming the file, the field or line, and the fix,
and the healthy families beside it still load and pass.
"""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Callable

import pytest

from plugins.family.compile import ARCHS
from plugins.family.manifest import discover
from plugins.items.build import build_items

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "tests" / "fixtures" / "families" / "stencil_cross"

Mutation = Callable[[Path], None]


def _edit(rel: str, old: str | bytes, new: str | bytes) -> Mutation:
    def apply(d: Path) -> None:
        path = d / rel
        if isinstance(old, bytes):
            data = path.read_bytes()
            assert old in data, (rel, old)
            path.write_bytes(data.replace(old, new, 1))  # type: ignore[arg-type]
        else:
            text = path.read_text()
            assert old in text, (rel, old)
            path.write_text(text.replace(old, new, 1))  # type: ignore[arg-type]
    return apply


def _all(*steps: Mutation) -> Mutation:
    def apply(d: Path) -> None:
        for step in steps:
            step(d)
    return apply


def _bom(rel: str) -> Mutation:
    return lambda d: (d / rel).write_bytes(b"\xef\xbb\xbf" + (d / rel).read_bytes())


def _cut(rel: str, start: str, end: str) -> Mutation:
    def apply(d: Path) -> None:
        text = (d / rel).read_text()
        (d / rel).write_text(text[: text.index(start)] + text[text.index(end):])
    return apply


ROW_LOOP = "rewrites/row_loop.cu"
ROW_LOOP_PLAN = 'grid = "cdiv(h, 256)"\nblock = 256\nargs = ["x", "out", "h", "w"]'
X_BUFFER = 'dtype = "float32"\ncount = "h * w"\nrole = "input"'
REF_RETURN = 'return {"out": (x + 0.25 * s).reshape(-1)}'

# name -> (mutation, file the error names, regex for ":LINE:" or "field 'X'", words in the message)
INVALID: dict[str, tuple[Mutation, str, str, str]] = {
    "tolerance_type": (_edit("family.toml", 'tolerance = { kind = "elementwise", rtol = 1e-6, atol = 1e-6 }', "tolerance = 0.5"),
                       "family.toml", r"field 'buffers\.out\.tolerance'", "a string or table"),
    "size_string": (_edit("family.toml", "h = 37 ", 'h = "37" '), "family.toml", r"field 'sizes\.gate\[0\]\.h'", "integer size"),
    "size_float": (_edit("family.toml", "w = 45", "w = 45.0"), "family.toml", r"field 'sizes\.gate\[0\]\.w'", "integer size"),
    "size_bool": (_edit("family.toml", "h = 64", "h = true"), "family.toml", r"field 'sizes\.gate\[1\]\.h'", "integer size"),
    "unknown_field": (_edit("family.toml", "tolerance =", "tolerence ="), "family.toml", r"field 'buffers\.out\.tolerence'", "unknown field"),
    "dtype": (_edit("family.toml", X_BUFFER, X_BUFFER.replace("float32", "fp32")), "family.toml", r"field 'buffers\.x\.dtype'", "not supported"),
    "pointer_dtype": (_edit("family.toml", X_BUFFER, X_BUFFER.replace("float32", "uint32")),
                      "family.toml", r"field 'start\.launch\[0\]\.args'", "is uint32 but"),
    "arg_not_a_buffer": (_edit("family.toml", ROW_LOOP_PLAN, ROW_LOOP_PLAN.replace('"out"', '"y"')),
                         "family.toml", r"field 'rewrites\[1\]\.launch\[0\]\.args'", "not a buffer"),
    "arg_count": (_edit("family.toml", ROW_LOOP_PLAN, ROW_LOOP_PLAN.replace(', "w"]', "]")),
                  "family.toml", r"field 'rewrites\[1\]\.launch\[0\]\.args'", "passes 3 arguments"),
    "grid_syntax": (_edit("family.toml", ROW_LOOP_PLAN, ROW_LOOP_PLAN.replace("cdiv(h, 256)", "cdiv(h, 256")),
                    "family.toml", r"field 'rewrites\[1\]\.launch\[0\]\.grid'", "cannot parse"),
    "grid_function": (_edit("family.toml", ROW_LOOP_PLAN, ROW_LOOP_PLAN.replace("cdiv(h, 256)", "ceil(h / 256)")),
                      "family.toml", r"field 'rewrites\[1\]\.launch\[0\]\.grid'", "function 'ceil'"),
    "grid_true_division": (_edit("family.toml", ROW_LOOP_PLAN, ROW_LOOP_PLAN.replace("cdiv(h, 256)", "h / 256 + 1")),
                           "family.toml", r"field 'rewrites\[1\]\.launch\[0\]\.grid'", "cdiv"),
    "grid_y_limit": (_edit("family.toml", "w = 8192", "w = 70000"), "family.toml", r"field 'start\.launch\[0\]\.grid'", "65535"),
    "block_zero": (_edit("family.toml", ROW_LOOP_PLAN, ROW_LOOP_PLAN.replace("block = 256", "block = 0")),
                   "family.toml", r"field 'rewrites\[1\]\.launch\[0\]\.block'", "below 1"),
    "block_too_big": (_edit("family.toml", ROW_LOOP_PLAN, ROW_LOOP_PLAN.replace("block = 256", "block = 2048")),
                      "family.toml", r"field 'rewrites\[1\]\.launch\[0\]\.block'", "1024 threads"),
    "shared_too_big": (_edit("family.toml", ROW_LOOP_PLAN, ROW_LOOP_PLAN + "\nshared_bytes = 100000"),
                       "family.toml", r"field 'rewrites\[1\]\.launch\[0\]\.shared_bytes'", "49152"),
    "int_overflow": (_edit("family.toml", "h = 8192 ", "h = 3000000000 "), "family.toml", r"field 'start\.launch\[0\]\.args'", "long long"),
    "constraint": (_edit("family.toml", 'bound = "memory"', 'bound = "memory"\nconstraints = ["w % 4 == 0"]'),
                   "family.toml", r"field 'sizes\.gate\[0\]'", "violates constraint"),
    "count_zero": (_edit("family.toml", "h = 5", "h = 0"), "family.toml", r"field 'buffers\.x\.count'", "count < 1"),
    "zero_before": (_edit("family.toml", 'id = "row_loop"', 'id = "row_loop"\nzero_before = ["nope"]'),
                    "family.toml", r"field 'rewrites\[1\]\.zero_before'", "not a buffer"),
    "allow_local_string": (_edit("family.toml", 'id = "row_loop"', 'id = "row_loop"\nallow_local = "true"'),
                           "family.toml", r"field 'rewrites\[1\]\.allow_local'", "true or false"),
    "duplicate_id": (_edit("family.toml", 'id = "row_loop"', 'id = "lanes_on_columns"'), "family.toml", r"field 'rewrites/wrong id'", "used twice"),
    "winner_missing": (_edit("family.toml", 'winner = "lanes_on_columns"', 'winner = "lanes_on_column"'),
                       "family.toml", r"field 'intended\.winner'", "not a rewrite id"),
    "three_rewrites": (_all(_cut("family.toml", '[[rewrites]]\nid = "row_loop"', '[[rewrites]]\nid = "four_columns"'),
                            lambda d: (d / ROW_LOOP).unlink()), "family.toml", r"field 'rewrites'", "exactly 4"),
    "no_wrong_entry": (_cut("family.toml", "[[wrong]]", "[intended]"), "family.toml", r"field 'wrong'", "[[wrong]]"),
    "no_wrong_dir": (lambda d: shutil.rmtree(d / "wrong"), "wrong/zero_border.cu", r"zero_border\.cu: file is missing", "wrong[0].file"),
    "rewrite_file_outside": (_edit("family.toml", 'file = "rewrites/row_loop.cu"', 'file = "../stencil_cross/rewrites/row_loop.cu"'),
                             "family.toml", r"field 'rewrites\[1\]\.file'", "not under rewrites/"),
    "undeclared_rewrite": (lambda d: shutil.copy(d / ROW_LOOP, d / "rewrites" / "row_loop_v2.cu"), "rewrites", r"rewrites: holds", "four declared"),
    "dangling_symlink": (lambda d: ((d / ROW_LOOP).unlink(), os.symlink("/nonexistent/row_loop.cu", d / ROW_LOOP)),
                         ROW_LOOP, r"row_loop\.cu: is a symbolic link", "as a regular file"),
    # a link inside the family is refused too: candidate files are regular files (issue 22)
    "inner_symlink": (lambda d: ((d / "shared").mkdir(), os.replace(d / ROW_LOOP, d / "shared" / "row_loop.cu"),
                                 os.symlink("../shared/row_loop.cu", d / ROW_LOOP)),
                      ROW_LOOP, r"row_loop\.cu: is a symbolic link", "as a regular file"),
    "name_mismatch": (_edit("family.toml", 'name = "NAME"', 'name = "stencil"'), "family.toml", r"field 'name'", "make them equal"),
    "toml_syntax": (_edit("family.toml", 'text = "Gives each', "text = Gives each"), "family.toml", r"family\.toml:53:", "not valid TOML"),
    "bom_toml": (_bom("family.toml"), "family.toml", r"family\.toml:1:", "without a BOM"),
    "bom_kernel": (_bom("kernel.cu"), "kernel.cu", r"kernel\.cu:1:", "without a BOM"),
    "latin1_rewrite": (_edit(ROW_LOOP, b"// Thread r", b"// Th\xe9read r"), ROW_LOOP, r"row_loop\.cu:1:", "not UTF-8"),
    "latin1_option_text": (_edit("family.toml", b"Gives each thread", b"Gives \xe9ach thread"), "family.toml", r"family\.toml:53:", "not UTF-8"),
    "empty_kernel": (lambda d: (d / "kernel.cu").write_text(""), "kernel.cu", r"kernel\.cu: file is empty", "start.launch"),
    "launch_bounds": (_edit(ROW_LOOP, "__global__ void k0", "__global__ void __launch_bounds__(256) k0"), ROW_LOOP, r"row_loop\.cu:2:", "__launch_bounds__"),
    "inline_asm": (_edit(ROW_LOOP, "    if (r >= h) return;", '    int q;\n    asm("mov.u32 %0, %1;" : "=r"(q) : "r"(h));\n    if (r >= q) return;'),
                   ROW_LOOP, r"row_loop\.cu:6:", "gpu_gate_only"),
    "launch_bounds_hard_unnamed": (_all(_edit("family.toml", 'bound = "memory"', 'bound = "memory"\nset = "hard"'),
                                        _edit(ROW_LOOP, "__global__ void k0", "__global__ void __launch_bounds__(256) k0")),
                                   ROW_LOOP, r"row_loop\.cu:2:", "option text does not name"),
    "not_extern_c": (_edit(ROW_LOOP, 'extern "C" __global__', "__global__"), ROW_LOOP, r"row_loop\.cu:2:", 'extern "C"'),
    "unlaunched_kernel": (_edit(ROW_LOOP, "    }\n}\n", '    }\n}\n\nextern "C" __global__ void k1(float* __restrict__ out, int h)\n{\n    if (h < 0) out[0] = 0.0f;\n}\n'),
                          ROW_LOOP, r"row_loop\.cu:16:", "defines entry point k1"),
    "missing_brace": (_edit(ROW_LOOP, "        out[r * w + c] = x[r * w + c] + 0.25f * s;\n    }\n", "        out[r * w + c] = x[r * w + c] + 0.25f * s;\n"),
                      ROW_LOOP, r"row_loop\.cu:3:", "never closed"),
    "non_const_input": (_edit(ROW_LOOP, "const float* __restrict__ x", "float* __restrict__ x"),
                        "family.toml", r"field 'rewrites\[1\]\.launch\[0\]\.args'", "non-const"),
    "size_t_parameter": (_edit(ROW_LOOP, "int h, int w)", "int h, size_t w)"), ROW_LOOP, r"row_loop\.cu:2:", "long long"),
    "leak_ratio": (_edit("family.toml", 'text = "Gives each', 'text = "Moves 1.5x the rows: gives each'), "family.toml", r"field 'rewrites\[1\]\.text'", "1.5x"),
    "leak_computes": (_edit("family.toml", 'computes = "out[r][c]', 'computes = "The fastest stencil: out[r][c]'), "family.toml", r"field 'computes'", "fastest"),
    "leak_identifier": (_edit(ROW_LOOP, "const int lf = c > 0 ? c - 1 : 0;\n        const int rt", "const int lf = c > 0 ? c - 1 : 0;\n        const int fast_rt"),
                        ROW_LOOP, r"row_loop\.cu:10:", "fast_rt"),
    "leak_param_name": (_edit("family.toml", "[buffers.x]", "[params]\nspeedup = 2\n\n[buffers.x]"), "family.toml", r"field 'params\.speedup'", "hint at intent"),
    "comment_in_string": (_edit("kernel.cu", 'extern "C"', '#define NOTE "see // the notes"\nextern "C"'), "kernel.cu", r"kernel\.cu:3:", "string literal"),
    "nested_comment": (_edit(ROW_LOOP, "// Thread r", "/* outer /* inner */ tail */\n// Thread r"), ROW_LOOP, r"row_loop\.cu:1:", "do not nest"),
    "option_on_two_lines": (_edit("family.toml", 'text = "Gives each thread one whole row,', 'text = "Gives each thread one whole row,\\n'),
                            "family.toml", r"field 'rewrites\[1\]\.text'", "one line"),
    "reference_import": (_edit("reference.py", "import numpy as np\n", "import numpy as np\nSCALE = 1 / 0\n"),
                         "reference.py", r"reference\.py:3:", "ZeroDivisionError"),
    "reference_keys": (_edit("reference.py", REF_RETURN, REF_RETURN.replace('"out"', '"y"')), "reference.py", r"reference\.py:10: field 'reference'", "lacks ['out']"),
    "reference_length": (_edit("reference.py", REF_RETURN, REF_RETURN.replace("reshape(-1)", "reshape(-1)[1:]")),
                         "reference.py", r"field 'reference'", "elements of out"),
    "reference_list": (_edit("reference.py", REF_RETURN, 'return [(x + 0.25 * s).reshape(-1)]'), "reference.py", r"field 'reference'", "returns list"),
    "reference_raises": (_edit("reference.py", 'h, w = shape["h"], shape["w"]\n    x = inputs', 'h, w = shape["rows"], shape["w"]\n    x = inputs'),
                         "reference.py", r"reference\.py:11: field 'reference'", "KeyError"),
    "inputs_dtype": (_edit("reference.py", ".astype(np.float32)}", "}"), "reference.py", r"reference\.py:5: field 'make_inputs'", "float64"),
    "inputs_key": (_edit("reference.py", 'return {"x":', 'return {"xs":'), "reference.py", r"field 'make_inputs'", "['xs']"),
    "naive_missing": (_edit("reference.py", "def naive(", "def naive_loops("), "reference.py", r"field 'naive'", "function is missing"),
}

# Healthy variants: each must load like the original.
HEALTHY: dict[str, Mutation] = {
    "stencil_cross": lambda d: None,
    "ok_crlf": lambda d: [p.write_bytes(p.read_bytes().replace(b"\n", b"\r\n")) for p in d.rglob("*") if p.is_file()] and None,
    "ok_tabs": _all(*(_edit(f, "    const int", "\tconst int") for f in ("kernel.cu", ROW_LOOP))),
    "ok_comments": _edit(ROW_LOOP, "    if (r >= h) return;",
                         "    if (r >= h || r > 2'000'000) return; // it's r's row \\\n       still the comment\n    /* a 'quoted' */"),
    "ok_droppings": lambda d: (shutil.copy(d / ROW_LOOP, d / "rewrites" / "row_loop.cu~"), (d / "wrong" / ".gitkeep").write_text(""),
                               (d / "rewrites" / ".row_loop.cu.swp").write_bytes(b"b0VIM\x00")) and None,
    "ok_hard_named_bounds": _all(_edit("family.toml", 'bound = "memory"', 'bound = "memory"\nset = "hard"'),
                                 _edit(ROW_LOOP, "__global__ void k0", "__global__ void __launch_bounds__(256) k0"),
                                 _edit("family.toml", "walked left to right in a loop.", "walked left to right in a loop, with __launch_bounds__(256).")),
    "ok_leak_word_in_comment": _edit(ROW_LOOP, "// Thread r", "// The fastest of them all? Thread r"),
}


def _make(root: Path, name: str, mutate: Mutation) -> None:
    d = root / name
    shutil.copytree(BASE, d)
    _edit("family.toml", 'name = "stencil_cross"', f'name = "{name}"')(d)
    if name == "name_mismatch":
        _edit("family.toml", f'name = "{name}"', 'name = "NAME"')(d)
    mutate(d)


@pytest.fixture(scope="module")
def redteam(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("families")
    for name, (mutate, *_rest) in INVALID.items():
        _make(root, name, mutate)
    for name, mutate in HEALTHY.items():
        _make(root, name, mutate)
    (root / "no_toml").mkdir()  # a scratch folder with a kernel and nothing else
    (root / "no_toml" / "kernel.cu").write_text("// todo\n")
    shutil.copytree(BASE, root / "_draft")  # ignored: starts with _
    _edit("family.toml", 'h = 37 ', 'h = "37" ')(root / "_draft")
    return {d.name: d for d in discover(root)}


@pytest.mark.parametrize("name", sorted(INVALID))
def test_broken_family_is_one_clear_error(redteam, name):
    _mutate, file_part, where, words = INVALID[name]
    d = redteam[name]
    assert d.family is None and d.error is not None, f"{name} loaded"
    msg = str(d.error)
    assert f"{name}/{file_part}" in msg, msg
    assert re.search(where, msg), (where, msg)
    assert words in msg and "Fix: " in msg, msg
    assert "Traceback" not in msg and "validator should have named" not in msg, msg


def test_a_folder_without_family_toml_is_named(redteam):
    assert "no_toml/family.toml: file is missing" in str(redteam["no_toml"].error)


@pytest.mark.parametrize("name", sorted(HEALTHY))
def test_healthy_families_beside_them_load(redteam, name):
    d = redteam[name]
    assert d.error is None, str(d.error)
    assert [r.id for r in d.family.rewrites] == ["lanes_on_columns", "row_loop", "four_columns", "ldg_wide_blocks"]
    assert "\r" not in d.family.rewrites[1].code and "//" not in d.family.rewrites[1].code


def test_underscore_folders_are_ignored(redteam):
    assert "_draft" not in redteam


# --------------------------------------------------------------------------- one real session

LOCAL_ARRAY = '''// Each thread stages its row in a per-thread array first.
extern "C" __global__ void k0(const float* __restrict__ x, float* __restrict__ out, int h, int w)
{
    float buf[2048];
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= h) return;
    const int up = r > 0 ? r - 1 : 0;
    const int dn = r < h - 1 ? r + 1 : h - 1;
    for (int c = 0; c < w; ++c) buf[(c * 7 + r) & 2047] = x[r * w + c];
    for (int c = 0; c < w; ++c) {
        const int lf = c > 0 ? c - 1 : 0;
        const int rt = c < w - 1 ? c + 1 : w - 1;
        const float s = (x[up * w + c] + x[dn * w + c]) + (x[r * w + lf] + x[r * w + rt]);
        out[r * w + c] = buf[(c * 7 + r) & 2047] + 0.25f * s;
    }
}
'''

# Defects only a compiler, the emulator or a test sees, plus two that once broke whole sessions.
LATE: dict[str, tuple[Mutation, str, str, str]] = {
    "size_string": INVALID["size_string"],  # was an INTERNALERROR: no family collected
    "reference_raises": INVALID["reference_raises"],  # was eight KeyError tracebacks
    "syntax_deep": (_edit(ROW_LOOP, "0.25f * s;\n    }", "0.25f * s\n    }"), ROW_LOOP, r"row_loop\.cu:13:", f"does not compile for {ARCHS[0]}"),
    "local_memory": (lambda d: (d / ROW_LOOP).write_text(LOCAL_ARRAY), ROW_LOOP, r"\[rewrites\[1\]\]", "uses local memory"),
    "rewrite_wrong": (_edit(ROW_LOOP, "0.25f * s;", "0.26f * s;"), ROW_LOOP, r"\[h=37, w=45", "failed the emulated gate"),
    "divergent_barrier": (_edit("rewrites/lanes_on_columns.cu", "    out[r * w + c]", "    __syncthreads();\n    out[r * w + c]"),
                          "rewrites/lanes_on_columns.cu", r"kernel k0", "__syncthreads"),
    "wrong_passes": (lambda d: shutil.copy(d / "rewrites" / "lanes_on_columns.cu", d / "wrong" / "zero_border.cu"),
                     "wrong/zero_border.cu", r"zero_border\.cu: the deliberately wrong variant passed", "Fix: "),
    "naive_disagrees": (_edit("reference.py", "out[r * w + c] = x[r * w + c] + 0.25 * s", "out[r * w + c] = x[r * w + c] + 0.5 * s"),
                        "reference.py", r"reference\.py: reference and naive disagree", "Fix: "),
    "timing_too_small": (_edit("family.toml", "h = 8192 ", "h = 64 "), "family.toml", r"field 'sizes\.timing'", "4x the L2"),
}
TESTS = ("family/test_families.py", "gate/test_gate_emulated.py")


def test_late_defects_are_one_failure_each_in_a_real_run(project):
    pytester = project
    for rel in TESTS:
        (pytester.path / "tests" / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / "tests" / rel, pytester.path / "tests" / rel)
    fams = pytester.path / "families"
    shutil.copytree(BASE, fams / "stencil_cross")
    for name, (mutate, *_rest) in LATE.items():
        _make(fams, name, mutate)

    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist", "-rfE", "--resources-out=r.json", timeout=900)
    out = result.stdout.str()
    assert "INTERNALERROR" not in out and "Traceback" not in out, out[-3000:]
    assert re.findall(r"^ERROR (\S+)", out, re.M) == []
    by_family: dict[str, list[str]] = {}
    for nodeid in re.findall(r"^FAILED (\S+)", out, re.M):
        by_family.setdefault(nodeid.split("[", 1)[1].split("/")[0].split("]")[0], []).append(nodeid)
    assert "stencil_cross" not in by_family, by_family["stencil_cross"]
    for name, (_m, file_part, where, words) in LATE.items():
        assert len(by_family.get(name, [])) == 1, (name, by_family.get(name))
        msg = out.split(f"[{name}", 1)[1].split("\n_____", 1)[0].split("\n", 1)[1]
        assert f"{name}/{file_part}" in msg, (name, msg)
        assert re.search(where, msg), (name, where, msg)
        assert words in msg and "Fix:" in msg, (name, msg)
    assert result.parseoutcomes()["failed"] == len(LATE)
    # the healthy family ran everything: valid, 6 candidates x 3 targets, entry points, the gate
    passed = re.findall(r"(\d+) passed", out)
    assert passed and int(passed[-1]) >= 1 + 18 + 6 + 6

    # and it yields its two source items (no GPU has measured it, no slip)
    good = pytester.path / "good"
    shutil.copytree(BASE, good / "stencil_cross")
    items, _notes = build_items(good, "h200", allow_intended=True, slips_root=pytester.path / "slips")
    assert sorted(it.id for it in items) == ["stencil_cross/source/forward", "stencil_cross/source/mirror"]
