"""Protocol templates in the researcher's pages: start a study from one, import its data file."""

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from ..protocols import TEMPLATES, protocol_import, study_from_template, template_of
from .researcher import _study_for_user, researcher_required


class TemplateStudyForm(forms.Form):
    template = forms.ChoiceField(choices=())
    name = forms.CharField(max_length=200)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        ordered = sorted(TEMPLATES.values(), key=lambda t: (t.protocol, t.key))
        self.fields["template"].choices = [(t.key, f"{t.title} ({t.key})") for t in ordered]


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
    study = _study_for_user(request, pk)
    template = template_of(study)
    form = ProtocolFileForm(request.POST or None, request.FILES or None)
    errors: list[str] = []
    if request.method == "POST" and form.is_valid() and template is not None and template.importer is not None:
        upload = form.cleaned_data["file"]
        result = protocol_import(study=study, data=upload.read(), filename=upload.name, actor=request.user)
        if result.ok:
            messages.success(request, f"Imported {result.items} items and {result.judgments} answers.")
            return redirect("researcher:protocol_import", pk=study.pk)
        errors = result.errors
    # Passed as a flag: a template would call the importer function if it looked it up itself.
    context = {
        "study": study,
        "template": template,
        "has_importer": template is not None and template.importer is not None,
        "form": form,
        "errors": errors,
    }
    return render(request, "researcher/protocol_import.html", context, status=400 if errors else 200)
