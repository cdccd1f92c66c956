"""Red team for the extractor: known answers and known non-answers wrapped in the
surroundings real traces have (prose about other options, markdown, LaTeX, code,
thinking blocks open and closed, several languages, runner-up and alternative notes).

The property is "no false letter": a non-answer never yields a letter and a known
answer never yields a different one. Fixed seed (derandomize, no example database)
and a bounded count, so CI runs the same examples every time in a few seconds.
"""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings, strategies as st

from plugins.score.extract import extract_letter

LETTERS = "ABCD"
REDTEAM = settings(max_examples=400, derandomize=True, database=None, deadline=None,
                   suppress_health_check=[HealthCheck.too_slow])

ANSWERS = (  # {L} is the answer
    "Answer: {L}", "**Final answer: {L}**", "The answer is $\\boxed{{{L}}}$.", "\\boxed{{\\text{{{L}}}}}",
    '{{"answer": "{L}"}}', '```json\n{{"answer": "{L}"}}\n```', "<answer>{L}</answer>", "I'll go with {L}.",
    "## Final Answer\n\n**{L}**", "Respuesta: {L}", "Réponse : {L}", "Antwort: {L}", "答案：{L}", "Ответ: {L}",
    "最も速いのは {L} です。", "가장 빠른 것은 {L}입니다.", "Option {L} is the fastest.", "The answer is not {M} — it is {L}.",
    "{M} and {N} both beat the original, but the fastest is {L}.",
    "| Option | Note |\n|---|---|\n| {M} | slower |\n| **Answer** | **{L}** |",
    "Ranking (fastest first):\n1. {L}\n2. {M}\n3. {N}",
)
NON_ANSWERS = (  # no single letter a grader would score
    "Answer: {L}, {M}", "Answer: {L} and {M}", "The answer is {L} or {M}.", "Answer: {L}/{M}",
    "Answer: {L} if the tile fits in L1, otherwise {M}.", "{L} if the data fits in L2, otherwise {M}",
    "If the array fits in L2, the answer is {L}.", "<think>The answer is {L}.", "<think>Answer: {L}</think>",
    "Runner-up: {L}", "I can't tell whether {L} or {M} is faster without profiling.", "Respuesta: {L} o {M}",
    "Answer: {L}\n\nActually, scratch that. I can't decide.", "Ranking:\n- {L}\n- {M}\n- {N}",
    "答案：{L}和{M}", "The answer is not {L}.", "Should I choose {L}?", "{L}[row] = {M}[col];",
)
PREFIXES = (
    "", "Option {X} keeps the stride-8 walk, and option {Y} only adds cache hints.\n\n",
    "<think>Maybe {X}. Answer: {X}? Or {Y}.</think>\n\n", "[THINK]Answer: {Y}[/THINK]\n",
    "```cuda\n{X}[i] = {Y}[i];\n```\n\n", "### Analysis\n\n- **{X}**: float4 loads\n- **{Y}**: padded tile\n\n",
    "The traffic is $T_{{{X}}} = 8 \\cdot n$ bytes for option {X}.\n\n", "Las opciones {X} y {Y} mantienen el recorrido.\n\n",
    "选项{X}和{Y}保持原步长。\n\n", "Some reasoning here.\n</think>\n\n",
)
SUFFIXES = (
    "", "\n\nRunner-up: {X}", "\n\nClose second: {X}", "\n\nAlternative: {Y}, if the tile fits in L1.",
    "\n\nSecond choice: {X}", "\n\nWould you like me to explain the memory traffic?",
    "\n\nNote: option {X} keeps the stride, so it re-reads every sector.", "\n\n```cuda\n{Y}[row] = 0;\n```",
    "\n\n(On older GPUs, {X} might be closer.)",
)


def _fill(template: str, **letters: str) -> str:
    return template.format(**letters)


@st.composite
def traces(draw, templates):
    letter = draw(st.sampled_from(LETTERS))
    others = [x for x in LETTERS if x != letter]
    m, n = draw(st.permutations(others))[:2]
    x, y = draw(st.sampled_from(LETTERS)), draw(st.sampled_from(LETTERS))
    core = _fill(draw(st.sampled_from(templates)), L=letter, M=m, N=n)
    prefix = _fill(draw(st.sampled_from(PREFIXES)), X=x, Y=y)
    suffix = _fill(draw(st.sampled_from(SUFFIXES)), X=x if x != letter else m, Y=y if y != letter else n)
    return letter, prefix + core + suffix


@REDTEAM
@given(traces(ANSWERS))
def test_known_answer_never_reads_another_letter(case):
    letter, text = case
    assert extract_letter(text) in (letter, None), text


@REDTEAM
@given(traces(ANSWERS))
def test_known_answer_with_plain_surroundings_reads(case):
    """None of these surroundings withdraws the answer, so it is read (a miss here is a regression)."""
    letter, text = case
    assert extract_letter(text) == letter, text


@REDTEAM
@given(traces(NON_ANSWERS))
def test_non_answer_never_yields_a_letter(case):
    _, text = case
    assert extract_letter(text) is None, text
