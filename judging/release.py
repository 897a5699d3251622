# SPDX-License-Identifier: GPL-3.0-or-later
"""Every LLM judge's provenance in a study's release bundle (``judges.json``).

Per run over the study: the judge (name, version), the endpoint's host (never
the URL's credentials, path or the key), the model, the settings that shape an
answer (``judging.services.judges.ANSWER_SETTINGS``), the prompt template's
name, version and full text, the run's design (trials, both orders), its dates
and status, and what it used (calls, tokens, cost, answers unparseable or failed).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from annotation.models import Study
from ratings.release import ReleasePart, register_part

from .models import JudgeRun
from .selectors import run_progress
from .services.judges import ANSWER_SETTINGS
from .services.templates import judge_template

NAME = "judges.json"


def _host(base_url: str) -> str:
    try:
        parts = urlsplit(base_url)
        return parts.hostname + (f":{parts.port}" if parts.port else "") if parts.hostname else ""
    except ValueError:
        return ""


def _when(moment) -> str | None:
    return moment.isoformat() if moment else None


def judges_provenance(study: Study) -> dict[str, Any]:
    runs = JudgeRun.objects.filter(study=study).select_related("judge", "template").order_by("created_at", "id")
    entries = []
    for run in runs:
        judge = run.judge
        settings = {key: getattr(judge, key) for key in ANSWER_SETTINGS if key != "base_url"}
        template = run.template or (judge_template(judge=judge, task_type=study.task_type, protocol=study.protocol))
        progress = run_progress(run=run)
        entries.append(
            {
                "run": run.pk,
                "judge": {"name": judge.name, "version": judge.version, "rater_id": judge.rater_id},
                "baseline": judge.baseline or None,
                "endpoint_host": _host(judge.base_url) if not judge.baseline else None,
                "model": judge.model or None,
                "settings": settings,
                "trials": run.trials,
                "both_orders": run.both_orders,
                "prompt_template": None
                if judge.baseline
                else {
                    "name": template.name,
                    "version": template.version,
                    "builtin": template.builtin,
                    "system": template.system_text,
                    "user": template.user_text,
                    "response_schema": template.response_schema,
                },
                "status": run.status,
                "created_at": _when(run.created_at),
                "started_at": _when(run.started_at),
                "finished_at": _when(run.finished_at),
                "usage": {
                    "calls": progress.calls,
                    "tokens": progress.tokens,
                    "cost": progress.cost,
                },
                "answers": {
                    "judged": progress.judged,
                    "unparseable": progress.unparseable,
                    "failed": progress.failed,
                    "total": progress.total,
                },
            }
        )
    return {"study": study.slug, "runs": entries}


def judges_card(content: dict[str, Any]) -> str:
    runs = content["runs"]
    if not runs:
        return "## LLM judges\n\nNo LLM judge ran on this study."
    lines = ["## LLM judges", "", "| judge | model | endpoint | prompt | trials | judged | unparseable | tokens |"]
    lines.append("|---|---|---|---|---|---|---|---|")
    for run in runs:
        prompt = run["prompt_template"]
        shown = f"{prompt['name']} v{prompt['version']}" if prompt else "—"
        tokens = run["usage"]["tokens"] or 0
        judge = run["judge"]
        lines.append(
            f"| {judge['name']} v{judge['version']} | {run['model'] or run['baseline']} | {run['endpoint_host'] or '—'} "
            f"| {shown} | {run['trials']}{' (both orders)' if run['both_orders'] else ''} "
            f"| {run['answers']['judged']} | {run['answers']['unparseable']} | {tokens} |"
        )
    lines += ["", f"Prompts in full, sampling settings and dates: `{NAME}`."]
    return "\n".join(lines)


def register() -> None:
    register_part(
        ReleasePart(
            name=NAME,
            build=judges_provenance,
            description="every LLM judge run: endpoint host, model, prompt text and version, settings, dates, usage.",
            card=judges_card,
        )
    )
