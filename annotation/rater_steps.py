"""What a rater goes through besides the items: a qualification test, practice with feedback, questionnaires.

The one home of these steps (docs/raters.md):

- **Items with a known answer outside the study's items.** A qualification's
  test items (``Qualification.items``) and a study's practice items
  (``Study.practice``) are written in the study-file item shape and read by the
  same reader as the study's items (``importers.items.item_from_object``), so
  their gold answers are checked by the task type. An answer is compared with
  gold by the task type's ``matches_gold``, as attention checks are. The
  answers are ``StepAnswer`` rows, never ``Judgment`` rows: no count, quota,
  agreement figure, progress bar or export of the main data reads them.
- **The pass rule** (``Qualification.min_correct`` of its items) and what is
  remembered: one ``QualificationResult`` per rater identity (a Prolific id is
  one ``Rater``), so a later study can admit only those who passed and the
  owner can download them as a Prolific allowlist.
- **Questionnaires**: ``Study.questionnaire`` holds the questions asked
  ``before`` and ``after`` the items (choice, scale, number, short text;
  required or optional), or ``demographics`` for the ready set, whose texts are
  the platform's own and so shown in the study's language. Answers are
  ``QuestionAnswer`` rows per enrollment, checked here, server-side.
- **The walk**: ``next_step`` says which of these steps a rater who agreed and
  read the instructions is on; the annotator views follow it.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.functional import Promise
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from .json_limits import unstorable
from .models import Enrollment, Qualification, QualificationResult, QuestionAnswer, Rater, StepAnswer, Study
from .selectors.annotator import ShownCandidate, ShownItem
from .task_types import TaskType, get_task_type

# -- items with a known answer: the qualification test and practice ------------------------------

#: At most this many items in a qualification test or a practice round: they come before the task.
MAX_STEP_ITEMS = 50
STEP_ITEM_KEYS = ("explanation",)


def step_items_read(
    raw: Any, *, task_type: TaskType, config: dict[str, Any], where: str
) -> tuple[list[dict], list[str]]:
    """Items of a test or practice round as stored (the study-file item shape), and every problem found.

    Each must have a gold answer; an ``explanation`` (practice) is kept beside it.
    """
    from .importers.items import item_from_object  # the item reader, shared with study files
    from .services.studies import item_problems

    if raw in (None, []):
        return [], []
    if not isinstance(raw, list):
        return [], [f"{where}: must be a list of items."]
    if len(raw) > MAX_STEP_ITEMS:
        return [], [f"{where}: at most {MAX_STEP_ITEMS} items, not {len(raw)}."]
    stand_in = Study(task_type=task_type.name, config=config)
    seen: dict[str, str] = {}
    entries, problems = [], []
    for n, obj in enumerate(raw, start=1):
        at = f"{where}[{n}]"
        extra = {}
        if isinstance(obj, dict):
            extra = {k: obj[k] for k in STEP_ITEM_KEYS if k in obj}
            obj = {k: v for k, v in obj.items() if k not in STEP_ITEM_KEYS}
            obj.setdefault("id", str(n))
        explanation = extra.get("explanation", "")
        if not isinstance(explanation, str):
            problems.append(f"{at}: explanation must be text.")
            explanation = ""
        elif problem := unstorable(explanation):
            problems.append(f"{at}: explanation holds {problem}")
        row = item_from_object(obj, where=at, task_type=task_type)
        problems.extend(row.errors)
        if row.spec is None:
            continue
        problems.extend(item_problems(study=stand_in, spec=row.spec, seen=seen))
        if row.spec.gold is None:
            problems.append(f"{at}: needs a gold answer (the answer counted as correct).")
        entries.append(
            {
                "id": row.spec.external_id,
                "prompt": row.spec.prompt,
                "text": row.spec.text,
                "candidates": [{"key": c.key, "text": c.text, "context": c.context} for c in row.spec.candidates],
                "gold": row.spec.gold,
                "explanation": explanation,
            }
        )
    return entries, problems


def step_item_shown(entry: dict[str, Any]) -> ShownItem:
    """A test or practice item as the rater sees it: candidates in the order written."""
    candidates = [
        ShownCandidate(position=n, text=c["text"], context=c.get("context", ""))
        for n, c in enumerate(entry.get("candidates") or [])
    ]
    return ShownItem(prompt=entry.get("prompt", ""), text=entry.get("text", ""), candidates=candidates)


def step_item_answer(
    *, task_type: TaskType, config: dict[str, Any], entry: dict[str, Any], data: Any
) -> tuple[Any, bool]:
    """The posted answer to a test or practice item, cleaned by the task type, and whether it matches gold."""
    keys = [c["key"] for c in entry.get("candidates") or []]
    config = task_type.config(config)
    raw = task_type.value_from_form(data, shown_order=keys, config=config)
    value = task_type.validate(raw, candidate_keys=keys, config=config, item_text=entry.get("text", ""))
    return value, bool(task_type.matches_gold(value, entry["gold"], config=config))


def gold_label(*, task_type: TaskType, entry: dict[str, Any]) -> str:
    """The expected answer in words, for practice feedback (the candidate's text where the answer names one)."""
    gold = entry["gold"]
    texts = {c["key"]: c["text"] for c in entry.get("candidates") or []}
    chosen = [texts[k] for k in task_type.chosen_keys(gold) if k in texts]
    if chosen:
        return " / ".join(chosen)
    label = task_type.value_label(gold)
    return str(label if label not in (None, "") else gold)


# -- qualifications --------------------------------------------------------------------------------


def qualification_problems(value: Any) -> list[str]:
    """The structure of a ``qualification:`` section; items are checked against the task type on load."""
    if not isinstance(value, dict):
        return ["qualification: must be a mapping with name, min_correct and items (or only the name of one you have)."]
    problems = []
    unknown = set(value) - {"name", "min_correct", "items"}
    if unknown:
        problems.append(f"qualification: unknown key(s) {', '.join(sorted(map(str, unknown)))}.")
    name = value.get("name")
    if not isinstance(name, str) or not name.strip() or len(name) > 200 or unstorable(name):
        problems.append("qualification.name: must be a short text naming the qualification.")
    if "items" in value:
        minimum = value.get("min_correct")
        if isinstance(minimum, bool) or not isinstance(minimum, int) or minimum < 1:
            problems.append("qualification.min_correct: must be a whole number of at least 1.")
        elif isinstance(value["items"], list) and minimum > len(value["items"]):
            problems.append(f"qualification.min_correct: {minimum} is more than its {len(value['items'])} items.")
    return problems


def qualification_save(
    *, owner: AbstractBaseUser, name: str, task_type: str, config: dict[str, Any], items: Any, min_correct: int
) -> Qualification:
    """Create the owner's qualification, or update one nobody has taken yet; ValidationError naming what is wrong."""
    kind = get_task_type(task_type)
    entries, problems = step_items_read(items, task_type=kind, config=config, where="qualification.items")
    if not entries and not problems:
        problems.append("qualification.items: a qualification test needs at least one item.")
    if not problems and not 1 <= min_correct <= len(entries):
        problems.append(f"qualification.min_correct: must be from 1 to {len(entries)}, the number of items.")
    if problems:
        raise ValidationError(problems)
    found = Qualification.objects.filter(owner=owner, name=name.strip()).first()
    fields = {"task_type": task_type, "config": config, "items": entries, "min_correct": min_correct}
    if found is None:
        return Qualification.objects.create(owner=owner, name=name.strip(), **fields)
    if any(getattr(found, k) != v for k, v in fields.items()):
        if found.results.exists():
            raise ValidationError(
                f"qualification.name: {name!r} has already been taken by participants and cannot change; "
                "give the changed test a new name."
            )
        for key, v in fields.items():
            setattr(found, key, v)
        found.save()
    return found


def qualification_for_study(*, study: Study, value: dict[str, Any] | None) -> Qualification | None:
    """Set (or with None clear) a study's qualification from a ``qualification:`` section."""
    if not value:
        if study.qualification_id is not None:
            study.qualification = None
            study.save(update_fields=["qualification"])
        return None
    if problems := qualification_problems(value):
        raise ValidationError(problems)
    name = value["name"].strip()
    if "items" in value:
        qualification = qualification_save(
            owner=study.owner,
            name=name,
            task_type=study.task_type,
            config=study.config,
            items=value["items"],
            min_correct=value["min_correct"],
        )
    else:
        qualification = Qualification.objects.filter(owner=study.owner, name=name).first()
        if qualification is None:
            raise ValidationError(f"qualification.name: you have no qualification named {name!r}; give its items.")
    if qualification.task_type != study.task_type:
        raise ValidationError(
            f"qualification.name: {name!r} is a {qualification.task_type} test; this study is {study.task_type}."
        )
    study.qualification = qualification
    study.save(update_fields=["qualification"])
    return qualification


def _items_dump(entries: list[dict]) -> list[dict]:
    return [{k: v for k, v in entry.items() if v not in ("", [], None) or k == "gold"} for entry in entries]


def practice_set(*, study: Study, value: Any) -> list[dict]:
    """Set a study's practice items (the study-file item shape with gold and an explanation)."""
    entries, problems = step_items_read(
        value, task_type=get_task_type(study.task_type), config=study.config, where="practice"
    )
    if problems:
        raise ValidationError(problems)
    study.practice = entries
    study.save(update_fields=["practice"])
    return entries


def questionnaire_set(*, study: Study, value: Any) -> None:
    if problems := questionnaire_problems(value):
        raise ValidationError(problems)
    study.questionnaire = value or {}
    study.save(update_fields=["questionnaire"])


# The study-file sections (docs/study-files.md), also the study page's and the API's way to set these steps.
RATER_STEP_KEYS = ("qualification", "practice", "questionnaire")


def rater_steps_dump(study: Study) -> dict[str, Any]:
    """The study's qualification, practice and questionnaire as study-file sections (empty ones left out)."""
    data: dict[str, Any] = {}
    if study.qualification_id is not None:
        q = study.qualification
        data["qualification"] = {"name": q.name, "min_correct": q.min_correct, "items": _items_dump(q.items)}
    if study.practice:
        data["practice"] = _items_dump(study.practice)
    if study.questionnaire:
        data["questionnaire"] = study.questionnaire
    return data


def rater_steps_problems(data: Any) -> dict[str, list[str]]:
    """Structural problems of the three sections, by section (items are checked against the task type on save)."""
    if not isinstance(data, dict):
        return {"non_field_errors": ["must be a mapping with qualification, practice and/or questionnaire."]}
    problems: dict[str, list[str]] = {}
    for key in data:
        if key not in RATER_STEP_KEYS:
            problems.setdefault(str(key), []).append(f"unknown key; use {', '.join(RATER_STEP_KEYS)}.")
    if data.get("qualification"):
        problems.setdefault("qualification", []).extend(qualification_problems(data["qualification"]))
    if data.get("practice") not in (None, []) and not isinstance(data["practice"], list):
        problems.setdefault("practice", []).append("practice: must be a list of items.")
    problems.setdefault("questionnaire", []).extend(questionnaire_problems(data.get("questionnaire")))
    return {k: v for k, v in problems.items() if v}


def rater_steps_save(*, study: Study, data: dict[str, Any], actor: AbstractBaseUser | None = None) -> None:
    """Replace the study's qualification, practice and questionnaire, all or nothing (ValidationError by section).

    The change log records the sections before and after.
    """
    from .audit import audit_record

    if problems := rater_steps_problems(data):
        raise ValidationError(problems)
    found: dict[str, list[str]] = {}
    before = rater_steps_dump(study)
    with transaction.atomic():
        for key, setter in (
            ("qualification", lambda v: qualification_for_study(study=study, value=v)),
            ("practice", lambda v: practice_set(study=study, value=v or [])),
            ("questionnaire", lambda v: questionnaire_set(study=study, value=v)),
        ):
            try:
                setter(data.get(key))
            except ValidationError as exc:
                found[key] = exc.messages
        if found:
            transaction.set_rollback(True)
        elif (after := rater_steps_dump(study)) != before:
            audit_record(
                study=study, action="updated", actor=actor, changes={"rater_steps": [before or None, after or None]}
            )
    if found:
        raise ValidationError(found)


def register_sections() -> None:
    """Make qualification, practice and questionnaire sections of study files (``study_files.SECTIONS``)."""
    from .study_files import StudyFileSection, register_section

    def dump(key: str):
        return lambda study: rater_steps_dump(study).get(key)

    items = {"type": "array", "maxItems": MAX_STEP_ITEMS, "items": {"type": "object"}}
    register_section(
        StudyFileSection(
            key="qualification",
            check=lambda value: qualification_problems(value) if value else [],
            load=lambda *, owner, value, study: qualification_for_study(study=study, value=value),
            dump=dump("qualification"),
            schema={
                "type": ["object", "null"],
                "description": "A test before the task: items with gold answers and a pass rule (docs/raters.md).",
                "required": ["name"],
                "additionalProperties": False,
                "properties": {
                    "name": {"type": "string", "minLength": 1, "maxLength": 200},
                    "min_correct": {"type": "integer", "minimum": 1},
                    "items": items,
                },
            },
        )
    )
    register_section(
        StudyFileSection(
            key="practice",
            check=lambda value: [] if isinstance(value, list) else ["practice: must be a list of items."],
            load=lambda *, owner, value, study: practice_set(study=study, value=value),
            dump=dump("practice"),
            schema={**items, "description": "Practice items with gold and an explanation (docs/raters.md)."},
        )
    )
    register_section(
        StudyFileSection(
            key="questionnaire",
            check=questionnaire_problems,
            load=lambda *, owner, value, study: questionnaire_set(study=study, value=value),
            dump=dump("questionnaire"),
            schema={
                "type": ["object", "null"],
                "description": "Questions before and after the items; 'demographics' for the ready set (docs/raters.md).",
                "additionalProperties": False,
                "properties": {phase: {"type": "array"} for phase in PHASES},
            },
        )
    )


def has_passed(*, qualification: Qualification, rater: Rater) -> bool:
    return QualificationResult.objects.filter(qualification=qualification, rater=rater, passed=True).exists()


def allowlist_csv(qualification: Qualification) -> str:
    """The participant ids who passed, one a line under a header: Prolific's custom allowlist upload."""
    ids = (
        QualificationResult.objects.filter(qualification=qualification, passed=True, rater__kind=Rater.Kind.CROWD)
        .exclude(rater__external_id="")
        .order_by("created_at", "pk")
        .values_list("rater__external_id", flat=True)
    )
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["participant_id"])
    writer.writerows([pid] for pid in ids)
    return out.getvalue()


# -- questionnaires --------------------------------------------------------------------------------

QUESTION_KINDS = ("choice", "scale", "number", "text")
PHASES = ("before", "after")
DEMOGRAPHICS = "demographics"
#: Characters of a short text answer.
TEXT_ANSWER_CHARS = 500
_KEY = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
#: Questions a study may ask in all, and options a choice may offer: a page of questions, not a survey platform.
MAX_QUESTIONS = 100
MAX_OPTIONS = 50


@dataclass(frozen=True)
class Question:
    key: str
    kind: str
    text: str | Promise
    required: bool = True
    options: tuple[tuple[str, str | Promise], ...] = ()  # (stored value, label) of a choice
    minimum: float | None = None
    maximum: float | None = None
    whole: bool = True  # scale and number: whole numbers only
    low_label: str | Promise = ""
    high_label: str | Promise = ""
    phase: str = "before"
    demographic: bool = False

    @property
    def scale_points(self) -> list[int]:
        return list(range(int(self.minimum or 0), int(self.maximum or 0) + 1)) if self.kind == "scale" else []

    @property
    def groupable(self) -> bool:
        """Whether the answers split raters into a few groups (for the by-group breakdowns)."""
        return self.kind in ("choice", "scale")

    def label_of(self, value: Any) -> str:
        for stored, label in self.options:
            if stored == value:
                return str(label)
        return "" if value is None else str(value)


_PREFER_NOT = ("prefer_not_to_say", _("Prefer not to say"))


def demographic_questions(phase: str = "before") -> list[Question]:
    """The ready demographics set; its texts are the platform's, shown in the study's language."""
    ages = ("18-24", "25-34", "35-44", "45-54", "55-64")
    return [
        Question(
            "age_band",
            "choice",
            _("How old are you?"),
            options=(*((a, a) for a in ages), ("65+", _("65 or older")), _PREFER_NOT),
            phase=phase,
            demographic=True,
        ),
        Question(
            "gender",
            "choice",
            _("What is your gender?"),
            options=(("woman", _("Woman")), ("man", _("Man")), ("non_binary", _("Non-binary")), _PREFER_NOT),
            phase=phase,
            demographic=True,
        ),
        Question("country", "text", _("In which country do you live?"), phase=phase, demographic=True),
        Question("first_language", "text", _("What is your first language?"), phase=phase, demographic=True),
        Question(
            "joke_reading",
            "choice",
            _("How often do you read jokes in the language of this study?"),
            options=(
                ("daily", _("Every day")),
                ("weekly", _("Every week")),
                ("monthly", _("Every month")),
                ("rarely", _("Less often")),
                ("never", _("Never")),
            ),
            phase=phase,
            demographic=True,
        ),
    ]


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _question_from(entry: Any, *, phase: str, where: str, problems: list[str]) -> Question | None:
    if not isinstance(entry, dict):
        problems.append(f"{where}: must be a question (a mapping with key, kind and text) or {DEMOGRAPHICS!r}.")
        return None
    known = {"key", "kind", "text", "required", "options", "min", "max", "low_label", "high_label"}
    if unknown := set(map(str, entry)) - known:
        problems.append(f"{where}: unknown key(s) {', '.join(sorted(unknown))}.")
    key, kind, text = entry.get("key"), entry.get("kind"), entry.get("text")
    if not isinstance(key, str) or not _KEY.match(key):
        problems.append(
            f"{where}.key: must be lower-case letters, digits and _ (a column name), starting with a letter."
        )
        return None
    where = f"{where} ({key})"
    if kind not in QUESTION_KINDS:
        problems.append(f"{where}.kind: must be one of {', '.join(QUESTION_KINDS)}.")
        return None
    if not isinstance(text, str) or not text.strip() or unstorable(text):
        problems.append(f"{where}.text: the question's text is missing.")
        return None
    for name in ("low_label", "high_label"):
        if not isinstance(entry.get(name, ""), str) or unstorable(entry.get(name, "")):
            problems.append(f"{where}.{name}: must be text.")
    required = entry.get("required", True)
    if not isinstance(required, bool):
        problems.append(f"{where}.required: must be true or false.")
    options: tuple = ()
    if kind == "choice":
        raw = entry.get("options")
        if not isinstance(raw, list) or len(raw) < 2 or not all(isinstance(o, str) and o.strip() for o in raw):
            problems.append(f"{where}.options: a choice needs a list of at least two texts.")
            return None
        if len(set(raw)) != len(raw):
            problems.append(f"{where}.options: an option is written twice.")
        if len(raw) > MAX_OPTIONS or any(unstorable(o) or len(o) > 200 for o in raw):
            problems.append(f"{where}.options: at most {MAX_OPTIONS} options of up to 200 storable characters each.")
        options = tuple((o, o) for o in raw)
    low, high = entry.get("min"), entry.get("max")
    if kind == "scale":
        if not (isinstance(low, int) and isinstance(high, int)) or isinstance(low, bool) or not 0 <= high - low <= 20:
            problems.append(f"{where}: a scale needs whole numbers min and max, at most 20 apart (e.g. 1 and 7).")
            return None
        if high <= low:
            problems.append(f"{where}: a scale's max must be above its min.")
    if kind == "number":
        for name, bound in (("min", low), ("max", high)):
            if bound is not None and _number(bound) is None:
                problems.append(f"{where}.{name}: must be a number.")
        if _number(low) is not None and _number(high) is not None and high < low:
            problems.append(f"{where}: max is below min.")
    return Question(
        key=key,
        kind=kind,
        text=text.strip(),
        required=required is not False,
        options=options,
        minimum=_number(low),
        maximum=_number(high),
        whole=kind == "scale" or all(isinstance(b, int) for b in (low, high) if b is not None),
        low_label=entry.get("low_label", "") if isinstance(entry.get("low_label", ""), str) else "",
        high_label=entry.get("high_label", "") if isinstance(entry.get("high_label", ""), str) else "",
        phase=phase,
    )


def _questions(value: Any, problems: list[str]) -> list[Question]:
    if value in (None, {}):
        return []
    if not isinstance(value, dict):
        problems.append("questionnaire: must be a mapping with before and/or after, each a list of questions.")
        return []
    if unknown := set(map(str, value)) - set(PHASES):
        problems.append(f"questionnaire: unknown key(s) {', '.join(sorted(unknown))}; use before and after.")
    questions: list[Question] = []
    for phase in PHASES:
        entries = value.get(phase) or []
        if not isinstance(entries, list):
            problems.append(f"questionnaire.{phase}: must be a list of questions.")
            continue
        if len(entries) > MAX_QUESTIONS:
            problems.append(f"questionnaire.{phase}: at most {MAX_QUESTIONS} questions, not {len(entries)}.")
            continue
        for n, entry in enumerate(entries, start=1):
            if entry == DEMOGRAPHICS:
                questions.extend(demographic_questions(phase))
            elif (
                question := _question_from(entry, phase=phase, where=f"questionnaire.{phase}[{n}]", problems=problems)
            ) is not None:
                questions.append(question)
    if len(questions) > MAX_QUESTIONS:
        problems.append(f"questionnaire: at most {MAX_QUESTIONS} questions, not {len(questions)}.")
    seen: set[str] = set()
    for question in questions:
        if question.key in seen:
            problems.append(f"questionnaire: the key {question.key!r} is used twice; each question needs its own.")
        seen.add(question.key)
    return questions


def questionnaire_problems(value: Any) -> list[str]:
    problems: list[str] = []
    _questions(value, problems)
    return problems


def study_questions(study: Study, phase: str | None = None) -> list[Question]:
    """The study's questions (of one phase, or all), in the order asked."""
    found = _questions(study.questionnaire, [])
    return [q for q in found if phase is None or q.phase == phase]


def question_answer_clean(question: Question, raw: Any) -> Any:
    """One posted answer cleaned to its stored value (None for an optional one left empty)."""
    text = "" if raw is None else str(raw).strip()
    if not text:
        if question.required:
            raise ValidationError(gettext("Please answer this question."))
        return None
    if problem := unstorable(text):
        raise ValidationError(problem)
    if question.kind == "choice":
        if text not in {value for value, _label in question.options}:
            raise ValidationError(gettext("Please choose one of the options."))
        return text
    if question.kind == "text":
        if len(text) > TEXT_ANSWER_CHARS:
            raise ValidationError(gettext("Please keep the answer under %(n)d characters.") % {"n": TEXT_ANSWER_CHARS})
        return text
    try:
        number = float(text.replace(",", "."))
    except ValueError:
        raise ValidationError(gettext("Please enter a number.")) from None
    if not math.isfinite(number) or (question.whole and number != int(number)):
        raise ValidationError(gettext("Please enter a whole number."))
    low, high = question.minimum, question.maximum
    if (low is not None and number < low) or (high is not None and number > high):
        if low is not None and high is not None:
            message = gettext("Please enter a number from %(low)s to %(high)s.")
        elif low is not None:
            message = gettext("Please enter a number of at least %(low)s.")
        else:
            message = gettext("Please enter a number of at most %(high)s.")
        raise ValidationError(message % {"low": _plain(low), "high": _plain(high)})
    return int(number) if question.whole else number


def _plain(number: float | None) -> str:
    return "" if number is None else (str(int(number)) if number == int(number) else str(number))


def questionnaire_answers_clean(questions: Iterable[Question], data: Any) -> dict[str, Any]:
    """Every question's cleaned answer; ValidationError mapping each question's key to its problem."""
    cleaned, errors = {}, {}
    for question in questions:
        try:
            cleaned[question.key] = question_answer_clean(question, data.get(question.key))
        except ValidationError as exc:
            errors[question.key] = exc.messages
    if errors:
        raise ValidationError(errors)
    return cleaned


def questionnaire_answers_save(*, enrollment: Enrollment, phase: str, data: Any) -> dict[str, Any]:
    """Check and store one phase's answers, all or nothing, and mark the phase done."""
    cleaned = questionnaire_answers_clean(study_questions(enrollment.study, phase), data)
    with transaction.atomic():
        for key, value in cleaned.items():
            QuestionAnswer.objects.update_or_create(enrollment=enrollment, key=key, defaults={"value": value})
        field_name = "questions_before_at" if phase == "before" else "questions_after_at"
        setattr(enrollment, field_name, timezone.now())
        enrollment.save(update_fields=[field_name])
    return cleaned


def rater_answers(*, study: Study, key: str) -> dict[int, Any]:
    """Each counted rater's answer to one question of the study (rater id → stored value)."""
    from .models import counted_raters

    rows = QuestionAnswer.objects.filter(
        counted_raters("enrollment__rater"), enrollment__study=study, key=key, value__isnull=False
    ).values_list("enrollment__rater_id", "value")
    return dict(rows)


# -- the walk ----------------------------------------------------------------------------------


def next_step(enrollment: Enrollment) -> str:
    """The step before the items this enrollment is on: qualification, practice, questions, or item."""
    study = enrollment.study
    if (
        study.qualification_id is not None
        and study.qualification_mode == "test"
        and enrollment.qualified_at is None
        and study.qualification.items  # a test of no items (its items removed by hand) is no step
    ):
        return "qualification"
    if study.practice and enrollment.practised_at is None:
        return "practice"
    if enrollment.questions_before_at is None and study_questions(study, "before"):
        return "questions"
    return "item"


def wants_questions_after(enrollment: Enrollment) -> bool:
    """Whether a rater through the items still has the questions asked after them to answer."""
    return (
        enrollment.questions_after_at is None
        and not enrollment.ended_early
        and enrollment.screened_out_at is None
        and bool(study_questions(enrollment.study, "after"))
    )


def step_entries(enrollment: Enrollment, step: str) -> tuple[list[dict], TaskType, dict[str, Any]]:
    study = enrollment.study
    if step == StepAnswer.Step.QUALIFICATION:
        q = study.qualification
        return list(q.items), get_task_type(q.task_type), q.config
    return list(study.practice), get_task_type(study.task_type), study.config


def step_position(enrollment: Enrollment, step: str) -> int:
    """How many of the step's items this rater has answered (the next one's index)."""
    return StepAnswer.objects.filter(enrollment=enrollment, step=step).count()


def step_answer(*, enrollment: Enrollment, step: str, index: int, data: Any) -> StepAnswer:
    """Store the answer to item ``index`` of a test or practice round (a second post of it returns the first).

    At the end of a qualification test the pass rule is applied: the result is
    remembered for the rater, and one who failed is screened out (excluded,
    with the reason, and never given an item).
    """
    entries, task_type, config = step_entries(enrollment, step)
    if not 0 <= index < len(entries):
        raise ValidationError(gettext("This question is not part of the study."))
    with transaction.atomic():
        Enrollment.objects.select_for_update().filter(pk=enrollment.pk).first()
        existing = StepAnswer.objects.filter(enrollment=enrollment, step=step, index=index).first()
        if existing is not None:
            return existing
        if index != step_position(enrollment, step):
            raise ValidationError(gettext("Please answer the questions in order."))
        value, correct = step_item_answer(task_type=task_type, config=config, entry=entries[index], data=data)
        answer = StepAnswer.objects.create(enrollment=enrollment, step=step, index=index, value=value, correct=correct)
        if index + 1 == len(entries):
            _step_finished(enrollment, step)
    return answer


def _step_finished(enrollment: Enrollment, step: str) -> None:
    now = timezone.now()
    if step == StepAnswer.Step.PRACTICE:
        enrollment.practised_at = now
        enrollment.save(update_fields=["practised_at"])
        return
    qualification = enrollment.study.qualification
    correct = StepAnswer.objects.filter(enrollment=enrollment, step=step, correct=True).count()
    total = len(qualification.items)
    passed = correct >= qualification.min_correct
    if not enrollment.rater.is_preview:
        # The first attempt counts: a participant cannot retake a test by entering another study.
        try:
            with transaction.atomic():
                QualificationResult.objects.get_or_create(
                    qualification=qualification,
                    rater=enrollment.rater,
                    defaults={"study": enrollment.study, "correct": correct, "total": total, "passed": passed},
                )
        except IntegrityError:
            pass
    enrollment.qualified_at = now
    fields = ["qualified_at"]
    if not passed:
        screen_out(enrollment, reason=f"did not pass the qualification test ({correct} of {total} correct)")
        return
    enrollment.save(update_fields=fields)


def screen_out(enrollment: Enrollment, *, reason: str) -> None:
    """End a session before the task: the screen-out outcome, excluded with its reason, never given an item."""
    enrollment.screened_out_at = timezone.now()
    enrollment.excluded = True
    enrollment.excluded_reason = f"screened out: {reason}"[:200]
    enrollment.save(update_fields=["screened_out_at", "excluded", "excluded_reason", "qualified_at"])


def admission_check(enrollment: Enrollment) -> bool:
    """At entry: a study open only to those who passed its qualification before screens out anyone else.

    A rater who already took this study's test keeps their first result.
    """
    study = enrollment.study
    if study.qualification_id is None or enrollment.qualified_at is not None or enrollment.screened_out_at:
        return enrollment.screened_out_at is None
    result = QualificationResult.objects.filter(qualification_id=study.qualification_id, rater=enrollment.rater).first()
    if study.qualification_mode == "passed_only" and not enrollment.rater.is_preview:
        if result is None or not result.passed:
            enrollment.qualified_at = timezone.now()
            screen_out(enrollment, reason=f"has not passed the qualification {study.qualification.name!r}")
            return False
        enrollment.qualified_at = timezone.now()
        enrollment.save(update_fields=["qualified_at"])
    elif result is not None and not enrollment.rater.is_preview:
        enrollment.qualified_at = timezone.now()
        if not result.passed:
            screen_out(
                enrollment, reason=f"did not pass the qualification test before ({result.correct} of {result.total})"
            )
            return False
        enrollment.save(update_fields=["qualified_at"])
    return True
