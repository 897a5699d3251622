"""Give the templates made before templates had owners an owner, and pin every judge's templates.

Until now every template was global: any researcher could save a new version of any name,
and a judge named its templates, so its next run took whatever version was newest.

Who owns a template (every version of one name goes together):
- the researchers whose judges name it (for its own task type: they are the ones relying
  on it; a judge naming it for another task type had its runs refused). With one such
  researcher the versions become theirs; with several, each gets a copy of every version
  (same name and version numbers) and their own earlier runs point at their copy;
- else the one researcher who wrote all its versions (``created_by``);
- else nobody: it stays shared, readable by everyone and changed by no one, like a
  built-in (anyone may copy it). Built-ins stay shared.

Pins: each judge is pinned, per task type it named, to the newest version its owner can
now see of that name (their own first, then the built-in) — the version its next run
would have used, so no judge's prompt changes. A name that no longer resolves, or resolves
to a template of another task type (a run would have been refused), is dropped and the
task type's built-in default applies. Judges that named no template keep the built-in
default: an edited built-in used to change every researcher's judges, which is what this
change stops; the researcher who made that edit now owns it and can choose it.
"""

from collections import defaultdict

from django.db import migrations


def _owners_of_names(JudgeConfig, PromptTemplate) -> dict[str, list[int]]:
    """For each template name, the owners of the judges that name it for its own task type (a run of
    theirs used it; under another task type it was refused), in the order of their first judge."""
    task_type_of = dict(PromptTemplate.objects.order_by("name", "version").values_list("name", "task_type"))
    users: dict[str, list[int]] = defaultdict(list)
    for judge in JudgeConfig.objects.order_by("pk"):
        for task_type, name in (judge.templates or {}).items():
            if task_type_of.get(name) == task_type and judge.owner_id not in users[name]:
                users[name].append(judge.owner_id)
    return users


def _copy(PromptTemplate, template, owner_id: int):
    copy = PromptTemplate.objects.create(
        owner_id=owner_id,
        name=template.name,
        version=template.version,
        task_type=template.task_type,
        description=template.description,
        system_text=template.system_text,
        user_text=template.user_text,
        response_schema=template.response_schema,
        builtin=False,
        created_by_id=template.created_by_id,
    )
    PromptTemplate.objects.filter(pk=copy.pk).update(created_at=template.created_at)
    return copy


def _ensure_builtin(PromptTemplate, name: str) -> None:
    """Built-ins are written to the database when first used; a judge naming one gets its row now."""
    from judging.prompts.builtin import builtin

    spec = builtin(name)
    if spec is None or PromptTemplate.objects.filter(owner__isnull=True, name=name, version=1).exists():
        return
    PromptTemplate.objects.create(
        name=spec.name,
        version=1,
        task_type=spec.task_type,
        description=spec.description,
        system_text=spec.system,
        user_text=spec.user,
        response_schema=spec.response_schema,
        builtin=True,
    )


def assign_owners(apps, schema_editor):
    PromptTemplate = apps.get_model("judging", "PromptTemplate")
    JudgeConfig = apps.get_model("judging", "JudgeConfig")
    JudgeTemplate = apps.get_model("judging", "JudgeTemplate")
    JudgeRun = apps.get_model("judging", "JudgeRun")

    users = _owners_of_names(JudgeConfig, PromptTemplate)
    versions: dict[str, list] = defaultdict(list)
    for template in PromptTemplate.objects.filter(builtin=False).order_by("name", "version"):
        versions[template.name].append(template)

    for name, rows in versions.items():
        relying = users.get(name, [])
        if relying:
            first, *others = relying
            PromptTemplate.objects.filter(pk__in=[t.pk for t in rows]).update(owner_id=first)
            for owner_id in others:
                for template in rows:
                    copy = _copy(PromptTemplate, template, owner_id)
                    JudgeRun.objects.filter(judge__owner_id=owner_id, template_id=template.pk).update(template=copy)
            continue
        authors = {t.created_by_id for t in rows}
        if len(authors) == 1 and None not in authors:
            PromptTemplate.objects.filter(pk__in=[t.pk for t in rows]).update(owner_id=authors.pop())

    for judge in JudgeConfig.objects.order_by("pk"):
        for task_type, name in (judge.templates or {}).items():
            if not isinstance(name, str):
                continue
            _ensure_builtin(PromptTemplate, name)
            template = (
                PromptTemplate.objects.filter(owner_id=judge.owner_id, name=name).order_by("-version").first()
                or PromptTemplate.objects.filter(owner__isnull=True, name=name)
                .order_by("-builtin", "-version")
                .first()
            )
            if template is not None and template.task_type == task_type:
                JudgeTemplate.objects.create(judge=judge, task_type=task_type, template=template)


def names_from_pins(apps, schema_editor):
    """Going back: judges name their pinned templates again (owners and copies stay)."""
    JudgeConfig = apps.get_model("judging", "JudgeConfig")
    JudgeTemplate = apps.get_model("judging", "JudgeTemplate")
    for judge in JudgeConfig.objects.all():
        pins = JudgeTemplate.objects.filter(judge=judge).select_related("template")
        judge.templates = {pin.task_type: pin.template.name for pin in pins}
        judge.save(update_fields=["templates"])


class Migration(migrations.Migration):
    dependencies = [("judging", "0003_template_owners_and_judge_pins")]

    operations = [migrations.RunPython(assign_owners, names_from_pins)]
