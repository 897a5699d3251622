"""Build the demo studies from the YAML files beside this module.

Every study is created through the same services a researcher's import uses
(``study_create``, ``items_create``, ``study_set_state``), so the demo content
passes exactly the validation real content does. Loading is idempotent: a demo
study that already exists (found by its slug, or by its owner and name) is left
exactly as it is, and the ``demo`` login is only created when no user of that
name exists. Its password is published, so under ``FUNNYBONE_PRODUCTION=1`` the
demo login is never created nor used: the studies go to an existing account
named by the operator, or nothing is loaded.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils.text import slugify

from ..models import Study
from ..services.studies import CandidateSpec, ItemSpec, items_create, study_create, study_set_state
from ..task_types.free_text import apply_edit, marked_token

DATA_DIR = Path(__file__).resolve().parent / "data"
# One file per protocol of PROTOCOLS.md, in the order the page lists them.
PROTOCOLS = ("humorrank", "jest", "oogiri", "chumor", "semeval2020t7")
DEMO_USERNAME = "demo"
DEMO_PASSWORD = "demo-password"  # noqa: S105 - a documented local-only login


@dataclass
class DemoStudy:
    """One demo study as the data files describe it, items already expanded."""

    name: str
    task_type: str
    config: dict[str, Any]
    settings: dict[str, Any]
    items: list[ItemSpec] = field(default_factory=list)
    # A protocol data file beside the YAML, imported through the protocol's own importer
    # (items and the answers it holds), so the demo's protocol report has numbers to show.
    import_file: str | None = None

    @property
    def protocol(self) -> str:
        return self.settings["protocol"]

    @property
    def slug(self) -> str:
        # The slug study_create gives a new study of this name.
        return slugify(self.name)[:60]


class DemoLoginRefused(Exception):
    """A production server asked for the demo login, whose password anyone can read in the README."""


@dataclass
class DemoResult:
    user: AbstractBaseUser
    user_created: bool
    created: list[Study] = field(default_factory=list)
    existing: list[Study] = field(default_factory=list)


def demo_studies() -> list[DemoStudy]:
    """Every demo study, read from the data files (nothing is written)."""
    studies = []
    for protocol in PROTOCOLS:
        data = yaml.safe_load((DATA_DIR / f"{protocol}.yaml").read_text(encoding="utf-8"))
        studies.extend(_study_from(raw) for raw in data["studies"])
    return studies


def _study_from(raw: dict[str, Any]) -> DemoStudy:
    settings = dict(raw.get("settings") or {})
    settings["protocol"] = raw["protocol"]
    settings["consent_text"] = " ".join(raw["consent"].split())
    settings["instructions_text"] = " ".join(raw["instructions"].split())
    if "description" in settings:
        settings["description"] = " ".join(settings["description"].split())
    if "contest" in raw:
        items = contest_items(raw["contest"])
    elif "graded_edits" in raw:
        items = graded_edit_items(raw["graded_edits"])
    else:
        items = [_item(row) for row in raw.get("items") or []]
    return DemoStudy(
        name=raw["name"],
        task_type=raw["task_type"],
        config=dict(raw.get("config") or {}),
        settings=settings,
        items=items,
        import_file=raw.get("import_file"),
    )


def _item(row: dict[str, Any]) -> ItemSpec:
    return ItemSpec(
        external_id=row["id"],
        prompt=row.get("prompt", ""),
        text=row.get("text", ""),
        candidates=[
            CandidateSpec(
                key=c["key"], text=c["text"], context=c.get("context", ""), provenance=c.get("provenance", {})
            )
            for c in row.get("candidates", [])
        ],
        metadata=row.get("metadata", {}),
        gold=row.get("gold"),
        is_attention_check=bool(row.get("attention_check", False)),
        row=f"demo item {row['id']}",
    )


def contest_items(contest: dict[str, Any]) -> list[ItemSpec]:
    """Pairwise items for a tournament: each prompt with a few pairs of contestants.

    The pairs rotate from prompt to prompt, so over the prompts every pair of
    contestants meets about equally often (each meets every other when there
    are at least as many prompt-pairs as contestant pairs).
    """
    models = {c["key"]: c["model"] for c in contest["contestants"]}
    pairs = list(itertools.combinations(models, 2))
    per_prompt = min(int(contest["pairs_per_prompt"]), len(pairs))
    items = []
    for index, prompt in enumerate(contest["prompts"]):
        for step in range(per_prompt):
            first, second = pairs[(index * per_prompt + step) % len(pairs)]
            items.append(
                ItemSpec(
                    external_id=f"{prompt['id']}:{first}-vs-{second}",
                    prompt=prompt["headline"],
                    candidates=[
                        CandidateSpec(key=key, text=prompt["jokes"][key], provenance={"model": models[key]})
                        for key in (first, second)
                    ],
                    metadata={"prompt_id": prompt["id"]},
                    row=f"demo prompt {prompt['id']}",
                )
            )
    return items


def graded_edit_items(rows: list[dict[str, Any]]) -> list[ItemSpec]:
    """Items to grade: the original headline as the prompt, one edited version as the text."""
    items = []
    for row in rows:
        original_word = marked_token(row["headline"])
        original = apply_edit(row["headline"], original_word)
        for word in row["edits"]:
            items.append(
                ItemSpec(
                    external_id=f"{row['id']}:{word}",
                    prompt=original,
                    text=apply_edit(row["headline"], word),
                    metadata={"headline_id": row["id"], "original_word": original_word, "replacement": word},
                    row=f"demo headline {row['id']}",
                )
            )
    return items


def demo_user() -> tuple[AbstractBaseUser, bool]:
    """The ``demo`` researcher, created with the documented password only if missing."""
    user_model = get_user_model()
    lookup = {user_model.USERNAME_FIELD: DEMO_USERNAME}
    user = user_model.objects.filter(**lookup).first()
    if user is not None:
        return user, False
    try:
        with transaction.atomic():
            return user_model.objects.create_user(DEMO_USERNAME, password=DEMO_PASSWORD, first_name="Demo"), True
    except IntegrityError:  # another load_demo created it a moment ago
        return user_model.objects.get(**lookup), False


def _existing(demo: DemoStudy, owner: AbstractBaseUser) -> Study | None:
    return Study.objects.filter(Q(slug=demo.slug) | Q(owner=owner, name=demo.name)).order_by("pk").first()


def _build(demo: DemoStudy, owner: AbstractBaseUser) -> Study:
    # One transaction per study: a failure leaves no half-built draft behind
    # that a later run would mistake for an existing demo study.
    with transaction.atomic():
        study = study_create(owner=owner, name=demo.name, task_type=demo.task_type, config=demo.config, **demo.settings)
        if demo.items:
            items_create(study=study, items=demo.items)
        if demo.import_file:
            _import(study, DATA_DIR / demo.import_file)
        return study_set_state(study=study, state=Study.State.OPEN)


def _import(study: Study, path: Path) -> None:
    from ..protocols import protocol_import

    result = protocol_import(study=study, data=path.read_bytes(), filename=path.name)
    if not result.ok:
        # The demo data ships with the code: a problem here is a bug, never a user's mistake.
        raise ValueError(f"Demo file {path.name} does not import: {'; '.join(result.errors[:5])}")


def load_demo(*, owner: AbstractBaseUser | None = None) -> DemoResult:
    """Create every missing demo study, owned by ``owner`` or else by the demo login; leave existing ones untouched.

    Without an ``owner`` the demo login is created if missing, except in production
    mode, where :class:`DemoLoginRefused` is raised before anything is written.
    """
    if owner is not None:
        user, user_created = owner, False
    elif settings.FUNNYBONE_PRODUCTION:
        raise DemoLoginRefused(
            f"Refusing to create or use the demo login {DEMO_USERNAME!r}: its password is published and "
            "FUNNYBONE_PRODUCTION=1 is set. To load the demo studies on this server, "
            "name an existing account: manage.py load_demo --owner USERNAME."
        )
    else:
        user, user_created = demo_user()
    result = DemoResult(user=user, user_created=user_created)
    for demo in demo_studies():
        found = _existing(demo, user)
        if found is None:
            try:
                result.created.append(_build(demo, user))
                continue
            except IntegrityError:  # a concurrent run took the slug first
                found = _existing(demo, user)
                if found is None:
                    raise
        result.existing.append(found)
    return result
