"""Many broken families in one real run (issue 10): each gets exactly one failing
test whose message names the file, the line or field, and the fix; the good
families beside them collect and pass every check."""
from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Callable

from plugins.family.compile import ARCHS

ROOT = Path(__file__).resolve().parents[2]
GOOD = ROOT / "tests" / "fixtures" / "families" / "gather_rows"
TESTS = ("family/test_families.py", "gate/test_gate_emulated.py")

LOCAL_ARRAY_BODY = """{
    float buf[2048];
    const int r = blockIdx.x * 8 + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (r >= R) return;
    int k = 0;
    for (int c = lane; c < C && k < 2048; c += 32) buf[k++] = x[(long long)idx[r] * C + c];
    __syncwarp();
    k = 0;
    for (int c = lane; c < C && k < 2048; c += 32) out[(long long)r * C + c] = buf[k++];
}
"""


def _edit(rel: str, old: str, new: str) -> Callable[[Path], None]:
    def apply(d: Path) -> None:
        path = d / rel
        text = path.read_text()
        assert old in text, (rel, old)
        path.write_text(text.replace(old, new, 1))
    return apply


def _byte(rel: str) -> Callable[[Path], None]:
    def apply(d: Path) -> None:
        path = d / rel
        data = path.read_bytes()
        cut = data.index(b"\n") + 1
        path.write_bytes(data[:cut] + b"# caf\xe9\n" + data[cut:])  # line 2: a Latin-1 byte
    return apply


def _local_array(d: Path) -> None:
    path = d / "rewrites" / "warp_row.cu"
    text = path.read_text()
    path.write_text(text[: text.index("{")] + LOCAL_ARRAY_BODY)


# name -> (mutation, file the error names, where: a regex for ":LINE:" or "field 'X'" or "[X]", words)
BROKEN: dict[str, tuple[Callable[[Path], None], str, str, str]] = {
    "utf8_toml": (_byte("family.toml"), "family.toml", r"family\.toml:2:", "is not UTF-8"),
    "utf8_kernel": (_byte("kernel.cu"), "kernel.cu", r"kernel\.cu:2:", "is not UTF-8"),
    "utf8_rewrite": (_byte("rewrites/vec4.cu"), "rewrites/vec4.cu", r"vec4\.cu:2:", "is not UTF-8"),
    "utf8_wrong": (_byte("wrong/short_by_one.cu"), "wrong/short_by_one.cu", r"short_by_one\.cu:2:", "is not UTF-8"),
    "utf8_reference": (_byte("reference.py"), "reference.py", r"reference\.py:2:", "is not UTF-8"),
    "missing_brace": (_edit("kernel.cu", "    out[(long long)r * C + c] = x[(long long)idx[r] * C + c];\n}\n",
                            "    out[(long long)r * C + c] = x[(long long)idx[r] * C + c];\n"),
                      "kernel.cu", r"kernel\.cu:5:", "never closed"),
    "extra_paren": (_edit("rewrites/row_major.cu", "(int)(t / C);", "(int)(t / C));"), "rewrites/row_major.cu",
                    r"row_major\.cu:7:", "closes the '{' opened on line 4"),
    "compile_error": (_edit("rewrites/row_major.cu", "out[(long long)r * C + c] =", "out[(long long)r * C + cc] ="),
                      "rewrites/row_major.cu", r"row_major\.cu:9:", f"does not compile for {ARCHS[0]}"),
    "reference_import": (_edit("reference.py", "import numpy as np\n", "import numpy as np\nimport numpyy\n"),
                         "reference.py", r"reference\.py:3:", "ModuleNotFoundError"),
    "local_memory": (_local_array, "rewrites/warp_row.cu", r"\[rewrites\[2\]\]", "uses local memory"),
    "comment_in_string": (_edit("rewrites/vec4.cu", "    const int q = C / 4;", '    const char* s = "a // b"; (void)s;\n    const int q = C / 4;'),
                          "rewrites/vec4.cu", r"vec4\.cu:7:", "survives comment stripping"),
    "leak_computes": (_edit("family.toml", 'computes = "out[r][c]', 'computes = "Fastest gather: out[r][c]'),
                      "family.toml", r"field 'computes'", "speed"),
    "leak_ratio": (_edit("family.toml", "Has each thread copy four", "Moves 4x the bytes per thread: has each thread copy four"),
                   "family.toml", r"field 'rewrites\[1\]\.text'", "4x"),
    "leak_kernel_name": (_edit("rewrites/row_major.cu", "int R, int C)", "int R, int C_wasteful)"),
                         "rewrites/row_major.cu", r"row_major\.cu:3:", "hint at intent"),
    "toml_syntax": (_edit("family.toml", "[sizes.timing]", "[sizes.timing"), "family.toml", r"family\.toml:\d+:", "not valid TOML"),
    "missing_rewrite": (lambda d: (d / "rewrites" / "vec4.cu").unlink(), "rewrites/vec4.cu", r"vec4\.cu: file is missing", "rewrites[1].file"),
    "bad_pointer_type": (_edit("kernel.cu", "const int* __restrict__ idx", "const unsigned int* __restrict__ idx"),
                         "family.toml", r"field 'start\.launch\[0\]\.args'", "is int32 but"),
    "wrong_passes": (lambda d: shutil.copy(d / "rewrites" / "row_major.cu", d / "wrong" / "short_by_one.cu"),
                     "wrong/short_by_one.cu", r"short_by_one\.cu: the deliberately wrong variant passed", "its defect"),
}

# Good: comments after a digit separator, a raw string, a continued // comment; none may survive or fail.
SEPARATORS = """// Row-major mapping with a digit separator and awkward comments.
extern "C" __global__ void k0(const float* __restrict__ x, const int* __restrict__ idx,
                              float* __restrict__ out, int R, int C)
{
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; // it's t
    if (t >= (long long)R * C || t > 2'000'000'000LL) return; // a 'quoted' bound
    const int r = (int)(t / C); /* the row: it's */
    const int c = (int)(t % C); // continued \\
       comment line
    out[(long long)r * C + c] = x[(long long)idx[r] * C + c];
}
"""


def test_each_broken_family_is_one_clear_failure(project):
    pytester = project
    for rel in TESTS:
        (pytester.path / "tests" / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / "tests" / rel, pytester.path / "tests" / rel)
    fams = pytester.path / "families"
    shutil.copytree(GOOD, fams / "gather_rows")
    shutil.copytree(GOOD, fams / "good_separators")
    _edit("family.toml", 'name = "gather_rows"', 'name = "good_separators"')(fams / "good_separators")
    (fams / "good_separators" / "rewrites" / "row_major.cu").write_text(SEPARATORS)
    for name, (mutate, *_rest) in BROKEN.items():
        d = fams / name
        shutil.copytree(GOOD, d)
        _edit("family.toml", 'name = "gather_rows"', f'name = "{name}"')(d)
        mutate(d)

    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist", "-rfE", "--resources-out=r.json", timeout=900)
    out = result.stdout.str()
    assert "INTERNALERROR" not in out and "Traceback" not in out, out[-3000:]
    failed = re.findall(r"^FAILED (\S+)", out, re.M)
    errors = re.findall(r"^ERROR (\S+)", out, re.M)
    assert errors == [], errors
    by_family: dict[str, list[str]] = {}
    for nodeid in failed:
        fam = nodeid.split("[", 1)[1].split("/")[0].split("]")[0]
        by_family.setdefault(fam, []).append(nodeid)
    assert "gather_rows" not in by_family and "good_separators" not in by_family, by_family
    for name, (_m, file_part, where, words) in BROKEN.items():
        assert len(by_family.get(name, [])) == 1, (name, by_family.get(name))
        section = out.split(f"[{name}", 1)[1].split("\n_____", 1)[0]
        msg = section.split("\n", 1)[1]
        assert f"{name}/{file_part}" in msg or f"{name}/{Path(file_part).name}" in msg, (name, msg)
        assert re.search(where, msg), (name, where, msg)
        assert words in msg and "Fix:" in msg, (name, msg)
    # the good families ran everything: 6 candidates x 3 targets, entry points, the gate
    for good in ("gather_rows", "good_separators"):
        assert len(re.findall(rf"test_compiles\[{good}/", out)) == 0  # no failure line names them
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] == len(BROKEN)
    assert outcomes["passed"] >= 2 * (1 + 18 + 6 + 6)
