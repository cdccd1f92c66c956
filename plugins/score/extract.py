"""Which letter did the model answer? The last explicit answer, or a miss.

Why tolerant: a correct letter in bold after a paragraph of analysis is still
an answer, and a naive `Answer:\\s*([ABCD])` scorer skips it (the seed lost a
point that way). Why still strict about *what counts*: a letter in code
(`B[row]`, `A.x`) or prose ("option A uses float4") is not an answer, and
taking it would score noise. When in doubt this module returns None (a miss),
never a guess.

Decisions for ambiguous text (each has a case in tests/fixtures/answers/):
- Only explicit answers count: a label ("Answer: B", "The answer is B",
  "Final answer: option C", "I choose B", "the fastest option is B",
  `{"answer": "B"}`, `<answer>B</answer>`, `\\boxed{B}`), or a letter alone
  on the last line of text, or alone right after a line that is only an
  answer label ("## Final Answer").
- The last explicit answer wins ("Answer: C ... actually, the answer is B" -> B).
- Alternatives are not answers: "Answer: A or B", "A/B", and an echoed
  "Answer: A / Answer: B / Answer: C / Answer: D" line give nothing; the same
  letter twice ("A / Answer: A", seen from SmolLM2) is that letter.
- Negations are not answers: "the answer is not A" gives nothing.
- A lower-case letter after a label counts only at the end of its line
  ("answer: b"), because "the answer is a bit subtle" is prose; a reply whose
  last line is only a letter counts in either case ("c").
- Other labels count when they start a line and take a colon: "Selected: C",
  "Choice: B", "Verdict: D", "Final pick: A", "Option: C" (not "Option C
  pads the tile", not "my initial pick: A, but ..." in mid-reasoning); so do
  "I pick D", "I'm going with B", "I opt for C", "I recommend A".
- A question back is not an answer: "Should I choose C?", "Answer: B?".
- A closing claim that starts its sentence and ends its line counts: "Option C
  is the fastest.", "C is the best of the four." ("Option A is the fastest in
  theory, but ..." and "I doubt C is the fastest" do not).
- Answer labels in other languages start a line: "Respuesta: C", "Réponse : C",
  "Antwort: C", "答案：C"; "o", "ou", "oder" are alternatives like "or".
- A reply whose last line ends in a colon and one capital letter ("Reads each
  sector once: C"), or whose last line echoes one option ("C) Indexes ...")
  when no other line echoes a different one, names that letter.
- "I think it's c" counts only when the letter ends the line.
- Fenced code blocks are ignored (an unterminated fence runs to the end),
  unless the whole block is an answer: just a letter or "Answer: B", or a
  JSON object whose "answer" is one letter. Inline code counts only when it
  holds just a letter (`` `B` ``).
- "A is wrong", "I think (A) or (B)", a ranking list ("- C", "- B" ...), and a
  trace cut off before a label give nothing.
"""
from __future__ import annotations

import json
import re

_CODE = "\x00"  # stands in for code, so nothing in it can match or touch a letter

_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_INLINE_CODE = re.compile(r"`+([^`\n]*?)`+")
_CODE_IS_ANSWER = re.compile(
    r"^\s*(?:(?:final\s+)?answer\s*[:：]?\s*)?[\(\[]?\s*[A-Da-d]\s*[\)\]]?\.?\s*$", re.I
)
_TEX_WRAP = re.compile(r"\\(?:text|textbf|textit|texttt|mathrm|mathbf|mathit|mathtt|mbox|emph)\s*\{([^{}]*)\}")
_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{([^{}]*)\}")
_BOXED_LETTER = re.compile(r"^\s*(?:(?:option|choice)\s+)?[\(\[]?\s*([A-Da-d])\s*[\)\]]?\s*$", re.I)
_XML_ANSWER = re.compile(r"<\s*(?:final_)?answer\s*>\s*([^<\n]{0,40}?)\s*<\s*/\s*(?:final_)?answer\s*>", re.I)
_DISPLAY_MATH = re.compile(r"\$\$([^$]{0,200})\$\$")
_INLINE_MATH = re.compile(r"\$([^$\n]{1,80})\$")
_TEX_DELIMS = re.compile(r"\\[\(\)\[\]]")
_STRONG = re.compile(r"\*\*|__")
_EMPH = re.compile(r"(?<![\w*])[*_](?=\S)([^*_\n]{1,80}?)(?<=\S)[*_](?![\w*])")
_HEADING = re.compile(r"^[ \t]*(?:#{1,6}|>+)[ \t]*", re.M)

_LABEL = r"""
(?:
    \b(?:final\s+|correct\s+|my\s+)?answer(?:'s|’s)?
        (?:\s+(?:is|would\s+be|should\s+be|will\s+be|here\s+is))?
  | \b(?:correct|best|fastest|right|final|winning)\s+(?:option|choice|rewrite|candidate|pick)
        (?:\s+(?:is|would\s+be|should\s+be|will\s+be))?
  | \b(?:final\s+|my\s+)?choice(?:\s+is)?
  | \bI(?:\s+would|\s+will|'ll|'d|\s+therefore|\s+will\s+therefore)?\s+(?:choose|pick|select|go\s+with|opt\s+for|vote\s+for|recommend|settle\s+on)
  | \bI(?:'m|\s+am)\s+(?:going\s+with|choosing|picking|selecting)
)
(?:\s+(?:likely|probably|clearly|definitely|therefore|thus))?
"""
_SEP = r"""\s*["']?\s*(?:[:：=]|\s[-–—]|[-–—]\s)?\s*["']?\s*(?:(?:option|choice)\s+)?[\(\[\{]?\s*"""
_EXPLICIT = re.compile(
    r"(?P<label>" + _LABEL + r")\b" + _SEP + r"(?P<letter>[A-Da-d])(?=(?P<after>[^\n]{0,60}))",
    re.I | re.X,
)
# After an upper-case letter: not code (B[row], A.x, B(...), A->), not a word.
_UPPER_END = re.compile(r"^(?![\w\[\(]|\.\w|->|'s\b)")
# After a lower-case letter: only closers and punctuation up to the end of the line.
_LOWER_END = re.compile(r"""^[\)\]\}"'*]*[.!]?[\)\]\}"'*]*\s*$""")
_ALT_AFTER = re.compile(
    r"""^[\)\]\}"']*\s*(?:/|\||\b(?:or|o|ou|oder|ili|или|lub)\b|或)\s*(?:answer\s*[:：]?\s*)?(?:(?:option|choice)\s+)?[\(\[]?"""
    r"""(?P<other>[A-Da-d])(?![\w\[])""",
    re.I,
)
_ALT_BEFORE = re.compile(r"""(?<![\w\[])(?P<other>[A-Da-d])[\)\]\}"']*\s*(?:/|\||\b(?:or|o|ou|oder)|或)\s*$""", re.I)
_VERB_END = re.compile(
    r"(?:\bis|\bbe|choose|pick|select|with|for|\bon|recommend|therefore|thus|likely|probably|clearly|definitely)$", re.I
)

# A label other than "answer" that starts its line and is followed by a colon (or a dash):
# "Selected: C", "Verdict: B", "Final pick: D", "Option: A". Only at the start
# of a line, so "my initial pick: A, but ..." in mid-reasoning is not read.
_LINE_LABEL = re.compile(
    r"^[ \t]*(?:(?:my|our|final|the)\s+)*"
    r"(?:selected(?:\s+(?:option|rewrite|answer|choice))?|selection|pick|verdict|decision|recommendation|vote"
    r"|option|winner|conclusion|choice|response|result"
    r"|(?:respuesta|réponse|reponse|antwort|resposta|risposta|odpowiedź|ответ)"
    r"(?:\s+(?:final|finale|correcta|correcte|correta|corretta|richtige|endgültige|finalna))?"
    r"|答案|回答|答え|정답)"
    r"\s*(?:[:：=]|\s[-–—])\s*(?:(?:option|choice|rewrite)\s+)?[\(\[\{]?\s*(?P<letter>[A-Da-d])(?=(?P<after>[^\n]{0,60}))",
    re.I | re.M,
)
# After a line label's upper-case letter: the end of the line, punctuation, or an aside.
_LINE_LABEL_END = re.compile(r"""^[\)\]\}"'*]*(?:\s*$|[.,;:!]|\s+[-–—(])""")
# A question: the rest of the sentence ends in "?" ("Should I choose C?", "Answer: B?")
_QUESTION_AFTER = re.compile(r"^[^.!\n]*\?")

# A closing claim: "Option C is the fastest.", "So C is the best of the four." It must
# start its sentence (so "I doubt C is the fastest" is not read) and end its line.
_CLAIM = re.compile(
    r"(?:^|(?<=[.!;:])[ \t]+)[ \t]*"
    r"(?:(?:so|thus|therefore|hence|overall|clearly|in\s+conclusion|in\s+short|in\s+summary|to\s+conclude|all\s+in\s+all)[,:]?\s+)?"
    r"(?:(?:the\s+)?(?:option|choice|rewrite|candidate)\s+)?[\(\[]?(?P<letter>[A-D])[\)\]]?"
    r"\s+(?:is|should\s+be|would\s+be|will\s+be)\s+(?:clearly\s+|probably\s+|likely\s+)?(?:the\s+)?"
    r"(?:fastest|quickest|best|winner|correct\s+(?:answer|option|choice)|right\s+(?:answer|option|choice)|answer)"
    r"(?:\s+(?:one|option|choice|rewrite|here|overall|of\s+(?:the|all)(?:\s+(?:four|4))?(?:\s+(?:options|rewrites|candidates|choices))?))*"
    r"(?P<after>[^\n]*)",
    re.I | re.M,
)
# "I think it's c": a hedged pick, read only when the letter ends its line.
_HEDGED = re.compile(
    r"\bI\s+(?:think|believe|guess|reckon|would\s+say|'d\s+say)(?:\s+that)?\s+"
    r"(?:it's|it’s|it\s+is|it'd\s+be|it\s+would\s+be)\s+(?:(?:option|choice)\s+)?[\(\[]?(?P<letter>[A-Da-d])(?P<after>[^\n]*)",
    re.I,
)
# After a lower-case letter that follows "answer:", a reason may follow: "my answer: b, since ..."
_LOWER_REASON = re.compile(r"^[\)\]]?\s*(?:[,;]\s*|\s[-–—]\s*|\s+)(?:since|because|given)\b", re.I)
# The last line ending in a colon and one capital letter: "Reads each sector once: C"
_COLON_LETTER_END = re.compile(r"[:：][ \t]*[\(\[]?(?P<letter>[A-D])[\)\]]?[ \t]*[.!]?[ \t]*$")
_COLON_LETTER = re.compile(r"[:：][ \t]*[\(\[]?[A-Da-d](?![\w\[])")
# A line that echoes one option: "C) Indexes elements directly"
_ECHO_LINE = re.compile(r"^\s*\(?(?P<letter>[A-D])\)\s+\S")

# A line that is only an answer label ("Final Answer:", "Answer")
_LABEL_LINE = re.compile(r"^\s*(?:the\s+)?(?:final\s+|correct\s+|my\s+)?answer\s*(?:is)?\s*[:：]?\s*$", re.I)
_BARE_LINE = re.compile(r"^\s*(?:(?:option|choice)\s+)?[\(\[]?\s*(?P<letter>[A-Da-d])\s*[\)\]]?\s*[.!]?\s*$", re.I)
# Rest of an "Answer: ..." line that names its option in words: "Answer: the padded tile (C)"
_ANSWER_COLON = re.compile(r"\banswer\b[^:：\n]{0,20}[:：](?P<rest>[^\n]*)", re.I)
_NAMED_OPTION = re.compile(r"\((?P<a>[A-D])\)|\b(?:option|choice)\s+(?P<b>[A-D])\b(?![\[\(]|\.\w)")
_LINE_END = re.compile(r"""^[\s.!)\]}*"']*$""")
_DECORATION = re.compile(r"^[\s\-*_=~#>|]*$")


def _fenced_answer(body: list[str]) -> str | None:
    """The letter of a fenced block that is only an answer ("B", "Answer: B", {"answer": "B"}), else None."""
    inner = "\n".join(body).strip()
    if _CODE_IS_ANSWER.match(inner):
        return re.findall(r"[A-Da-d]", inner)[-1].upper()
    try:
        obj = json.loads(inner)
    except ValueError:
        return None
    value = obj.get("answer", obj.get("final_answer")) if isinstance(obj, dict) else None
    m = _BOXED_LETTER.match(value) if isinstance(value, str) else None
    return m.group(1).upper() if m else None


def strip_code(text: str) -> str:
    """Replace fenced code blocks (and an unterminated one, to the end) with a code marker line.

    A block that holds nothing but an answer becomes that answer's line.
    """
    out: list[str] = []
    fence: str | None = None
    body: list[str] = []
    for line in text.split("\n"):
        m = _FENCE.match(line)
        if fence is None:
            if m:
                fence, body = m.group(1), []
                out.append(_CODE)
            else:
                out.append(line)
        elif m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(m.group(1)):].strip():
            fence = None  # a closing fence has nothing after it
            if (letter := _fenced_answer(body)) is not None:
                out[-1] = f"Answer: {letter}"
        else:
            body.append(line)  # lines inside a fence are dropped
    return "\n".join(out)


def _inline_code(m: re.Match) -> str:
    inner = m.group(1)
    return f" {inner.strip()} " if _CODE_IS_ANSWER.match(inner) else f" {_CODE} "


def _boxed(m: re.Match) -> str:
    inner = m.group(1)
    letter = _BOXED_LETTER.match(inner)
    return f" Answer: {letter.group(1)} " if letter else f" {inner} "


def _xml(m: re.Match) -> str:
    return f" Answer: {m.group(1)} "


def normalize(text: str) -> str:
    """Text with code removed and Markdown/TeX wrappers stripped; line structure kept."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = strip_code(text)
    text = _INLINE_CODE.sub(_inline_code, text)
    for _ in range(4):  # nested \text{\textbf{B}}
        new = _TEX_WRAP.sub(lambda m: m.group(1), text)
        if new == text:
            break
        text = new
    text = _BOXED.sub(_boxed, text)
    text = _XML_ANSWER.sub(_xml, text)
    text = _DISPLAY_MATH.sub(lambda m: f" {m.group(1)} ", text)
    text = _INLINE_MATH.sub(lambda m: f" {m.group(1)} ", text)
    text = _TEX_DELIMS.sub(" ", text)
    text = _STRONG.sub("", text)
    text = _EMPH.sub(lambda m: m.group(1), text)
    text = _HEADING.sub("", text)
    return text


def _explicit(text: str) -> list[tuple[int, str]]:
    """(position, letter) of every labelled answer that is not an alternative or a negation."""
    found: list[tuple[int, str]] = []
    pos = 0
    while (m := _EXPLICIT.search(text, pos)) is not None:
        if _accepted(text, m):
            found.append((m.start("letter"), m.group("letter").upper()))
            pos = m.start("letter") + 1
        else:
            # a rejected letter may begin the next label ("the answer is Answer: B"): resume at it
            pos = max(m.start("letter"), m.start() + 1)
    return found


def _accepted(text: str, m: re.Match) -> bool:
    letter, after = m.group("letter"), m.group("after")
    between = text[m.end("label"): m.start("letter")]
    if letter.isupper():
        if not _UPPER_END.match(after):
            return False  # B[row], A.x, "Answers", a word starting with the letter
    elif not _LOWER_END.match(after) and not (re.search(r"[:：]", between) and _LOWER_REASON.match(after)):
        return False  # "the answer is a bit subtle" (but "my answer: b, since ..." is b)
    if not between.strip() and not _LOWER_END.match(after) and not _VERB_END.search(m.group("label")):
        return False  # "Answer A question": a bare label needs the letter to end its line
    if _QUESTION_AFTER.match(after):
        return False  # a question back: "Should I choose C?", "Answer: B?"
    for alt in (_ALT_AFTER.match(after), _ALT_BEFORE.search(text[max(0, m.start() - 16): m.start()])):
        if alt and alt.group("other").upper() != letter.upper():
            return False  # "Answer: A or B", "Answer: A / Answer: B / ..." ("A / Answer: A" is still A)
    return True  # negations cannot match: only separators may stand between label and letter


def _line_labels(text: str) -> list[tuple[int, str]]:
    """"Selected: C", "Verdict: B", "Final pick: D": a label starting its line, a colon, one letter."""
    found: list[tuple[int, str]] = []
    for m in _LINE_LABEL.finditer(text):
        letter, after = m.group("letter"), m.group("after")
        end = _LINE_LABEL_END if letter.isupper() else _LOWER_END
        if not end.match(after) or _QUESTION_AFTER.match(after):
            continue
        alt = _ALT_AFTER.match(after)
        if alt and alt.group("other").upper() != letter.upper():
            continue  # "Pick: A or B"
        found.append((m.start("letter"), letter.upper()))
    return found


def _named_in_answer_line(text: str, taken: set[int]) -> list[tuple[int, str]]:
    """"Answer: the padded tile (C)": one option named at the end of an answer line with no direct letter."""
    found: list[tuple[int, str]] = []
    for m in _ANSWER_COLON.finditer(text):
        start, end = m.start("rest"), m.end("rest")
        if any(start - 30 <= p <= end for p in taken):
            continue
        rest = m.group("rest")
        hits = list(_NAMED_OPTION.finditer(rest))
        letters = {h.group("a") or h.group("b") for h in hits}
        # one option, named at the end of the line: "Answer: the padded tile (C)."
        if len(letters) == 1 and _LINE_END.match(rest[hits[-1].end():]):
            found.append((start + hits[-1].start(), letters.pop()))
    return found


def _claims(text: str) -> list[tuple[int, str]]:
    """"Option C is the fastest.", "I think it's c": read only when the letter's claim ends its line."""
    found: list[tuple[int, str]] = []
    for pattern in (_CLAIM, _HEDGED):
        for m in pattern.finditer(text):
            if _LOWER_END.match(m.group("after")):
                found.append((m.start("letter"), m.group("letter").upper()))
    return found


def _bare_lines(text: str) -> list[tuple[int, str]]:
    """A letter alone on the last line, or alone right after an answer-label line."""
    found: list[tuple[int, str]] = []
    lines: list[tuple[int, str]] = []
    pos = 0
    for line in text.split("\n"):
        if not _DECORATION.match(line):
            lines.append((pos, line))
        pos += len(line) + 1
    echoed = {m.group("letter") for _, line in lines if (m := _ECHO_LINE.match(line))}
    if lines:
        start, line = lines[-1]
        tail = _COLON_LETTER_END.search(line)
        echo = _ECHO_LINE.match(line)
        after_label = len(lines) > 1 and _LABEL_LINE.match(lines[-2][1])
        if tail and not _BARE_LINE.match(line) and len(_COLON_LETTER.findall(line)) == 1:  # not "Answer: C / Answer: D"
            found.append((start + tail.start("letter"), tail.group("letter")))  # "Reads each sector once: C"
        elif echo and (echoed == {echo.group("letter")} or after_label):
            found.append((start + echo.start("letter"), echo.group("letter")))  # "C) Indexes elements directly"
    for i, (start, line) in enumerate(lines):
        m = _BARE_LINE.match(line)
        if not m:
            continue
        after_label = i > 0 and _LABEL_LINE.match(lines[i - 1][1])
        is_last = i == len(lines) - 1
        letter = m.group("letter")
        # a letter alone on the last line counts in either case ("c" is a whole reply)
        if after_label or is_last:
            found.append((start + m.start("letter"), letter.upper()))
    return found


def extract_letter(text: str | None) -> str | None:
    """The last explicit answer letter (A-D) in a model's reply, or None for a miss."""
    if not text:
        return None
    norm = normalize(text)
    explicit = _explicit(norm)
    candidates = (explicit + _line_labels(norm) + _named_in_answer_line(norm, {p for p, _ in explicit})
                  + _claims(norm) + _bare_lines(norm))
    if not candidates:
        return None
    return max(candidates)[1]


_STRICT = re.compile(r"Answer:\s*([ABCD])")


def strict_letter(text: str | None) -> str | None:
    """What a naive verifier takes: the first `Answer:\\s*([ABCD])` match, else None.

    Reported beside the tolerant score to show how many answers a strict scorer misses.
    """
    if not text:
        return None
    m = _STRICT.search(text)
    return m.group(1) if m else None
