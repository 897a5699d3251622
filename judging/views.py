"""The researcher's judge pages: judges, prompt templates, runs with live progress, tournaments.

Only the owner sees a judge, and only a study's owner sees or starts its runs;
anything else is a 404. API keys are write-only: no page ever renders one.
"""

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from annotation.access import get_owned_or_404, owned_by, owned_study_or_404
from annotation.allocation import UNIFORM
from annotation.models import Candidate, Study
from annotation.task_types import TASK_TYPES, get_task_type
from annotation.views.researcher import researcher_required
from ratings.cached import report_show
from ratings.models import StudyReport
from ratings.stats.leaderboard import PRINTED_COLUMNS

from .forms import GenerationForm, HumanCheckForm, JudgeForm, RunForm, TemplateForm, TournamentForm
from .models import GeneratorConfig, JudgeConfig, JudgeRun, Tournament
from .selectors import judge_version_rows, run_failure_reasons, run_progress, run_unit_rows, timeout_advice
from .services.connection_test import test_connection
from .services.generation import BARE_PROMPT_TASK_TYPES
from .services.judges import ensure_baseline_judges, judge_create, judge_update
from .services.runs import retryable_units, run_cancel, run_create, run_resume, run_retry_failed
from .services.templates import template_choices, template_save, template_versions
from .services.tournaments import human_check_create, tournament_cancel, tournament_create
from .tournament import SWISS_MIN_PROMPTS, swiss_recommended


def _run_for_user(request: HttpRequest, pk: int) -> JudgeRun:
    return get_owned_or_404(
        JudgeRun.objects.select_related("study", "judge", "template", "retry_of"), user=request.user, pk=pk
    )


def _add_errors(form: Any, exc: ValidationError) -> None:
    if hasattr(exc, "error_dict"):
        for name, errors in exc.error_dict.items():
            form.add_error(name if name in form.fields else None, errors)
    else:
        form.add_error(None, exc)


def _saved[T](request: HttpRequest, form: Any, save: Callable[[], T]) -> T | None:
    """What ``save`` (a service call) returns for a valid posted form; None when nothing was posted, the
    form is invalid, or the service refused (its errors are then on the form, to be shown again)."""
    if request.method != "POST" or not form.is_valid():
        return None
    try:
        return save()
    except ValidationError as exc:
        _add_errors(form, exc)
        return None


def _progress_page(request: HttpRequest, template: str, context: dict[str, Any]) -> HttpResponse:
    """A run's page; only its live progress (the ``progress`` partial) when htmx polls for it."""
    return render(request, f"{template}#progress" if request.htmx else template, context)


def _cancel(
    request: HttpRequest, run: Any, *, cancel: Callable[..., bool], message: str, page: Callable, detail: str
) -> HttpResponse:
    """Cancel a run; htmx gets the run's progress back, a plain form post goes back to the run's page."""
    if cancel(run=run):
        messages.info(request, message)
    if request.htmx:
        return page(request, run)
    return redirect(detail, pk=run.pk)


@researcher_required
def judge_list(request: HttpRequest) -> HttpResponse:
    form = JudgeForm(request.POST or None, instance=JudgeConfig(), owner=request.user)
    judge = _saved(
        request,
        form,
        lambda: judge_create(
            owner=request.user,
            name=form.cleaned_data["name"],
            baseline=form.cleaned_data["baseline"],
            api_key=form.api_key_change() or None,
            **form.settings(),
        ),
    )
    if judge:
        # Its page next: where "Test connection" asks the new judge its first question.
        messages.success(request, f"Judge {judge.name!r} created. Test its connection below.")
        return redirect("judging:judge_edit", pk=judge.pk)
    judges = owned_by(JudgeConfig, user=request.user).current().select_related("rater")
    return render(request, "judging/judge_list.html", {"judges": judges, "form": form})


@researcher_required
@require_POST
def baselines_add(request: HttpRequest) -> HttpResponse:
    ensure_baseline_judges(owner=request.user)
    messages.success(request, "The three baseline judges are ready.")
    return redirect("judging:judge_list")


@researcher_required
def judge_edit(request: HttpRequest, pk: int) -> HttpResponse:
    judge = get_owned_or_404(JudgeConfig, user=request.user, pk=pk)
    # An older version is kept as it was: its page shows it, without a form to change it.
    form = JudgeForm(request.POST or None, instance=judge, owner=request.user) if judge.is_current else None
    version = judge.version
    saved = form and _saved(
        request,
        form,
        lambda: judge_update(
            judge=judge, name=form.cleaned_data["name"], api_key=form.api_key_change(), **form.settings()
        ),
    )
    if saved:
        if saved.version != version:
            messages.success(
                request,
                f"Saved as version {saved.version}: what produces the answers changed, so the new settings are "
                f"judged afresh; version {version} keeps its judgments.",
            )
        else:
            messages.success(request, "Judge saved.")
        return redirect("judging:judge_edit", pk=saved.pk)
    runs = judge.runs.select_related("study")[:50]
    context = {
        "judge": judge,
        "form": form,
        "runs": runs,
        "versions": judge_version_rows(judge=judge),
        "test_task_types": TASK_TYPES,
    }
    return render(request, "judging/judge_edit.html", context)


@require_POST
@researcher_required
def judge_test(request: HttpRequest, pk: int) -> HttpResponse:
    """One real call to the judge's endpoint about a sample item: the raw answer and how it was read."""
    judge = get_owned_or_404(JudgeConfig, user=request.user, pk=pk)
    task_type = request.POST.get("task_type") or next(iter(TASK_TYPES))
    if task_type not in TASK_TYPES:
        return HttpResponse(f"Unknown task type {task_type!r}.", status=400, content_type="text/plain")
    if judge.is_baseline:
        return HttpResponse("A baseline judge makes no calls: there is nothing to test.", status=400)
    result = test_connection(judge=judge, task_type=task_type)
    template = "judging/judge_edit.html#connection-result"
    return render(request, template, {"judge": judge, "result": result, "task_title": TASK_TYPES[task_type].title})


def study_runs_page(
    request: HttpRequest,
    study: Study,
    *,
    form: RunForm | None = None,
    generation_form: GenerationForm | None = None,
    status: int = 200,
) -> HttpResponse:
    """The study's runs page: judge runs, candidate generation, and the way to a tournament."""
    contestants = Candidate.objects.filter(item__study=study).values("key").distinct().count()
    return render(
        request,
        "judging/study_runs.html",
        {
            "study": study,
            "form": form or RunForm(owner=request.user),
            "generation_form": generation_form or GenerationForm(owner=request.user),
            "runs": study.judge_runs.select_related("judge")[:100],
            "generation_runs": study.generation_runs.prefetch_related("generators")[:100],
            "has_judges": owned_by(JudgeConfig, user=request.user).exists(),
            "has_generators": owned_by(GeneratorConfig, user=request.user).exists(),
            "takes_generated_candidates": get_task_type(study.task_type).candidates[1] != 2,
            # Items with a set of candidates (not a fixed pair) can seed a tournament between them.
            "candidate_sets": get_task_type(study.task_type).candidates not in ((0, 0), (2, 2)),
            "bare_prompt_task_types": BARE_PROMPT_TASK_TYPES,
            "contestants": contestants,
        },
        status=status,
    )


@researcher_required
def study_runs(request: HttpRequest, study_pk: int) -> HttpResponse:
    study = owned_study_or_404(request, pk=study_pk)
    form = RunForm(request.POST or None, owner=request.user)
    run = _saved(
        request,
        form,
        lambda: run_create(
            study=study,
            judge=form.cleaned_data["judge"],
            trials=form.cleaned_data["trials"],
            both_orders=form.cleaned_data["both_orders"] or None,
            created_by=request.user,
            allocation_policy=form.cleaned_data["allocation_policy"] or UNIFORM,
        ),
    )
    if run:
        return redirect("judging:run_detail", pk=run.pk)
    return study_runs_page(request, study, form=form)


UNITS_PER_PAGE = 50


def _run_page(request: HttpRequest, run: JudgeRun) -> HttpResponse:
    problems_only = request.GET.get("show") == "problems"
    progress = run_progress(run=run)
    units = Paginator(run_unit_rows(run=run, progress=progress, problems_only=problems_only), UNITS_PER_PAGE)
    reasons = run_failure_reasons(run=run)
    context = {
        "run": run,
        "progress": progress,
        "reasons": reasons,
        "timeout_advice": timeout_advice(run=run, reasons=reasons),
        "units": units.get_page(request.GET.get("page")),
        "problems_only": problems_only,
        "can_retry": not run.is_active and retryable_units(run).exists(),
        "retries": run.retries.order_by("pk"),
    }
    return _progress_page(request, "judging/run_detail.html", context)


@researcher_required
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    return _run_page(request, _run_for_user(request, pk))


@researcher_required
@require_POST
def run_cancel_view(request: HttpRequest, pk: int) -> HttpResponse:
    return _cancel(
        request,
        _run_for_user(request, pk),
        cancel=run_cancel,
        message="Run cancelled. Answers already on their way are still recorded.",
        page=_run_page,
        detail="judging:run_detail",
    )


@researcher_required
@require_POST
def run_resume_view(request: HttpRequest, pk: int) -> HttpResponse:
    run = run_resume(run=_run_for_user(request, pk))
    messages.info(request, "Run queued again; judged items are kept.")
    return redirect("judging:run_detail", pk=run.pk)


@researcher_required
@require_POST
def run_retry_view(request: HttpRequest, pk: int) -> HttpResponse:
    run = _run_for_user(request, pk)
    try:
        retry = run_retry_failed(run=run, created_by=request.user)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect("judging:run_detail", pk=run.pk)
    count = "" if retry.preparing else f"{retry.units.count()} "
    messages.info(request, f"Asking again for the {count}failed or unparseable units of run {run.pk}.")
    return redirect("judging:run_detail", pk=retry.pk)


@researcher_required
def template_list(request: HttpRequest) -> HttpResponse:
    form = TemplateForm(request.POST or None)
    template = _saved(request, form, lambda: template_save(owner=request.user, **form.cleaned_data))
    if template:
        messages.success(request, f"Saved {template}.")
        return redirect("judging:template_edit", name=template.name)
    own, shared = template_choices(user=request.user)
    return render(request, "judging/template_list.html", {"own": own, "shared": shared, "form": form})


@researcher_required
def template_edit(request: HttpRequest, name: str) -> HttpResponse:
    """One template name as this researcher sees it: their own versions, then the shared (built-in) ones.

    Saving always makes a version of the researcher's own: a built-in is never changed, editing
    it makes their copy. Another researcher's template of this name is not there (404).
    """
    versions = template_versions(user=request.user, name=name)
    if not versions:
        raise Http404("No such template.")
    current = versions[0]
    initial = {
        "name": current.name,
        "task_type": current.task_type,
        "description": current.description,
        "system_text": current.system_text,
        "user_text": current.user_text,
    }
    form = TemplateForm(request.POST or None, initial=initial)
    form.fields["name"].disabled = True
    form.fields["task_type"].disabled = True
    template = _saved(
        request,
        form,
        lambda: template_save(
            owner=request.user,
            name=current.name,
            task_type=current.task_type,
            description=form.cleaned_data["description"],
            system_text=form.cleaned_data["system_text"],
            user_text=form.cleaned_data["user_text"],
            response_schema=current.response_schema,
        ),
    )
    if template:
        copy = "your copy " if current.shared else ""
        messages.success(request, f"Saved {copy}as version {template.version}.")
        return redirect("judging:template_edit", name=name)
    next_version = max(v.version for v in versions) + 1
    return render(
        request,
        "judging/template_edit.html",
        {"current": current, "versions": versions, "form": form, "next_version": next_version},
    )


@researcher_required
def tournament_new(request: HttpRequest, study_pk: int) -> HttpResponse:
    study = owned_study_or_404(request, pk=study_pk)
    form = TournamentForm(request.POST or None, owner=request.user)
    tournament = _saved(
        request, form, lambda: tournament_create(owner=request.user, source_study=study, **form.cleaned_data)
    )
    if tournament:
        return redirect("judging:tournament_detail", pk=tournament.pk)
    n_prompts = study.items.filter(is_attention_check=False).count()
    return render(
        request,
        "judging/tournament_new.html",
        {
            "study": study,
            "form": form,
            "n_prompts": n_prompts,
            "swiss_recommended": swiss_recommended(n_prompts),
            "swiss_min_prompts": SWISS_MIN_PROMPTS,
        },
    )


@researcher_required
def tournament_detail(request: HttpRequest, pk: int) -> HttpResponse:
    tournament = get_owned_or_404(
        Tournament.objects.select_related("judge", "source_study", "match_study"), user=request.user, pk=pk
    )
    # The leaderboard is a stored report recomputed by a worker when verdicts arrive (ratings.cached);
    # the page's 2-second poll (an htmx request) only reads it, never computes.
    shown = report_show(
        study=tournament.match_study,
        kind=StudyReport.Kind.TOURNAMENT,
        params={"rater_id": tournament.judge.rater_id},
        inline=not request.htmx,
    )
    figures = shown.result or {}
    context = {
        "tournament": tournament,
        "shown": shown,
        "board": figures.get("board"),
        "standings": figures.get("standings", []),
        "warnings": figures.get("warnings", []),
        "position": figures.get("position", ""),
        "columns": PRINTED_COLUMNS,
        "matches": tournament.match_study.items.count(),
        "verdicts": figures.get("verdicts", 0),
        "runs": tournament.runs.order_by("pk"),
        "human_check_form": HumanCheckForm(),
    }
    if request.htmx:
        return render(request, "judging/tournament_detail.html#standings", context)
    return render(request, "judging/tournament_detail.html", context)


@researcher_required
@require_POST
def tournament_human_check(request: HttpRequest, pk: int) -> HttpResponse:
    """A blind A/B/tie study of people over a sample of the tournament's judged pairs (HumorRank's human check)."""
    tournament = get_owned_or_404(Tournament, user=request.user, pk=pk)
    form = HumanCheckForm(request.POST)
    if not form.is_valid():
        messages.error(request, " ".join(e for errors in form.errors.values() for e in errors))
        return redirect("judging:tournament_detail", pk=pk)
    try:
        study = human_check_create(
            owner=request.user,
            tournament=tournament,
            n_pairs=form.cleaned_data["pairs"],
            seed=form.cleaned_data["seed"],
        )
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect("judging:tournament_detail", pk=pk)
    messages.success(
        request,
        f"Created the draft human check “{study.name}” with {study.items.count()} pairs; open it to collect votes.",
    )
    return redirect("researcher:study_detail", pk=study.pk)


@researcher_required
@require_POST
def tournament_cancel_view(request: HttpRequest, pk: int) -> HttpResponse:
    tournament = get_owned_or_404(Tournament, user=request.user, pk=pk)
    tournament_cancel(tournament=tournament)
    return redirect("judging:tournament_detail", pk=pk)
