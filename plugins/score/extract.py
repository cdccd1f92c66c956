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
- "A is wrong", "I think (A) or (B)", a ranking list with no stated order
  ("- C", "- B" ...), and a trace cut off before a label give nothing.

Decisions added for issue 22 (cases in tests/fixtures/answers/issue22.jsonl):
- Reasoning is never the answer: <think>, <thinking>, <thought>, <reasoning>,
  <seed:think>, [THINK], <|begin_of_thought|>, ◁think▷ and ollama's
  "Thinking... / ...done thinking." blocks are removed; one never closed runs
  to the end; a closer with no opener ends a block that began the reply. In
  gpt-oss's harmony format only the "final" channel is read (none: a miss).
- A letter labelled as another role is not the answer: "Runner-up: B",
  "Close second: D", "Alternative: A", "Second choice: B", "my second choice
  is B", "Slowest: A", "Backup: C" (in several languages); it never overrides.
- Several letters after one label are no answer: "Answer: B, C", "B and D",
  "C & D", "C (or D)", "B y D", "B和D"; nor is the second of such a pair.
- A conditional is no answer: "A if the tile fits, otherwise C", "Answer: C,
  unless ...", "If it fits in L2, the answer is B", "C for large N, A for
  small N"; "If I had to pick, the answer is C" is a commitment and counts.
- A stray echoed option line ("D) Hints only") after an answer naming another
  letter: in doubt, a miss.
- An answer followed by a withdrawal with no answer after it is a miss:
  "scratch that", "on second thought", "I take that back", "wait, no", "I can't decide", "D is not
  the fastest after all". A question or a note after the answer is not one.
- Cyrillic/Greek А В С (Α Β) read as A B C only right after an answer label
  and before punctuation or the line's end ("Ответ: С."); "Ответ: В этом ..."
  is the Russian word.
- "not B — it is D", "Not A, but C", "It isn't B; it's D" are D, C, D;
  "the fastest is D" is a label ("B and D both beat A, but the fastest is D").
- Tables: a row of a label cell and a letter cell ("| **Answer** | **C** |")
  is that answer; a table with exactly one row marked fastest/winner/✅, or
  rank 1 under a "Rank" column, names that row's letter (two marked: none).
- A ranking whose order is stated ("fastest first", "from fastest to
  slowest", "slowest to fastest") names its first (or last) entry, as a list
  or as "D > A > C > B"; a tie in the deciding entry or no stated order: none.
- Japanese, Korean and Chinese closings with no label read when they end the
  line: "最も速いのは C です。", "答えは B です。", "가장 빠른 것은 D입니다.",
  "B가 가장 빠릅니다.", "最快的是 C。"; their negations ("ではありません",
  "不是") and conditionals ("否则") give nothing.
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
  | \bthe\s+(?:fastest|quickest|best)(?:\s+(?:one|of\s+(?:them|the\s+(?:four|4))))?\s+(?:is|would\s+be|will\s+be)
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


# Reasoning channels written into the reply text. What lies inside one is never the
# answer; an opener never closed runs to the end; a closer with no opener (the chat
# template opened it) ends a block that began at the start of the reply.
_THINK_TAGS = (
    (r"<\s*think\s*>", r"<\s*/\s*think\s*>"),
    (r"<\s*thinking\s*>", r"<\s*/\s*thinking\s*>"),
    (r"<\s*thought\s*>", r"<\s*/\s*thought\s*>"),
    (r"<\s*reasoning\s*>", r"<\s*/\s*reasoning\s*>"),
    (r"<\s*seed:think\s*>", r"<\s*/\s*seed:think\s*>"),
    (r"\[THINK\]", r"\[/THINK\]"),
    (r"<\|begin_of_thought\|>", r"<\|end_of_thought\|>"),
    (r"◁think▷", r"◁/think▷"),
    (r"^[ \t]*Thinking\.\.\.[ \t]*$", r"^[ \t]*\.\.\.done thinking\.[ \t]*$"),  # ollama's CLI
)
_THINK_OPEN = re.compile("|".join(f"(?:{o})" for o, _ in _THINK_TAGS), re.I | re.M)
_THINK_CLOSE = re.compile("|".join(f"(?:{c})" for _, c in _THINK_TAGS), re.I | re.M)
# gpt-oss's harmony format: only the "final" channel is the reply.
_HARMONY = re.compile(r"<\|channel\|>\s*(?P<channel>\w+)[^<]*?<\|message\|>(?P<body>.*?)(?=<\|(?:end|return|call|start|channel)\|>|\Z)", re.S)
_HARMONY_BARE = re.compile(r"^\s*analysis.*?assistantfinal", re.S)  # the same with its tokens dropped by a server
_SPECIAL_TOKEN = re.compile(r"<\|[a-z_]{1,40}\|>", re.I)


def strip_reasoning(text: str) -> str:
    """The reply with every inline reasoning block removed (and special tokens dropped)."""
    if "<|channel|>" in text:
        text = "\n".join(m.group("body") for m in _HARMONY.finditer(text) if m.group("channel").lower() == "final")
    elif "assistantfinal" in text:
        text = _HARMONY_BARE.sub("", text, count=1)
    out: list[str] = []
    pos = 0
    while True:
        opened = _THINK_OPEN.search(text, pos)
        closed = _THINK_CLOSE.search(text, pos)
        if closed is not None and (opened is None or closed.start() < opened.start()):
            if pos == 0 and not out:
                pos = closed.end()  # the template opened the block before the reply began
                continue
            out.append(text[pos:closed.start()])  # a stray closer: drop the tag only
            pos = closed.end()
            continue
        if opened is None:
            out.append(text[pos:])
            break
        out.append(text[pos:opened.start()] + "\n")
        end = _THINK_CLOSE.search(text, opened.end())
        if end is None:
            break  # never closed: the rest is thinking
        pos = end.end()
    return _SPECIAL_TOKEN.sub(" ", "".join(out))


# Words that make a labelled letter something other than the answer: "Runner-up: B",
# "Close second: D", "Alternative: A", "my second choice is B", "Slowest: A".
_OTHER_ROLE = (
    r"(?:second|2nd|third|3rd|next|runner[\s-]*ups?|alternatives?|alternatively|alternate|backup|fallback"
    r"|initial(?:ly)?|original|previous|earlier|naive|tempting|worst|slowest|least\s+likely|honou?rable\s+mention"
    r"|plan\s+b|rejected|eliminated|excluded|avoid|also[\s-]+rans?|contenders?|if\s+not|otherwise|tie[\s-]*breaker"
    r"|segunda|segundo|alternativa|deuxième|zweite|alternative|второй|запасной|次点|次善|二番目|次に速い|备选|第二|其次|차선|두\s*번째)"
)
_QUALIFIED = re.compile(
    r"(?<!\bto\s)(?<!→\s)" + _OTHER_ROLE + r"(?:[\s-]+[^\W\d_]+){0,3}\s*(?:[:：=]|\s[-–—]|\bis|\bwould\s+be|\bbe)?\s*[\(\[*\"']*\s*(?:(?:option|choice)\s+)?$",
    re.I,
)
_ROLE_LINE = re.compile(r"^[\s\-*#>|\d.)]*(?:the\s+|my\s+|a\s+)?(?:close\s+)?" + _OTHER_ROLE + r"\b[^:：\n]{0,40}[:：]", re.I)
# Another letter joined to the answer's: "Answer: B, C", "B and D", "C (or D)", "B & D"
_JOINER = r"(?:,|&|\+|/|\||;|\band\b|\bor\b|\bplus\b|\by\b|\be\b|\bet\b|\bund\b|\boder\b|\bo\b|\bou\b|\bи\b|\bили\b|和|或|与|及|、|및|또는|と|か)"
_CO_AFTER = re.compile(
    r"""^[\)\]\}"'*]*[ \t]*\(?[ \t]*""" + _JOINER + r"""?[ \t]*\(?[ \t]*(?:(?:also|both|then|maybe|perhaps)[ \t]+)?"""
    r"""(?:(?i:answer)[ \t]*[:：]?[ \t]*)?(?:(?:option|choice)[ \t]+)?[\(\[]?(?P<other>[A-D])(?![^\W\d_]|\[|\.\w|\(|->)""",
)
_CO_BEFORE = re.compile(
    r"""(?<![^\W\d_])(?P<other>[A-D])[\)\]\}"'*]*[ \t]*""" + _JOINER + r"""[ \t]*(?:(?:both|also)[ \t]+)?(?:(?:option|choice)[ \t]+)?[\(\[*"']*$"""
)
# A condition on the answer: "A if the tile fits, otherwise C", "C for large N, A for small N"
_COND_AFTER = re.compile(
    r"""^[\)\]\}"'*]*[,;]?\s*\(?\s*(?:if|unless|when|whenever|provided|assuming|as\s+long\s+as|only\s+if|depending|except\s+when"""
    r"""|in\s+case|si|wenn|falls|sofern|если|如果|若|なら|場合)\b""",
    re.I,
)
_COND_LATER = re.compile(
    r"""(?i:\b(?:otherwise|else|if\s+not|sinon|sonst|si\s+no|de\s+lo\s+contrario|иначе)\b|否则|不然|そうでなければ|でなければ|아니면|그렇지\s*않으면)"""
    r"""[^.!?\n]{0,60}?(?<![^\W\d_])[A-D](?![^\W\d_])"""
    r"""|(?:^|[,;(]|\bbut\b)\s*(?:(?:option|choice)\s+)?[A-D]\s+(?:for|on|if|when|with|under|at)\b""",
)
_COND_BEFORE = re.compile(
    r"""^[\W]*(?:(?:but|and|so|then)\s+)?(?:if|unless|assuming|provided|supposing|suppose|depending|in\s+case"""
    r"""|for\s+(?:small|large|big|tiny|short|long)|si|wenn|falls|если|如果|若)\b""",
    re.I,
)
_COMMIT_IF = re.compile(r"^[\W]*if\s+(?:I|we)\s+(?:had|have|must|were|was)\s+(?:forced\s+)?to\b|^[\W]*if\s+forced\b|^[\W]*if\s+I\s+must\b", re.I)
_SENTENCE_END = re.compile(r"(?<![^\W\d_]\.[^\W\d_])(?<!\be\.g)(?<!\bi\.e)[.!?。！？](?=\s|$)|\n")


def _sentence_start(text: str, pos: int) -> int:
    """Where the sentence holding `pos` begins (after the last sentence end before it)."""
    start = 0
    for m in _SENTENCE_END.finditer(text, 0, pos):
        start = m.end()
    return start


def _rest_of_sentence(text: str, pos: int) -> str:
    m = _SENTENCE_END.search(text, pos)
    return text[pos: m.start() if m else len(text)]


def _is_answer(text: str, pos: int, letter: str) -> bool:
    """False when the letter at `pos` is not the answer by its surroundings (role, list, condition)."""
    line_start = text.rfind("\n", 0, pos) + 1
    before = text[line_start:pos]
    if _QUALIFIED.search(before) or _ROLE_LINE.match(before):
        return False  # "Runner-up: B", "my second choice is B"
    after = text[pos + 1: pos + 160]
    co = _CO_AFTER.match(after)
    if co and co.group("other") != letter:
        return False  # "Answer: B, C", "B and D"
    co = _CO_BEFORE.search(before[-40:])
    if co and co.group("other") != letter:
        return False  # the second of "B and D"
    rest = _rest_of_sentence(text, pos + 1)
    if _COND_AFTER.match(rest) or _COND_LATER.search(rest):
        return False  # "A if the tile fits in L1, otherwise C"
    head = text[_sentence_start(text, pos): pos]
    if _COND_BEFORE.match(head) and not _COMMIT_IF.match(head):
        return False  # "If the tile fits, the answer is A" ("If I had to pick, C" still counts)
    return True


# Cyrillic and Greek capitals that look like A, B, C, read only right after an answer
# label and only when nothing but punctuation follows ("Ответ: С."), so the Russian
# preposition in "Ответ: В этом случае ..." stays a word.
_LOOKALIKE = {"А": "A", "В": "B", "С": "C", "Α": "A", "Β": "B"}
_LOOKALIKE_AT = re.compile(
    r"(?P<head>(?:\banswer|\bответ|\bвариант|\bchoice|\bpick|\bverdict|\bselected|\boption|\brespuesta|\bréponse|\bantwort|答案|回答|答え|정답)"
    r"[^\n:：]{0,20}?(?:[:：=]|\bis|\s[-–—])[ \t]*[\(\[*\"'«]*[ \t]*(?:(?:вариант|option)[ \t]+)?)"
    r"(?P<letter>[АВСΑΒ])(?=[\)\]*\"'».,!;]*[ \t]*(?:$|[—–(,]))",
    re.I | re.M,
)

# Japanese, Korean and Chinese closing sentences with no Latin label:
# "最も速いのは C です。", "가장 빠른 것은 D입니다.", "最快的是 C。". The letter is read when the
# sentence ends the line; "ではない" / "아닙니다" / "不是" negate.
_CJK_CLAIM = re.compile(
    r"(?:(?:最も|一番|もっとも)?(?:速い|高速な|早い)(?:の|もの|選択肢|オプション|書き換え|候補|版)?は|(?:答え|正解|回答)は"
    r"|(?:가장|제일)\s*빠른\s*(?:것|옵션|선택지|후보|버전|코드)?\s*(?:은|는)|(?:정답|답|최종\s*답)\s*(?:은|는)"
    r"|最快的?(?:选项|是|为|版本|方案)*|(?:正确)?答案(?:是|为)|我(?:选择?|会选)|选择?)"
    r"[ \t]*(?:選択肢|オプション|选项|옵션)?[ \t]*[「『（(\[]?[ \t]*(?P<letter>[A-D])[ \t]*[」』）)\]]?[ \t]*"
    r"(?:번|です|だ|である|でしょう|입니다|이다|예요|이에요|임|。)?(?P<after>[^\n]*)"
)
_CJK_SUBJECT = re.compile(
    r"(?:^|[。.!！\n][ \t]*)(?:(?:選択肢|オプション|옵션|选项)[ \t]*)?(?P<letter>[A-D])[ \t]*(?:번)?[ \t]*"
    r"(?:が(?:最も|一番)(?:速い|高速)(?:です)?|(?:가|이)\s*(?:가장|제일)\s*빠릅니다|(?:가|이)\s*(?:가장|제일)\s*빠르다|是最快的|最快)"
    r"(?P<after>[^\n]*)"
)
_CJK_END = re.compile(r"^[ \t]*[。.!！]?[ \t]*$")

# "not B — it is D", "Not B, but D.", "It isn't B; it's D."
_NOT_BUT = re.compile(
    r"\b(?:not|isn't|is\s+not|n't)\s+(?:option\s+)?[\(\[]?[A-D][\)\]]?\s*(?:[—–-]+|[,;:.]|\s)\s*(?:but\s+|rather\s+|instead\s+)?"
    r"(?:(?:it(?:'s|’s|\s+is)|the\s+answer\s+is|the\s+fastest\s+is|rather)\s+)?(?:option\s+)?[\(\[]?(?P<letter>[A-D])(?P<after>[^\n]*)",
    re.I,
)

# A ranking whose order is stated: its first entry (fastest first) or last (slowest first) is the pick.
_FASTEST_FIRST = re.compile(
    r"fastest\s+(?:first|to\s+slowest|→\s*slowest|->\s*slowest)|quickest\s+(?:first|to\s+slowest)|best\s+to\s+worst"
    r"|from\s+(?:the\s+)?(?:fastest|quickest)|in\s+order\s+of\s+(?:decreasing\s+)?speed,?\s+fastest|speed,\s+fastest",
    re.I,
)
_SLOWEST_FIRST = re.compile(r"slowest\s+(?:first|to\s+fastest|→\s*fastest|->\s*fastest)|worst\s+to\s+best|from\s+(?:the\s+)?slowest", re.I)
_LIST_ITEM = re.compile(
    r"^[ \t]*(?:[-*+•]|\d{1,2}[.)]|#\d|\(\d\)|\d(?:st|nd|rd|th)[:.)]?)[ \t]+(?:(?:option|choice|rewrite)[ \t]+)?[\(\[]?"
    r"(?P<letter>[A-D])[\)\]]?(?P<after>[^\n]*)$",
    re.I,
)
_ITEM_END = re.compile(r"^(?:[ \t]*(?:$|[—–:(,]|-[ \t]|\.[ \t]|\.$))")
_CHAIN = re.compile(r"(?<![^\W\d_])(?P<first>[A-D])(?:[ \t]*(?:>|,|≫)[ \t]*[A-D](?![^\W\d_])){2,3}[ \t]*\.?[ \t]*$")

# Markdown table rows: "| **Answer** | **C** |" (a label cell and a letter cell) is that answer;
# a table whose one row is marked "fastest" / "winner" / "✅" names that row's letter.
_TABLE_ROW = re.compile(r"^[ \t]*\|(?P<cells>.*)\|[ \t]*$")
_TABLE_RULE = re.compile(r"^[\s|:\-]+$")
_CELL_LETTER = re.compile(r"^[*_ \t]*(?:(?:option|choice)[ \t]+)?[\(\[]?(?P<letter>[A-D])[\)\]]?[*_ \t]*$", re.I)
_CELL_LABEL = re.compile(
    r"^[*_ \t]*(?:final\s+|my\s+|the\s+)?(?:answer|pick|choice|verdict|winner|fastest(?:\s+option)?|best(?:\s+option)?|recommendation"
    r"|selected|selection|respuesta|réponse|antwort|ответ|答案|回答|答え|정답)[*_ \t:：]*$",
    re.I,
)
_CELL_MARK = re.compile(
    r"^[*_ \t]*(?:[✅✔★⭐🏆←]+[ \t]*)?(?:\(?(?:the\s+)?(?:fastest|quickest|winner|best|pick|chosen|answer|yes|1st|#1|rank\s*1)\)?[ \t]*"
    r"(?:[✅✔★⭐🏆!]+)?|[✅✔★⭐🏆]+)[*_ \t]*$",
    re.I,
)
_RANK_ONE = re.compile(r"^[*_ \t]*(?:1|1st|#1|🥇)[*_ \t]*$")


def _cells(line: str) -> list[str] | None:
    m = _TABLE_ROW.match(line)
    return [c.strip() for c in m.group("cells").split("|")] if m else None


def _tables(text: str) -> list[tuple[int, str]]:
    """Letters a table names as the pick: a label row ("| Answer | C |") or the one marked row."""
    found: list[tuple[int, str]] = []
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    i = 0
    while i < len(lines):
        if _cells(lines[i]) is None:
            i += 1
            continue
        j = i
        while j < len(lines) and _cells(lines[j]) is not None:
            j += 1
        rows = [(k, _cells(lines[k])) for k in range(i, j) if not _TABLE_RULE.match(lines[k])]
        header = [c.lower() for c in rows[0][1]] if rows else []
        rank_col = next((n for n, c in enumerate(header) if "rank" in c), None)
        marked: list[tuple[int, str]] = []
        for k, cells in rows[1:] if len(rows) > 1 else rows:
            letters = [(n, m.group("letter").upper()) for n, c in enumerate(cells) if (m := _CELL_LETTER.match(c))]
            if len({ltr for _, ltr in letters}) != 1:
                continue
            n, letter = letters[0]
            pos = offsets[k] + lines[k].find(cells[n]) if cells[n] else offsets[k]
            others = [c for m_, c in enumerate(cells) if m_ != n and c]
            if len(others) == 1 and _CELL_LABEL.match(others[0]) and cells.index(others[0]) < n:
                found.append((pos, letter))  # "| Answer | C |"
            elif any(_CELL_MARK.match(c) for c in others) or (
                rank_col is not None and rank_col < len(cells) and _RANK_ONE.match(cells[rank_col])
            ):
                marked.append((pos, letter))
        if len({ltr for _, ltr in marked}) == 1:
            found.append(marked[-1])
        i = j
    return found


def _ranked(text: str) -> list[tuple[int, str]]:
    """The pick of a ranking whose direction is stated on the line before it (or on its own line)."""
    found: list[tuple[int, str]] = []
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    for i, line in enumerate(lines):
        fast, slow = _FASTEST_FIRST.search(line), _SLOWEST_FIRST.search(line)
        if bool(fast) == bool(slow):
            continue
        chain = _CHAIN.search(line[(fast or slow).end():])
        if chain:
            letters = re.findall(r"[A-D]", chain.group(0))
            if len(set(letters)) == len(letters):
                pick = letters[0] if fast else letters[-1]
                found.append((offsets[i] + (fast or slow).end() + chain.start(), pick))
            continue
        items: list[tuple[int, str]] = []
        k = i + 1
        while k < len(lines) and not lines[k].strip():
            k += 1
        while k < len(lines) and (m := _LIST_ITEM.match(lines[k])):
            if not _ITEM_END.match(m.group("after")) or re.search(r"(?<![^\W\d_])[A-D](?![^\W\d_])", m.group("after")):
                items = []  # "1. C and D (tie)", "1. C keeps ...": not a plain ranking
                break
            items.append((offsets[k] + m.start("letter"), m.group("letter").upper()))
            k += 1
        if len(items) >= 2 and len({ltr for _, ltr in items}) == len(items):
            found.append(items[0] if fast else items[-1])
    return found


def _cjk(text: str) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for pattern in (_CJK_CLAIM, _CJK_SUBJECT):
        for m in pattern.finditer(text):
            after = m.group("after")
            if _CJK_END.match(after) or re.match(r"^[ \t]*[。.!！]", after) and not after.strip(" \t。.!！"):
                found.append((m.start("letter"), m.group("letter")))
    return found


def _not_but(text: str) -> list[tuple[int, str]]:
    return [(m.start("letter"), m.group("letter").upper()) for m in _NOT_BUT.finditer(text) if _LOWER_END.match(m.group("after"))]


# Withdrawing the answer after giving it, with no other answer after the withdrawal.
_WITHDRAW = re.compile(
    r"\b(?:I\s+)?(?:retract|withdraw)\b|\bon\s+second\s+thoughts?\b|\bscratch\s+that\b|\bstrike\s+that\b|\b(?:disregard|ignore|forget)\s+(?:that|this|the\s+above|what\s+I\s+said|my\s+(?:previous\s+|earlier\s+)?answer)\b"
    r"|\btake\s+(?:that|it|this)\s+back\b|\bthat(?:'s|’s|\s+is|\s+was)\s+(?:wrong|incorrect|not\s+right|a\s+mistake)\b|\bI\s+was\s+wrong\b"
    r"|\bmy\s+(?:previous\s+|earlier\s+)?answer\s+(?:is|was)\s+(?:wrong|incorrect)\b|\b(?:wait|actually|hmm),?\s+no\b"
    r"|\bI\s+(?:can't|cannot|can\s+not|won't|will\s+not)\s+(?:commit|decide|choose|pick|give\s+(?:a|an|one)\s+(?:final\s+)?answer)\b"
    r"|\bno\s+(?:clear|single|definitive|definite|final)\s+(?:answer|winner|pick)\b"
    r"|\bI(?:'m|’m|\s+am)\s+(?:no\s+longer|not)\s+(?:sure|confident|certain)\s+(?:about\s+|of\s+)?(?:that|this|it|my\s+answer|anymore|any\s+more|after\s+all)\b"
    r"|\bnot\s+sure\s+(?:anymore|any\s+more|after\s+all)\b|\bI\s+don't\s+know\s+(?:which|any\s*more)\b|\bI\s+(?:have\s+to|must)\s+abstain\b"
    r"|\bretiro\s+(?:mi|la)\s+respuesta|\bje\s+retire\b|\bnehme\s+(?:das|meine\s+antwort)\s+zurück|撤回|取り消|철회|беру\s+(?:свои\s+слова|ответ)\s+обратно|не\s+уверен",
    re.I,
)


def _withdrawn(text: str, pos: int, letter: str) -> bool:
    """True when what follows the answer withdraws it: "scratch that", "C is not the fastest after all"."""
    rest = text[pos + 1:]
    if _WITHDRAW.search(rest):
        return True
    named = re.compile(
        rf"(?<![^\W\d_]){letter}(?:\s+(?:is|was)\s*(?:n't|not|actually\s+not)\s+(?:the\s+)?(?:fastest|best|right|correct|answer)|\s+(?:is|was)\s+(?:wrong|incorrect|a\s+mistake))"
    )
    return bool(named.search(rest))


def normalize(text: str) -> str:
    """Text with code removed and Markdown/TeX wrappers stripped; line structure kept."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = strip_reasoning(text)
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
    text = _LOOKALIKE_AT.sub(lambda m: m.group("head") + _LOOKALIKE[m.group("letter")], text)
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
                  + _claims(norm) + _bare_lines(norm) + _tables(norm) + _ranked(norm) + _cjk(norm) + _not_but(norm))
    candidates = [(p, ltr) for p, ltr in candidates if _is_answer(norm, p, ltr)]
    if not candidates:
        return None
    pos, letter = max(candidates)
    line = norm[norm.rfind("\n", 0, pos) + 1:]
    if _ECHO_LINE.match(line) and any(ltr != letter for _, ltr in candidates):
        return None  # "The answer is C" then a stray "D) Hints only" line: in doubt
    return None if _withdrawn(norm, pos, letter) else letter


_STRICT = re.compile(r"Answer:\s*([ABCD])")


def strict_letter(text: str | None) -> str | None:
    """What a naive verifier takes: the first `Answer:\\s*([ABCD])` match, else None.

    Reported beside the tolerant score to show how many answers a strict scorer misses.
    """
    if not text:
        return None
    m = _STRICT.search(text)
    return m.group(1) if m else None
