"""The researcher's candidate-generation pages: generators, starting a generation run, watching it.

Only the owner sees a generator, and only a study's owner sees or starts its
generation runs; anything else is a 404. API keys are write-only.
"""

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from annotation.access import get_owned_or_404, owned_by, owned_study_or_404
from annotation.views.researcher import researcher_required

from .forms import GenerationForm, GeneratorForm
from .generation_selectors import generation_progress, truncated_candidates
from .models import GenerationRun, GeneratorConfig, UnitStatus
from .services.generation import (
    generation_run_cancel,
    generation_run_create,
    generation_run_resume,
    generator_create,
    generator_update,
)
from .views import _cancel, _progress_page, _saved, study_runs_page


def _generation_for_user(request: HttpRequest, pk: int) -> GenerationRun:
    return get_owned_or_404(GenerationRun.objects.select_related("study"), user=request.user, pk=pk)


@researcher_required
def generator_list(request: HttpRequest) -> HttpResponse:
    form = GeneratorForm(request.POST or None, instance=GeneratorConfig())
    generator = _saved(
        request,
        form,
        lambda: generator_create(
            owner=request.user,
            name=form.cleaned_data["name"],
            api_key=form.api_key_change() or None,
            **form.settings(),
        ),
    )
    if generator:
        messages.success(request, f"Generator {generator.name!r} created.")
        return redirect("judging:generator_list")
    generators = owned_by(GeneratorConfig, user=request.user)
    return render(request, "judging/generator_list.html", {"generators": generators, "form": form})


@researcher_required
def generator_edit(request: HttpRequest, pk: int) -> HttpResponse:
    generator = get_owned_or_404(GeneratorConfig, user=request.user, pk=pk)
    form = GeneratorForm(request.POST or None, instance=generator)
    saved = _saved(
        request,
        form,
        lambda: generator_update(
            generator=generator, name=form.cleaned_data["name"], api_key=form.api_key_change(), **form.settings()
        ),
    )
    if saved:
        messages.success(request, "Generator saved.")
        return redirect("judging:generator_edit", pk=generator.pk)
    runs = generator.runs.select_related("study")[:50]
    return render(request, "judging/generator_edit.html", {"generator": generator, "form": form, "runs": runs})


@researcher_required
@require_POST
def generation_new(request: HttpRequest, study_pk: int) -> HttpResponse:
    study = owned_study_or_404(request, pk=study_pk)
    form = GenerationForm(request.POST, owner=request.user)
    run = _saved(
        request,
        form,
        lambda: generation_run_create(
            study=study, generators=list(form.cleaned_data["generators"]), created_by=request.user
        ),
    )
    if run:
        return redirect("judging:generation_detail", pk=run.pk)
    return study_runs_page(request, study, generation_form=form, status=400)


def _generation_page(request: HttpRequest, run: GenerationRun) -> HttpResponse:
    failures = run.units.filter(status=UnitStatus.FAILED).select_related("item", "generator").order_by("pk")[:20]
    context = {
        "run": run,
        "progress": generation_progress(run=run),
        "failures": failures,
        "truncated": truncated_candidates(run=run),
    }
    return _progress_page(request, "judging/generation_detail.html", context)


@researcher_required
def generation_detail(request: HttpRequest, pk: int) -> HttpResponse:
    return _generation_page(request, _generation_for_user(request, pk))


@researcher_required
@require_POST
def generation_cancel_view(request: HttpRequest, pk: int) -> HttpResponse:
    return _cancel(
        request,
        _generation_for_user(request, pk),
        cancel=generation_run_cancel,
        message="Generation cancelled. Candidates already on their way are still kept.",
        page=_generation_page,
        detail="judging:generation_detail",
    )


@researcher_required
@require_POST
def generation_resume_view(request: HttpRequest, pk: int) -> HttpResponse:
    run = generation_run_resume(run=_generation_for_user(request, pk))
    messages.info(request, "Generation queued again; candidates already written are kept.")
    return redirect("judging:generation_detail", pk=run.pk)
