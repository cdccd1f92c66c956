"""Prompts: what a model reads, for every family on disk and the synthetic one."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from plugins.items.build import LETTERS, ORDERS
from plugins.items.keys import load_stand_in
from plugins.family.manifest import load_family
from plugins.items.slip import CONFLICT_WORDS
from plugins.items.prompt import (
    TEMPLATE_PATH,
    Gpu,
    PromptError,
    check_template,
    gpu_of_record,
    option_order,
    render_prompt,
)

ROOT = Path(__file__).resolve().parents[2]
SYNTH = Path(__file__).parents[1] / "fixtures" / "items" / "synth_scale"
GPU = load_stand_in().gpu  # the dry run's device, prompts/stand-in-gpu.toml
# A number followed by a time unit, e.g. "0.621 ms", "980us", "3 µs".
RUNTIME = re.compile(r"\d(?:[\d,]*\.?\d*)\s*(?:ms|µs|us|ns|msec|usec|seconds?|secs?)\b", re.IGNORECASE)
ENDING = "end with one line and nothing after it: Answer: A, Answer: B, Answer: C or Answer: D.\n"


def outside_slip(prompt: str) -> str:
    """The prompt without the slip block (ncu's own text may carry URLs and units)."""
    return re.sub(r"## Nsight Compute report.*?```text\n.*?```\n\n?", "", prompt, flags=re.S)


def leak_problems(fam, prompt: str, slip: str | None = None) -> list[str]:
    """Everything a prompt must never show, as readable problems."""
    problems = []
    body = outside_slip(prompt)
    for marker in ("//", "/*", "*/"):
        if marker in body:
            problems.append(f"comment marker {marker!r}")
    if RUNTIME.search(body):
        problems.append(f"runtime-looking text {RUNTIME.search(body).group(0)!r}")
    if fam.intended_reasoning and fam.intended_reasoning in prompt:
        problems.append("the intended reasoning")
    for sentence in re.split(r"(?<=[.!?])\s+", fam.intended_reasoning):
        if len(sentence) > 30 and sentence in prompt:
            problems.append(f"a sentence of the intended reasoning: {sentence!r}")
    if re.search(r"\bintended\b|\bwinner\b", prompt, re.IGNORECASE):
        problems.append("the word intended/winner")
    # an id may appear only where the authored text shown to the model has it
    shown = [fam.computes, fam.start.code, *(c.text for c in fam.rewrites), *(c.code for c in fam.rewrites),
             " ".join(a for c in fam.candidates for ln in c.launches for a in (ln.kernel, *ln.args, *map(str, ln.grid), *map(str, ln.block), str(ln.shared_bytes))),
             " ".join(b.name + " " + str(b.count) for b in fam.buffers), slip or ""]
    for c in (*fam.rewrites, *fam.wrong):
        word = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(c.id)}(?![A-Za-z0-9_])", re.IGNORECASE)
        if len(word.findall(prompt)) > sum(len(word.findall(s)) for s in shown):
            problems.append(f"rewrite id {c.id!r}")
        if c.path.name in prompt:
            problems.append(f"file name {c.path.name!r}")
    return problems


@pytest.mark.parametrize("order", ORDERS)
def test_source_prompt_of_every_family_is_clean(family, order):
    prompt = render_prompt(family, order, GPU)
    assert leak_problems(family, prompt) == []
    assert "Nsight Compute" not in prompt
    assert prompt.endswith(ENDING)
    positions = [prompt.index(f"### Option {x}\n\n{c.text}\n") for x, c in zip(LETTERS, option_order(family, order))]
    assert positions == sorted(positions)


def test_every_renderable_prompt_is_clean(prompt_case, pytestconfig):
    """Source prompts of every family, and full/no-conflicts ones wherever a slip was captured."""
    fam = load_family(Path(pytestconfig.rootpath, pytestconfig.getoption("families_root")) / prompt_case.family)
    slip = None
    if prompt_case.condition != "source":
        slip = prompt_case.prompt.split("```text\n")[-1].split("```\n")[0]
        assert slip.startswith("Kernel launch 1 of ")
        if prompt_case.condition == "no-conflicts":
            assert not CONFLICT_WORDS.search(slip)
    assert leak_problems(fam, prompt_case.prompt, slip) == []
    assert prompt_case.prompt.endswith(ENDING)


def test_synthetic_prompt_strips_comments_and_shows_plans():
    fam = load_family(SYNTH)
    prompt = render_prompt(fam, "forward", GPU)
    assert leak_problems(fam, prompt) == []
    for gone in ("SYNTHETIC TEST KERNEL", "copy first", "loop marker comment", "scales in place", "SYNTHETIC INTENDED"):
        assert gone not in prompt
    assert "k0<<<4096, 256, 0>>>(x, out, n)\n    grid  = cdiv(n, 256) = 4096\n    block = 256\n" in prompt
    assert "k1<<<528, (128, 2), 0>>>(out, n, a)\n    grid  = sm_count * 4 = 528\n    block = (128, 2)\n" in prompt
    assert "dynamic shared memory = 256 * 4 = 1024 bytes" in prompt
    assert "- sizes: n = 1048576\n- scalar parameters: a = 2.0\n- x: float32 input, n = 1048576 elements (4194304 bytes)" in prompt
    assert "Target GPU: NVIDIA H200 (132 SMs, compute capability 9.0)" in prompt
    assert "What it computes: Synthetic test family: out[i] = a * x[i] for n fp32 values." in prompt
    assert "- out: float32 output, n / 1 = 1048576 elements" in prompt  # family.toml says n // 1
    assert "sm_count * 8 = 1056" in prompt
    assert "sm_count * 8 = 384" in render_prompt(fam, "forward", Gpu("NVIDIA GB10", 48, "12.1"))


def test_mirror_reverses_the_options():
    fam = load_family(SYNTH)
    fwd, mir = render_prompt(fam, "forward", GPU), render_prompt(fam, "mirror", GPU)
    texts = [c.text for c in fam.rewrites]
    for x, t in zip(LETTERS, texts):
        assert f"### Option {x}\n\n{t}\n" in fwd
    for x, t in zip(LETTERS, reversed(texts)):
        assert f"### Option {x}\n\n{t}\n" in mir
    with pytest.raises(PromptError, match="order"):
        option_order(fam, "sideways")


def test_slip_block_only_with_a_slip():
    fam = load_family(SYNTH)
    slip = "Kernel launch 1 of 1: k0\n  Section: Occupancy\n"
    with_slip = render_prompt(fam, "forward", GPU, slip)
    assert "## Nsight Compute report of the starting kernel" in with_slip
    assert f"```text\n{slip}```\n" in with_slip
    assert with_slip.index("Nsight Compute report") > with_slip.index("### Option D")
    assert with_slip.endswith(ENDING)
    assert "[[" not in with_slip and "[[" not in render_prompt(fam, "forward", GPU)
    assert outside_slip(with_slip) == render_prompt(fam, "forward", GPU)


def test_template_placeholders_are_checked():
    text = TEMPLATE_PATH.read_text()
    assert check_template(text) == text
    with pytest.raises(PromptError, match=r"unknown \['runtime'\]"):
        check_template(text + "$runtime")
    with pytest.raises(PromptError, match=r"missing \['option_D_code'\]"):
        check_template(text.replace("$option_D_code", ""))
    with pytest.raises(PromptError, match="if slip"):
        check_template(text.replace("[[if slip]]", ""))


def test_gpu_from_record_or_none():
    rec = {"gpu": {"name": "NVIDIA H200", "sm_count": 132, "compute_capability": "9.0"}}
    assert gpu_of_record(rec) == Gpu("NVIDIA H200", 132, "9.0")
    assert gpu_of_record(rec).label == "NVIDIA H200 (132 SMs, compute capability 9.0)"  # the dry run's line
    assert gpu_of_record({"gpu": {"slug": "h200"}}) is None and gpu_of_record(None) is None
    odd = {"gpu": {"name": "NVIDIA X", "sm_count": 10, "compute_capability": "unavailable: no driver",
                   "l2_bytes": "unavailable: no driver", "mem_clock_max_mhz": 1000}}
    assert gpu_of_record(odd) == Gpu("NVIDIA X", 10)  # unreported fields are left out, never guessed


def test_label_adds_l2_and_the_dram_class_where_reported():
    """The device's reported L2 and peak DRAM bandwidth (2 x memory clock x bus width) join the Target GPU
    line, rounded for reading; the record keeps them unrounded."""
    rec = {"gpu": {"name": "NVIDIA H200", "sm_count": 132, "compute_capability": "9.0", "l2_bytes": 52428800,
                   "mem_clock_max_mhz": 3200, "memory_bus_width_bits": 6144}}
    gpu = gpu_of_record(rec)
    assert gpu.l2_bytes == 52428800 and gpu.dram_bytes_per_s == 2 * 3200e6 * 6144 / 8
    assert gpu.label == "NVIDIA H200 (132 SMs, compute capability 9.0, 50 MB L2, about 4.9 TB/s DRAM)"
    lpddr = Gpu("NVIDIA GB10", 48, "12.1", l2_bytes=24 * 2**20 + 2**19, dram_bytes_per_s=2 * 4266e6 * 256 / 8)
    assert lpddr.label == "NVIDIA GB10 (48 SMs, compute capability 12.1, 24.5 MB L2, about 270 GB/s DRAM)"
    assert Gpu("G", 2, l2_bytes=512 * 1024).label == "G (2 SMs, 512 KB L2)"
    no_width = {"gpu": {**rec["gpu"], "memory_bus_width_bits": None}}
    assert gpu_of_record(no_width).label == "NVIDIA H200 (132 SMs, compute capability 9.0, 50 MB L2)"
    prompt = render_prompt(load_family(SYNTH), "forward", gpu)
    assert "Target GPU: NVIDIA H200 (132 SMs, compute capability 9.0, 50 MB L2, about 4.9 TB/s DRAM)\n" in prompt


@pytest.mark.parametrize(
    "inject, problem",
    [("Option A (rw_one)", "rewrite id 'rw_one'"), ("see rewrites/rw_two.cu", "file name 'rw_two.cu'"),
     ("x = 1; // note", "comment marker '//'"), ("/* note */", "comment marker '/*'"),
     ("it took 0.621 ms", "runtime-looking text"), ("980us", "runtime-looking text"),
     ("SYNTHETIC INTENDED REASONING: a sentence that must never reach a prompt.", "the intended reasoning"),
     ("the winner is", "the word intended/winner")],
)
def test_leak_check_catches_leaks(inject, problem):
    """The checks above can fail: each kind of leak, injected, is reported."""
    fam = load_family(SYNTH)
    prompt = render_prompt(fam, "forward", GPU).replace("## Your answer", inject + "\n\n## Your answer")
    assert any(p.startswith(problem) for p in leak_problems(fam, prompt)), leak_problems(fam, prompt)
