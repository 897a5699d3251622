"""OOGIRI-MASTER (PROTOCOLS.md §3): hidden-count voting, then five multiple-choice benchmark tasks.

The voting study has one item per prompt whose candidates are its responses;
voters spread up to three votes per prompt. Votes already cast elsewhere import
as totals on each response (``Candidate.provenance["imported_votes"]``), so the
minimum-total-votes filter and the top/bottom selection read both kinds alike
(see ``oogiri_benchmark``). The five benchmark studies are built from a voting
study by ``oogiri_benchmark.benchmark_tasks_build``; their own importer reads
ready-made items, with crowd answers when the file has them.
"""

from __future__ import annotations

from collections import defaultdict

from ..models import Rater, Study
from ..services.imported_judgments import ImportedJudgment
from ..services.studies import CandidateSpec, ImportErrors, ItemSpec
from ..task_types import get_task_type
from ..task_types.binary import BinaryLabel
from ..task_types.pick_one import PickOne
from .base import ImportPlan, StudyTemplate, register_template
from .tables import Row, Table

PROTOCOL = "oogiri"
VOTING = "oogiri-voting"
# The paper's one-response task (funny or not), the only benchmark task that is not a choice.
BINARY_TASK = "binary"
# Benchmark task name -> template key; the order is the paper's.
TASKS = {
    BINARY_TASK: "oogiri-binary",
    "same": "oogiri-same",
    "diff": "oogiri-diff",
    "triple": "oogiri-triple",
    "quad": "oogiri-quad",
}
TASK_TITLES = {
    "binary": "Funny or not funny",
    "same": "Pair, same prompt",
    "diff": "Pair, different prompts",
    "triple": "Three options",
    "quad": "Four options",
}
# How many options each multiple-choice task shows (binary shows one response).
TASK_OPTIONS = {"binary": 1, "same": 2, "diff": 2, "triple": 3, "quad": 4}
DEFAULT_MIN_TOTAL_VOTES = 100
IMPORTED_VOTES = "imported_votes"

VOTING_CONSENT = (
    "You are invited to a research study on what makes answers to comedy prompts funny. "
    "You will read prompts, each followed by many short answers written by other people, "
    "and vote for the ones you like. It takes about as long as you wish to spend. Your votes "
    "are stored with a random identifier, never your name, and are used only for research. "
    "You may stop at any time without giving a reason."
)
VOTING_INSTRUCTIONS = (
    "Each screen shows one prompt and its answers. You have three votes for that prompt: give "
    "them to the answers you find funniest. You may give two or all three votes to the same "
    "answer if it deserves them, and you need not use all three. Nobody can see how many votes "
    "an answer already has until voting ends, so go by your own taste."
)
CROWD_CONSENT = (
    "You are invited to a short research study on humour. You will read answers to comedy "
    "prompts and make quick choices about them. A few questions check that you are reading "
    "carefully; answers from people who miss them are set aside. Your answers are stored with "
    "a random identifier only and used for research. You may stop at any time."
)
BINARY_INSTRUCTIONS = (
    "You will see a prompt and one answer to it. Decide whether the answer is funny or not "
    "funny, going by your first reaction. Some screens tell you exactly which button to press: "
    "please do as they say."
)
CHOICE_INSTRUCTIONS = (
    "You will see a prompt and {n} answers in a random order. Pick the one that is the funniest "
    "answer to this prompt. An answer that does not fit the prompt is not the right pick, however "
    "funny it is elsewhere. Some screens tell you exactly which answer to pick: please do as they say."
)

CROWD_SETTINGS = {
    "quota_per_item": 21,
    "item_order": Study.ItemOrder.RANDOM_PER_RATER,
    "attention_check_rate": 0.1,
    # Flag rather than end: a careless worker finishes (and is paid) but never counts.
    "attention_check_policy": Study.AttentionPolicy.FLAG,
    "attention_check_max_failures": 0,
    "consent_text": CROWD_CONSENT,
}


# -- voting ---------------------------------------------------------------------------------------


def _votes(row: Row, problems: list[str]) -> int | None:
    raw = row.text("votes")
    if not raw:
        return None
    try:
        number = float(raw)
    except ValueError:
        number = -1.0
    if number < 0 or number != int(number):
        problems.append(f"{row.where}: votes must be a whole number of at least 0, not {raw!r}.")
        return None
    return int(number)


def voting_importer(table: Table, study: Study) -> ImportPlan:
    """Rows ``prompt_id, prompt, response_id, response[, votes]``: one item per prompt, one candidate per response."""
    table.require("prompt_id", "prompt", "response_id", "response")
    problems: list[str] = []
    prompts: dict[str, tuple[str, str]] = {}  # prompt id -> (text, where first seen)
    responses: dict[str, list[CandidateSpec]] = defaultdict(list)
    seen: dict[tuple[str, str], str] = {}
    for row in table.rows:
        prompt_id, prompt, response_id, response = (
            row.text(c) for c in ("prompt_id", "prompt", "response_id", "response")
        )
        missing = [name for name, value in (("prompt_id", prompt_id), ("response_id", response_id)) if not value]
        missing += [name for name, value in (("prompt", prompt), ("response", response)) if not value]
        if missing:
            problems.append(f"{row.where}: {', '.join(missing)} is empty.")
        votes = _votes(row, problems)
        if not prompt_id or not response_id:
            continue
        if prompt_id in prompts and prompt and prompts[prompt_id][0] != prompt:
            problems.append(
                f"{row.where}: prompt {prompt_id!r} has a different text here than on {prompts[prompt_id][1]}."
            )
        prompts.setdefault(prompt_id, (prompt, row.where))
        if (prompt_id, response_id) in seen:
            problems.append(
                f"{row.where}: response {response_id!r} of prompt {prompt_id!r} is already on {seen[prompt_id, response_id]}."
            )
            continue
        seen[prompt_id, response_id] = row.where
        provenance = {IMPORTED_VOTES: votes} if votes is not None else {}
        responses[prompt_id].append(CandidateSpec(key=response_id, text=response, provenance=provenance))
    for prompt_id, (_text, where) in prompts.items():
        if len(responses[prompt_id]) < 2:
            problems.append(f"{where}: prompt {prompt_id!r} has only one response; voting needs at least two.")
    if problems:
        raise ImportErrors(problems)
    items = [
        ItemSpec(external_id=pid, prompt=text, candidates=responses[pid], row=where)
        for pid, (text, where) in prompts.items()
    ]
    return ImportPlan(items=items)


# -- benchmark tasks --------------------------------------------------------------------------------

OPTION_COLUMNS = ("option_1", "option_2", "option_3", "option_4")
YES = {"1", "yes", "true", "y", "x"}


def task_of(study: Study) -> str:
    """The benchmark task a study runs ("binary", "same", ...), from its template key."""
    return next((task for task, key in TASKS.items() if key == study.protocol), BINARY_TASK)


def _option_keys(n: int) -> list[str]:
    return [f"option_{i + 1}" for i in range(n)]


def _answer(study: Study, raw: str, n_options: int, where: str, what: str, problems: list[str]) -> dict | None:
    """An answer as the task type stores it: a label for binary, the chosen option for the others."""
    if get_task_type(study.task_type).dichotomous:
        labels = {str(o["value"]): str(o["value"]) for o in study.config["options"]}
        labels.update({str(o["label"]).lower(): str(o["value"]) for o in study.config["options"]})
        value = labels.get(raw.strip().lower())
        if value is None:
            problems.append(f"{where}: {what} {raw!r} is not one of {', '.join(sorted(set(labels.values())))}.")
            return None
        return {"label": value}
    if raw.isdigit() and 1 <= int(raw) <= n_options:
        return {"choice": f"option_{raw}"}
    if raw in _option_keys(n_options):
        return {"choice": raw}
    problems.append(f"{where}: {what} must be an option number from 1 to {n_options}, not {raw!r}.")
    return None


def benchmark_importer(table: Table, study: Study) -> ImportPlan:
    """Rows ``item_id, prompt, response`` (binary) or ``option_1..option_N`` (the others), ``gold``,
    optional ``attention_check``; with ``rater`` and ``answer`` columns each row also holds one
    crowdworker's answer (an item's text may then be repeated or left empty on its later rows).
    """
    task = task_of(study)
    binary = get_task_type(study.task_type).dichotomous
    n = TASK_OPTIONS[task]
    text_columns = ("response",) if binary else OPTION_COLUMNS[:n]
    table.require("item_id", "prompt", *text_columns)
    with_answers = "rater" in table.columns or "answer" in table.columns
    if with_answers:
        table.require("rater", "answer")
    problems: list[str] = []
    items: dict[str, ItemSpec] = {}
    judgments: list[ImportedJudgment] = []
    for row in table.rows:
        item_id = row.text("item_id")
        if not item_id:
            problems.append(f"{row.where}: item_id is empty.")
            continue
        if item_id not in items:
            texts = [row.text(c) for c in text_columns]
            empty = [c for c, t in zip(text_columns, texts, strict=True) if not t]
            if empty or not row.text("prompt"):
                problems.append(f"{row.where}: {', '.join(['prompt'] * (not row.text('prompt')) + empty)} is empty.")
            gold_raw = row.text("gold")
            gold = _answer(study, gold_raw, n, row.where, "gold", problems) if gold_raw else None
            check = row.text("attention_check").lower() in YES
            if check and gold is None and not gold_raw:
                problems.append(f"{row.where}: an attention check needs a gold answer.")
            items[item_id] = ItemSpec(
                external_id=item_id,
                prompt=row.text("prompt"),
                text=texts[0] if binary else "",
                candidates=[]
                if binary
                else [CandidateSpec(key=k, text=t) for k, t in zip(_option_keys(n), texts, strict=True)],
                gold=gold,
                is_attention_check=check,
                metadata={"task": task},
                row=row.where,
            )
        if with_answers and (row.text("rater") or row.text("answer")):
            rater, raw = row.text("rater"), row.text("answer")
            if not rater or not raw:
                problems.append(f"{row.where}: an answer needs both rater and answer.")
                continue
            value = _answer(study, raw, n, row.where, "answer", problems)
            if value is not None:
                judgments.append(
                    ImportedJudgment(rater=rater, item=item_id, value=value, kind=Rater.Kind.CROWD, row=row.where)
                )
    if problems:
        raise ImportErrors(problems)
    return ImportPlan(items=list(items.values()), judgments=judgments)


# -- templates --------------------------------------------------------------------------------------

register_template(
    StudyTemplate(
        key=VOTING,
        protocol=PROTOCOL,
        title="OOGIRI-MASTER: vote for the funniest answers (3 votes, counts hidden)",
        description=(
            "One prompt per screen with its many answers; each voter spreads up to three votes per "
            "prompt, may stack them, and never sees running totals. Prompts with too few votes in all "
            "are left out; the top three and bottom three answers of the rest feed the benchmark tasks."
        ),
        task_type="vote_allocation",
        config={"max_votes": 3, "allow_repeat": True},
        settings={
            "quota_per_item": 60,
            "item_order": Study.ItemOrder.RANDOM_PER_RATER,
            "attention_check_rate": 0.0,
            "consent_text": VOTING_CONSENT,
            "instructions_text": VOTING_INSTRUCTIONS,
        },
        analyses={"min_total_votes": DEFAULT_MIN_TOTAL_VOTES, "top": 3, "bottom": 3, "per_task": 100},
        importer=voting_importer,
        columns="prompt_id, prompt, response_id, response[, votes]",
    )
)

_BINARY_CONFIG = {
    "options": [{"value": "funny", "label": "Funny"}, {"value": "not_funny", "label": "Not funny"}],
    "positive": "funny",
}

for _task, _key in TASKS.items():
    _n = TASK_OPTIONS[_task]
    register_template(
        StudyTemplate(
            key=_key,
            protocol=PROTOCOL,
            title=f"OOGIRI-MASTER benchmark: {TASK_TITLES[_task].lower()}",
            description=(
                "Is this answer one of its prompt's best (funny) or one of its worst (not funny)? "
                "Gold = which group the votes put it in."
                if _task == BINARY_TASK
                else f"Pick the prompt's top-voted answer among {_n} options shown in random order. "
                "Gold = the top-voted answer of this prompt."
            ),
            task_type=BinaryLabel.name if _task == BINARY_TASK else PickOne.name,
            config=_BINARY_CONFIG
            if _task == BINARY_TASK
            else {"question": "Which answer is the funniest answer to this prompt?"},
            settings={
                **CROWD_SETTINGS,
                "instructions_text": BINARY_INSTRUCTIONS if _task == BINARY_TASK else CHOICE_INSTRUCTIONS.format(n=_n),
            },
            analyses={"task": _task, "options": _n, "chance": 0.5 if _n == 1 else 1 / _n},
            importer=benchmark_importer,
            columns=(
                "item_id, prompt, response, gold (funny / not funny)[, attention_check][, rater, answer]"
                if _task == BINARY_TASK
                else f"item_id, prompt, {', '.join(OPTION_COLUMNS[:_n])}, gold (option number)"
                "[, attention_check][, rater, answer]"
            ),
        )
    )
