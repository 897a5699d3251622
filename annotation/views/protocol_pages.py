"""Protocol templates in the researcher's pages: start a study from one, import its data file."""

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from ..access import owned_study_or_404
from ..importers import FileProblem, item_import_start
from ..models import ItemImport
from ..protocols import TEMPLATES, study_from_template, template_of
from ..protocols.oogiri import VOTING
from ..protocols.oogiri_benchmark import benchmark_tasks_build
from ..protocols.semeval import EDITING, GRADING, grading_items_from_edits
from ..selectors import researcher as selectors
from .researcher import researcher_required


class TemplateStudyForm(forms.Form):
    template = forms.ChoiceField(choices=())
    name = forms.CharField(max_length=200)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        ordered = sorted(TEMPLATES.values(), key=lambda t: (t.protocol, t.key))
        self.fields["template"].choices = [(t.key, f"{t.title} ({t.key})") for t in ordered]


class BenchmarkTasksForm(forms.Form):
    min_votes = forms.IntegerField(min_value=0, initial=100, label="Minimum total votes per prompt")
    per_task = forms.IntegerField(min_value=1, initial=100, label="Prompts per task")
    seed = forms.IntegerField(min_value=0, initial=0, label="Seed (draws prompts, shuffles options)")


class EditsForm(forms.Form):
    editing = forms.ModelChoiceField(queryset=None, label="Editing study", empty_label=None)

    def __init__(self, *args, editing_studies, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["editing"].queryset = editing_studies


def _editing_studies(request: HttpRequest):
    return selectors.studies_owned(user=request.user).filter(protocol=EDITING)


class ProtocolFileForm(forms.Form):
    file = forms.FileField(help_text="CSV (UTF-8), XLSX or JSON Lines shaped like the protocol's data.")


@researcher_required
def study_from_template_view(request: HttpRequest) -> HttpResponse:
    form = TemplateStudyForm(request.POST or None, initial={"template": request.GET.get("template")})
    if request.method == "POST" and form.is_valid():
        try:
            study = study_from_template(
                owner=request.user,
                actor=request.user,
                template=form.cleaned_data["template"],
                name=form.cleaned_data["name"],
            )
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            messages.success(
                request, f"Created “{study.name}” from the {study.protocol} template. Next, import its data."
            )
            target = "researcher:protocol_import" if template_of(study).importer else "researcher:study_items"
            return redirect(target, pk=study.pk)
    templates = sorted(TEMPLATES.values(), key=lambda t: (t.protocol, t.key))
    return render(request, "researcher/study_templates.html", {"form": form, "templates": templates})


@researcher_required
def protocol_import_view(request: HttpRequest, pk: int) -> HttpResponse:
    study = owned_study_or_404(request, pk=pk)
    template = template_of(study)
    form = ProtocolFileForm(request.POST or None, request.FILES or None)
    errors: list[str] = []
    if request.method == "POST" and form.is_valid() and template is not None and template.importer is not None:
        # The same import job as item files: small files run now, big ones in a worker with a status page.
        try:
            with transaction.atomic():
                job = item_import_start(
                    study=study, upload=form.cleaned_data["file"], user=request.user, kind=ItemImport.Kind.PROTOCOL
                )
        except FileProblem as exc:
            errors = exc.messages
        else:
            if job.status == ItemImport.Status.DONE:
                messages.success(request, f"Imported {job.items_created} items and {job.judgments_created} answers.")
                return redirect("researcher:protocol_import", pk=study.pk)
            if job.status != ItemImport.Status.FAILED:
                return redirect("researcher:import_status", pk=study.pk, import_pk=job.pk)
            errors = job.errors
    # Passed as a flag: a template would call the importer function if it looked it up itself.
    context = {
        "study": study,
        "template": template,
        "has_importer": template is not None and template.importer is not None,
        "form": form,
        "errors": errors,
        # The protocol's next steps, offered where its data comes in.
        "benchmark_form": BenchmarkTasksForm() if study.protocol == VOTING else None,
        "edits_form": (EditsForm(editing_studies=_editing_studies(request)) if study.protocol == GRADING else None),
    }
    return render(request, "researcher/protocol_import.html", context, status=400 if errors else 200)


@researcher_required
@require_POST
def oogiri_tasks_view(request: HttpRequest, pk: int) -> HttpResponse:
    """OOGIRI: filter the voting study, take top/bottom responses and create the five benchmark studies."""
    study = owned_study_or_404(request, pk=pk)
    form = BenchmarkTasksForm(request.POST)
    if not form.is_valid():
        messages.error(request, " ".join(e for errors in form.errors.values() for e in errors))
        return redirect("researcher:protocol_import", pk=pk)
    try:
        built = benchmark_tasks_build(
            study=study,
            owner=request.user,
            min_total_votes=form.cleaned_data["min_votes"],
            per_task=form.cleaned_data["per_task"],
            seed=form.cleaned_data["seed"],
        )
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect("researcher:protocol_import", pk=pk)
    names = ", ".join(f"“{s.name}”" for s in built.values())
    messages.success(request, f"Created {len(built)} draft benchmark studies: {names}.")
    return redirect("researcher:study_list")


@researcher_required
@require_POST
def semeval_edits_view(request: HttpRequest, pk: int) -> HttpResponse:
    """SemEval-2020 Task 7: the editors' micro-edits become this grading study's headlines."""
    study = owned_study_or_404(request, pk=pk)
    form = EditsForm(request.POST, editing_studies=_editing_studies(request))
    if not form.is_valid():
        messages.error(request, "Choose one of your SemEval editing studies.")
        return redirect("researcher:protocol_import", pk=pk)
    try:
        added = grading_items_from_edits(editing=form.cleaned_data["editing"], grading=study, actor=request.user)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, f"Added {added} edited headline(s) to grade.")
    return redirect("researcher:protocol_import", pk=pk)
