"""Reading a model's answer as a careful person would: what every task type's reader shares.

A person reading a judge's reply skips the thinking and reads the verdict; so do we:

- reasoning traces are not the answer: ``<think>…</think>`` (DeepSeek-R1, Qwen3), ``<thinking>``,
  ``<reasoning>``, a lone closing tag (the opening one was in the prompt's template), gpt-oss's
  "analysis" channel. A trace that never closes means the model never answered.
  (The API's ``reasoning_content`` field is never handed to a reader: it stays in the raw response.)
- "Final answer: …" (最终答案, 最終回答) says which statement counts, so only that one is read;
- otherwise every statement is read, and two that disagree make the answer unparseable;
- questions, conditionals and first impressions ("Rating: 2 would be too generous", "if …",
  "at first I chose A") are not statements of the verdict and are skipped;
- a verdict in a negated clause is refused rather than turned around, except where the task
  type knows the opposite for certain (binary labels);
- numbers come as digits, words, ordinals, full-width digits or CJK numerals ("Two", "the third",
  "２", "二", "第三").

Each task type's reader (``judging/task_types/<type>.py``) builds its patterns on these pieces.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from typing import Any

from .reading import Unparseable, one

# -- reasoning traces --------------------------------------------------------------------------

_TRACE_NAMES = r"think|thinking|thought|reasoning|reflection|scratchpad"
_CLOSED_TRACE = re.compile(rf"<({_TRACE_NAMES})>.*?</\1\s*>", re.S | re.I)
_OPEN_TRACE = re.compile(rf"<(?:{_TRACE_NAMES})>", re.I)
_CLOSE_TRACE = re.compile(rf"</(?:{_TRACE_NAMES})\s*>", re.I)
# gpt-oss (harmony format): the answer is the "final" channel; with its special tokens dropped by the
# server the reply reads "analysis…assistantfinal…".
_HARMONY_FINAL = re.compile(r"<\|channel\|>\s*final\s*<\|message\|>(.*?)(?=<\|(?:end|return|start)\|>|$)", re.S)
_HARMONY_FLAT = re.compile(r"\A\s*analysis.*?assistantfinal(.*)\Z", re.S)


def strip_reasoning(text: str) -> str:
    """The reply without its reasoning trace; Unparseable when the model stopped before answering."""
    if "<|channel|>" in text:
        finals = _HARMONY_FINAL.findall(text)
        if not finals:
            raise Unparseable("the answer stops in its analysis channel and has no final answer")
        return finals[-1]
    flat = _HARMONY_FLAT.match(text)
    if flat:
        return flat.group(1)
    text = _CLOSED_TRACE.sub("\n", text)
    closes = list(_CLOSE_TRACE.finditer(text))
    if closes:
        # Templates that open <think> in the prompt leave only the closing tag in the reply.
        text = text[closes[-1].end() :]
    if _OPEN_TRACE.search(text):
        raise Unparseable("the answer is cut off inside its reasoning (<think> is never closed)")
    if not text.strip():
        raise Unparseable("the answer holds only reasoning, no verdict after it")
    return text


# -- the statement that counts ------------------------------------------------------------------

_FINAL_MARKER = re.compile(
    r"(?:\bfinal\s+(?:answer|verdict|decision|rating|score|choice|pick|label|grade)"
    r"|最终(?:答案|回答|选择|结论|评分|判断)|最終(?:回答|的な(?:答え|回答|判断|結論)|判断|結論|評価|答え))"
    r"[\s*_#]*(?:is\b|为|は)?[\s*:：=\-—]*",
    re.I,
)


def final_statement(text: str) -> str | None:
    """What follows the last "Final answer:" marker (to the end of its line), None when there is none."""
    markers = list(_FINAL_MARKER.finditer(text))
    if not markers:
        return None
    rest = text[markers[-1].end() :]
    for line in rest.split("\n"):
        if line.strip(" *_`#>-"):
            return line
    return ""


_FENCE = re.compile(r"```[a-zA-Z]*\s*\n?(.*?)\n?\s*```", re.S)


_SPACES = re.compile(r"[^\S\n]+")
_BLANK_LINES = re.compile(r"\s*\n\s*")


def squeeze(text: str) -> str:
    """Runs of spaces as one, blank lines as one line break: what a reader sees, and what keeps every
    pattern's ``\\s*`` from backtracking over a hostile run of thousands of spaces."""
    return _BLANK_LINES.sub("\n", _SPACES.sub(" ", text))


def plain(text: str) -> str:
    """The text as a reader of choices sees it: full-width forms folded (２ → 2, ： → :), fences opened."""
    return _FENCE.sub(lambda m: m.group(1), unicodedata.normalize("NFKC", text)).strip()


# A sentence ends at . ! ? before a space, at their CJK forms, or at a line break.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n+")
# "1." alone is the number of a list item, not a sentence: it stays with the item's text.
_LIST_NUMBER = re.compile(r"^(?:\d+|[a-zA-Z])\.$")
# Clauses that turn on a contrast are read separately ("I'd pick 1 if …, but 3 wins").
_CLAUSE_BREAK = re.compile(
    r"\s*[,;，；]?\s*\b(?:but|however|though|although|whereas|yet)\b\s*|\s*;\s*|但是|可是|不过|だが|けど|しかし",
    re.I,
)
# Not a statement of the verdict: a question, a condition, a supposition or a first impression.
_NOT_A_VERDICT = re.compile(
    r"\bif\b|\bunless\b|\bwould\s+(?:be|have|seem|look)\b|\bcould\b|\bmight\b|\bshould\s+I\b|\bat\s+first\b"
    r"|\binitially\b|\boriginally\b|\bwas\s+going\s+to\b|\bwas\s+tempted\b|\bI\s+(?:first\s+)?thought\b"
    r"|\bseemed\b|\btoo\s+(?:generous|harsh|high|low|strict|kind)\b|\bnot\s+sure\b"
    r"|如果|要是|假如|起初|一开始|本来|もし|なら(?:ば)?[、,]|最初は|と思ったが|かと思",
    re.I,
)


# A last sentence that stops on a connective was cut off mid-thought ("…it sounds as funny and").
_DANGLING = re.compile(r"\S+\s+\S+\s+(?:and|or|but|so|the|a|an|to|of|with|that|because|as|than|by|just)\s*$")


def statements(text: str) -> list[str]:
    """The clauses of an answer that state something (questions, conditionals, a cut-off end left out)."""
    out: list[str] = []
    sentences: list[str] = []
    for piece in _SENTENCE_END.split(text):
        if sentences and _LIST_NUMBER.match(sentences[-1].strip()):
            sentences[-1] = f"{sentences[-1]} {piece}"
        else:
            sentences.append(piece)
    if sentences and _DANGLING.search(sentences[-1][-80:]):
        sentences.pop()
    for sentence in sentences:
        sentence = sentence.strip()
        if not sentence or sentence.endswith(("?", "？")):
            continue
        for clause in _CLAUSE_BREAK.split(sentence):
            clause = clause.strip(" ,，、")
            if out and denies(clause):
                # "It's supposed to be funny, but it isn't": the denial turns the clause before it around.
                out[-1] = f"not {out[-1]}"
            elif clause and not _NOT_A_VERDICT.search(clause):
                out.append(clause)
    return out


# -- negation -----------------------------------------------------------------------------------

# A negation anywhere in the clause before a phrase ("I don't think it's funny", "nobody would find this
# funny", "far from funny", "it fails to be funny"), or right after a Japanese stem ("面白くない").
_NEGATORS = re.compile(
    r"\bnot\b(?!\s+(?:only|just|merely)\b)|\bno\b(?!\s+(?:doubt|question)\b)|\b(?:never|hardly|barely|scarcely|nobody|none|neither|nor|few|nothing|without(?!\s+(?:a\s+)?doubt)|lacks?|lacking"
    r"|fails?|failed|miss(?:es|ed|ing)?|far\s+from|isn['’]t|wasn['’]t)\b|n['’]t\b",
    re.I,
)
_NEGATORS_CJK = re.compile(r"[不没沒无無非未别別]|缺乏")
_NEGATED_AFTER_JA = re.compile(r"^(?:くない|くなかった|くありません|じゃない|ではない|ません|ない)")
# "supposed to be funny but it isn't": the clause after the contrast denies the one before it.
_DENIAL = re.compile(
    r"^(?:it|this|that|they|he|she)?\s*(?:is|was|does|did|are)?(?:n['’]t|\s+not)\b\s*(?:funny|really|at\s+all)?\W*$",
    re.I,
)
# Trying or meaning to be something says nothing about being it.
_ATTEMPT = re.compile(
    r"\b(?:tries|tried|trying|attempts?|attempted|wants?|wanted|aims?|meant|supposed|intended|hopes?)\s+to\b"
    r"|想要|试图|つもり|ようとして",
    re.I,
)


def negated(before: str, after: str = "") -> bool:
    """Whether a phrase between ``before`` and ``after`` (within one clause) is negated."""
    if _NEGATORS.search(before) or _NEGATORS_CJK.search(before[-4:]):
        return True
    return bool(_NEGATED_AFTER_JA.match(after))


def denies(clause: str) -> bool:
    """The clause only denies what came before it ("but it isn't", "but it's not")."""
    return bool(_DENIAL.match(clause.strip()))


def attempted(before: str) -> bool:
    return bool(_ATTEMPT.search(before))


# -- numbers ------------------------------------------------------------------------------------

_WORDS = {
    "zero": 0,
    "none": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}
_ORDINALS = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
    "tenth": 10,
}
_CJK_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "兩": 2, "三": 3, "四": 4, "五": 5}
_CJK_DIGITS |= {"六": 6, "七": 7, "八": 8, "九": 9, "十": 10}

#: A number as a model writes it: digits, an English word, a CJK numeral.
NUMBER = rf"(?<!\d)\d+|\b(?:{'|'.join(_WORDS)})\b|[{''.join(_CJK_DIGITS)}]"
#: An ordinal: "third", "3rd", "第三", "3番目", "三つ目".
ORDINAL = (
    rf"\b(?:{'|'.join(_ORDINALS)})\b|\b\d+(?:st|nd|rd|th)\b|第\s*(?:\d+|[{''.join(_CJK_DIGITS)}])"
    rf"|(?:(?<!\d)\d+|[{''.join(_CJK_DIGITS)}])\s*(?:番目|つ目)"
)


#: Where a number or option that is the verdict ends: the clause goes on with punctuation or a reason,
#: never with a noun ("I'd say one thing", "It's 3 jokes in one", "Answer: one of the three").
VERDICT_END = r"(?![.,]\d)(?=\s*(?:$|[.,;:!?。，、)(*\"'”」]|(?:because|since|as|for|given|wins|is|です)\b))"


def number(word: str) -> int:
    """The value of a number or ordinal as written ("2", "Two", "third", "3rd", "第三", "二", "3番目")."""
    word = re.sub(r"^第\s*|(?<=\w)\s*(?:番目|つ目)$|(?<=\d)(?:st|nd|rd|th)$", "", word.strip().casefold())
    if word.isdigit():
        if len(word) > 6:  # no scale or list is this long; int() of thousands of digits raises
            raise Unparseable(f"{word[:12]}… is not a number on any scale")
        return int(word)
    for table in (_WORDS, _ORDINALS, _CJK_DIGITS):
        if word in table:
            return table[word]
    raise Unparseable(f"{word[:20]!r} is not a number")


# -- reading statements -------------------------------------------------------------------------

Reading = Callable[[str], Iterable[tuple[str, Any]]]


def read_statements(text: str, read: Reading, what: str) -> tuple[Any, str]:
    """(value, pattern) that every statement of the answer agrees on; Unparseable when none or they differ.

    ``read(clause)`` yields (pattern name, value) for each verdict the clause states.
    """
    hits = [hit for clause in statements(text) for hit in read(clause)]
    value = one([v for _, v in hits], what)
    return value, next(name for name, v in hits if v == value)


def values_of(text: str, read: Reading) -> set[str]:
    """The distinct verdicts some statement of ``text`` makes (to check prose around a JSON answer)."""
    found = set()
    for clause in statements(text):
        try:
            found.update(repr(v) for _, v in read(clause))
        except Unparseable:
            continue
    return found


def matches(clause: str, patterns: Iterable[tuple[str, re.Pattern]]) -> Iterable[tuple[str, re.Match]]:
    """Each pattern's matches in the clause, with the pattern's name."""
    for name, pattern in patterns:
        for match in pattern.finditer(clause):
            yield name, match


def clause_verdicts(
    clause: str,
    *,
    whole: re.Pattern,
    patterns: Iterable[tuple[str, re.Pattern]],
    read: Callable[[re.Match], Any],
    what: str,
) -> list[tuple[str, Any]]:
    """The verdicts one clause states: the clause alone as the verdict ("Two."), else each pattern's match.

    A verdict under a negation ("It's not a 2", "Option 1 is not the funniest") is unclear: unparseable.
    """
    alone = whole.fullmatch(clause)
    if alone:
        return [("whole_answer", read(alone))]
    hits = []
    for name, match in matches(clause, patterns):
        if negated(clause[: match.start()]):
            raise Unparseable(f"the answer negates its {what} ({clause.strip()[:60]!r})")
        hits.append((name, read(match)))
    return hits


def group(match: re.Match) -> str:
    """The first group that took part in the match (alternatives each capture their own)."""
    return next(g for g in match.groups() if g is not None)
