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

from ..media.store import StoredFiles
from ..models import Study
from ..services.studies import CandidateSpec, ItemSpec, items_create, study_create, study_set_state
from ..task_types.free_text import apply_edit, marked_token

DATA_DIR = Path(__file__).resolve().parent / "data"
# One file per protocol of PROTOCOLS.md, in the order the page lists them.
PROTOCOLS = ("humorrank", "jest", "oogiri", "chumor", "semeval2020t7")
# Studies whose items carry pictures (cartoons drawn at load time: ``cartoons.py``).
PICTURE_STUDIES = "pictures"
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
    # Pictures to attach once the items exist, by item id: drawn, stored and attached by ``_attach``.
    pictures: dict[str, list[PictureSpec]] = field(default_factory=dict)

    @property
    def protocol(self) -> str:
        return self.settings["protocol"]

    @property
    def slug(self) -> str:
        # The slug study_create gives a new study of this name.
        return slugify(self.name)[:60]


@dataclass(frozen=True)
class PictureSpec:
    """One of the demo's cartoons on an item: the scene drawn, its role on the item, its alt text."""

    scene: str
    role: str
    alt: str
    candidate_key: str = ""


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
    data = yaml.safe_load((DATA_DIR / f"{PICTURE_STUDIES}.yaml").read_text(encoding="utf-8"))
    studies.extend(_study_from(raw, cartoons=data["cartoons"]) for raw in data["studies"])
    return studies


def _study_from(raw: dict[str, Any], *, cartoons: list[dict[str, Any]] | None = None) -> DemoStudy:
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
    elif "cartoon_items" in raw:
        items = caption_items(cartoons or [], pairs=raw["cartoon_items"] == "pairs")
    else:
        items = [_item(row) for row in raw.get("items") or []]
    pictures = {
        row["id"]: [PictureSpec(p["scene"], p["role"], p["alt"], p.get("candidate", "")) for p in row["pictures"]]
        for row in raw.get("items") or []
        if row.get("pictures")
    }
    if "cartoon_items" in raw:
        alts = {cartoon["scene"]: " ".join(cartoon["alt"].split()) for cartoon in cartoons or []}
        pictures = {
            item.external_id: [PictureSpec(item.metadata["cartoon"], "prompt", alts[item.metadata["cartoon"]])]
            for item in items
        }
    return DemoStudy(
        name=raw["name"],
        task_type=raw["task_type"],
        config=dict(raw.get("config") or {}),
        settings=settings,
        items=items,
        import_file=raw.get("import_file"),
        pictures=pictures,
    )


def caption_items(cartoons: list[dict[str, Any]], *, pairs: bool) -> list[ItemSpec]:
    """The caption contest's items: each caption under its cartoon, or (``pairs``) each two neighbouring
    captions of a cartoon side by side. The cartoon's scene is in the metadata (``_study_from`` attaches it)."""
    items = []
    for cartoon in cartoons:
        scene, captions = cartoon["scene"], cartoon["captions"]
        metadata = {"cartoon": scene}
        if not pairs:
            items += [
                ItemSpec(external_id=f"{scene}:{n}", text=caption, metadata=metadata, row=f"demo cartoon {scene}")
                for n, caption in enumerate(captions, start=1)
            ]
            continue
        for n in range(len(captions) - 1):
            items.append(
                ItemSpec(
                    external_id=f"{scene}:{n + 1}-vs-{n + 2}",
                    candidates=[CandidateSpec(key=f"caption-{m + 1}", text=captions[m]) for m in (n, n + 1)],
                    metadata=metadata,
                    row=f"demo cartoon {scene}",
                )
            )
    return items


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


# What the demo login may see and change in /admin/: the project's own data, not accounts
# (changing users there would let it make itself a superuser).
DEMO_ADMIN_APPS = ("annotation", "judging", "ratings")


def demo_user() -> tuple[AbstractBaseUser, bool]:
    """The ``demo`` researcher, created with the documented password only if missing.

    Outside production it is staff with the project's model permissions, so the
    demo can be explored in ``/admin/`` too; production never gets a demo login
    (:func:`load_demo` refuses first).
    """
    user_model = get_user_model()
    lookup = {user_model.USERNAME_FIELD: DEMO_USERNAME}
    user = user_model.objects.filter(**lookup).first()
    created = False
    if user is None:
        try:
            with transaction.atomic():
                user, created = (
                    user_model.objects.create_user(DEMO_USERNAME, password=DEMO_PASSWORD, first_name="Demo"),
                    True,
                )
        except IntegrityError:  # another load_demo created it a moment ago
            user = user_model.objects.get(**lookup)
    if not settings.FUNNYBONE_PRODUCTION:
        _admin_access(user)
    return user, created


def _admin_access(user: AbstractBaseUser) -> None:
    from django.contrib.auth.models import Permission

    if not user.is_staff:
        user.is_staff = True
        user.save(update_fields=["is_staff"])
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label__in=DEMO_ADMIN_APPS))


def _existing(demo: DemoStudy, owner: AbstractBaseUser) -> Study | None:
    return Study.objects.filter(Q(slug=demo.slug) | Q(owner=owner, name=demo.name)).order_by("pk").first()


def _build(demo: DemoStudy, owner: AbstractBaseUser) -> Study:
    # One transaction per study: a failure leaves no half-built draft behind
    # that a later run would mistake for an existing demo study (nor a stored picture).
    written = StoredFiles()
    try:
        with transaction.atomic():
            study = study_create(
                owner=owner, name=demo.name, task_type=demo.task_type, config=demo.config, **demo.settings
            )
            if demo.items:
                items_create(study=study, items=demo.items)
            if demo.import_file:
                _import(study, DATA_DIR / demo.import_file)
            if demo.pictures:
                _attach(study, demo.pictures, written)
            return study_set_state(study=study, state=Study.State.OPEN)
    except BaseException:
        written.discard()
        raise


def _attach(study: Study, pictures: dict[str, list[PictureSpec]], written: StoredFiles) -> None:
    """Draw each cartoon once, check and store it through the media home, attach it to its items."""
    from ..media.checks import check_media
    from ..media.store import media_store
    from ..models import Candidate, MediaAttachment
    from .cartoons import draw

    scenes = sorted({p.scene for specs in pictures.values() for p in specs})
    stored = {
        scene: media_store(
            study=study, checked=check_media(draw(scene), f"{scene}.png"), original_name=f"{scene}.png", written=written
        )
        for scene in scenes
    }
    items = {item.external_id: item for item in study.items.filter(external_id__in=list(pictures))}
    candidates = {(c.item_id, c.key): c for c in Candidate.objects.filter(item__in=items.values())}
    MediaAttachment.objects.bulk_create(
        MediaAttachment(
            media=stored[spec.scene],
            item=items[external_id],
            candidate=candidates[(items[external_id].pk, spec.candidate_key)] if spec.candidate_key else None,
            role=spec.role,
            alt_text=spec.alt,
            position=position,
        )
        for external_id, specs in pictures.items()
        for position, spec in enumerate(specs)
    )


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
