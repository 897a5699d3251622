# SPDX-License-Identifier: GPL-3.0-or-later
"""The study analysis page: agreement for a rater group, rating distributions,
rater-subset selection, aggregated labels and, for pairwise studies, the
Bradley–Terry leaderboard. An htmx request renders only the part of the page it targets.

The figures are a stored report (``ratings.cached``, kind ``analysis``):
``ratings.analysis.analysis_result`` computes them once per change of the
study's judgments, in a worker (or in the request for a small study), and the
page reads them, saying when they are out of date and polling while they are
recomputed.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET
from django_htmx.http import retarget

from annotation.access import owned_study_or_404
from annotation.task_types import get_task_type

from .analysis import ITEM_ROWS, RATER_ROWS, default_tie_rule, tie_rules_for
from .cached import report_show
from .models import StudyReport
from .rater_groups import groupable_questions
from .selectors import GROUPS, study_raters


class AnalysisForm(forms.Form):
    group = forms.ChoiceField(choices=list(GROUPS.items()), required=False)
    rater = forms.TypedMultipleChoiceField(coerce=int, required=False, label="Only these raters")
    k = forms.IntegerField(min_value=2, max_value=50, required=False, label="Raters to select")
    tie = forms.ChoiceField(choices=(), required=False, label="Majority tie rule")
    by = forms.ChoiceField(required=False, label="Agreement by rater group of")

    def __init__(
        self, *args: Any, raters: list[tuple[int, str]], questions: list[tuple[str, str]], level: str, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.fields["rater"].choices = raters
        # Only the rules that mean something for the task's answers (no "higher rating" on pairwise or picks).
        self.fields["tie"].choices = list(tie_rules_for(level).items())
        self.fields["by"].choices = [("", "(no breakdown)"), *questions]

    def value(self, name: str, default: Any) -> Any:
        if self.is_valid() and self.cleaned_data.get(name) not in (None, "", []):
            return self.cleaned_data[name]
        return default


def _poll_url(request: HttpRequest) -> str:
    query = request.GET.copy()
    query["poll"] = "1"
    return f"{request.path}?{query.urlencode()}"


@require_GET
@login_required
def study_analysis(request: HttpRequest, slug: str) -> HttpResponse:
    study = owned_study_or_404(request, slug=slug)
    task_type = get_task_type(study.task_type)
    raters = [(r.id, f"{r.label} ({r.kind})") for r in study_raters(study=study)]
    questions = [(q.key, f"{q.key}: {q.text}") for q in groupable_questions(study)]
    form = AnalysisForm(request.GET or None, raters=raters, questions=questions, level=task_type.level)
    group = form.value("group", "humans")
    rater_ids = form.value("rater", None)
    k = form.value("k", 3)
    tie = form.value("tie", default_tie_rule(task_type.level))
    params = {"group": group, "rater_ids": sorted(rater_ids) if rater_ids else None, "k": k, "tie": tie}
    if by_question := form.value("by", ""):
        params["by_question"] = by_question
    shown = report_show(study=study, kind=StudyReport.Kind.ANALYSIS, params=params, inline=not request.GET.get("poll"))
    context: dict[str, Any] = {
        "study": study,
        "task_type": task_type,
        "form": form,
        "group": group,
        "k": k,
        "tie_label": tie_rules_for(task_type.level)[tie],
        "tie_choice": len(form.fields["tie"].choices) > 1,
        "rater_rows": RATER_ROWS,
        "item_rows": ITEM_ROWS,
        "show_rater_picker": 0 < len(raters) <= RATER_ROWS,
        "has_questions": bool(questions),
        "shown": shown,
        "poll_url": _poll_url(request),
        **(shown.result or {}),
    }
    template = "ratings/study_analysis.html"
    partial = bool(request.htmx) and not request.htmx.history_restore_request
    if partial and request.htmx.target == "subset":
        if shown.result:
            # The subset form swaps in only its own result.
            return render(request, f"{template}#subset", context)
        # Not computed yet for this k: the whole analysis part says so and polls.
        return retarget(render(request, f"{template}#analysis", context), "#analysis")
    return render(request, f"{template}#analysis" if partial else template, context)
