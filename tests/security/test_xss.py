# SPDX-License-Identifier: GPL-3.0-or-later
"""Script in anything a researcher imports or a rater writes is shown as text, never run.

Payloads go into every field that reaches a page: study name, description, consent and
instructions; item prompt, text, metadata and candidate texts; the candidates'
provenance (the contestants of rankings); a judge's and a tournament's name; an import's
error messages; an annotator's written explanation and micro-edit word. Then every page
that shows them, and the SVG figures, must hold none of them unescaped.
"""

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from annotation.models import Study
from annotation.services.studies import CandidateSpec, ItemSpec, items_create, study_create, study_set_state
from judging.services.judges import judge_create
from judging.services.runs import run_create
from judging.services.tournaments import tournament_create
from ratings.alignment.base import AlignmentParams
from ratings.alignment.tasks import report_request
from tests.ratings.test_selectors import add_rater, judge

from .conftest import annotator_url, begin_as_crowdworker

pytestmark = pytest.mark.django_db

SCRIPT = "<script>alert(1)</script>"
BREAKOUT = '"><img src=x onerror=alert(1)>'
# One word with no spaces or angle brackets: a valid micro-edit answer that would end an HTML attribute.
ATTRIBUTE = '"onmouseover=alert(1)'
# What must never appear as it was written: each would run if the page held it raw.
RAW = (SCRIPT, "<img src=x onerror=alert(1)>", ATTRIBUTE)
ASSIGNMENT = re.compile(r'name="assignment" value="(\d+)"')
FIGURE = re.compile(r'"(/alignment/[^"]+\.svg)(?:\?[^"]*)?"')


def assert_escaped(response, where: str) -> None:
    assert response.status_code == 200, f"{where}: {response.status_code}"
    content = response.content.decode()
    for payload in RAW:
        assert payload not in content, f"{where} shows {payload!r} unescaped"


def answer(client: Client, study: Study, data: dict):
    page = client.get(annotator_url(study, "item"))
    assignment = ASSIGNMENT.search(page.content.decode()).group(1)
    return client.post(annotator_url(study, "item"), {**data, "assignment": assignment})


@pytest.fixture
def owner(client, researcher):
    client.force_login(researcher)
    return client


@pytest.fixture
def hostile(researcher):
    """Studies, a judge, a run and a tournament carrying the payloads; the studies open."""
    ordinal = study_create(
        owner=researcher,
        name=f"Jokes {SCRIPT}",
        task_type="ordinal",
        description=BREAKOUT,
        consent_text=f"Consent {SCRIPT} {BREAKOUT}",
        instructions_text=f"Instructions {SCRIPT} {BREAKOUT}",
        quota_per_item=5,
    )
    items_create(
        study=ordinal,
        items=[
            ItemSpec(
                external_id=f"joke-{i}",
                prompt=f"{SCRIPT} prompt",
                text=f"{BREAKOUT} text {i}",
                metadata={"joke_type": SCRIPT if i % 2 else BREAKOUT, BREAKOUT: SCRIPT},
            )
            for i in range(4)
        ],
    )
    pairwise = study_create(owner=researcher, name=f"Pairs {BREAKOUT}", task_type="pairwise", quota_per_item=5)
    items_create(
        study=pairwise,
        items=[
            ItemSpec(
                external_id=f"pair-{i}",
                prompt=f"Headline {SCRIPT}",
                candidates=[
                    CandidateSpec(key="x", text=f"{SCRIPT} joke {i}", provenance={"model": SCRIPT}),
                    CandidateSpec(key="y", text=f"{BREAKOUT} joke {i}", provenance={"model": BREAKOUT}),
                ],
            )
            for i in range(4)
        ],
    )
    explanation = study_create(owner=researcher, name="Explain", task_type="explanation")
    items_create(study=explanation, items=[ItemSpec(external_id="e1", text="Why did the chicken cross the road?")])
    micro = study_create(owner=researcher, name="Edit", task_type="micro_edit")
    items_create(study=micro, items=[ItemSpec(external_id="m1", text=f"Man bites <dog/> today {SCRIPT}")])
    for study in (ordinal, pairwise, explanation, micro):
        study_set_state(study=study, state="open")

    hostile_judge = judge_create(owner=researcher, name=f"judge {SCRIPT}", baseline="random")
    for i, item in enumerate(ordinal.items.order_by("position")):
        judge(ordinal, hostile_judge.rater, item, {"rating": i % 4})
    humans = [add_rater(pairwise, f"voter-{n}") for n in range(3)]
    for i, item in enumerate(pairwise.items.order_by("position")):
        for n, human in enumerate(humans):
            judge(pairwise, human, item, {"choice": "x" if (i + n) % 3 else "y"})
        judge(pairwise, hostile_judge.rater, item, {"choice": "x" if i % 2 else "y"})
    run = run_create(study=ordinal, judge=hostile_judge, created_by=researcher, enqueue=False)
    tournament = tournament_create(
        owner=researcher, name=f"Cup {BREAKOUT}", source_study=pairwise, judge=hostile_judge, enqueue=False
    )
    return {
        "ordinal": ordinal,
        "pairwise": pairwise,
        "explanation": explanation,
        "micro": micro,
        "judge": hostile_judge,
        "run": run,
        "tournament": tournament,
    }


class TestAnnotatorPages:
    def test_consent_instructions_and_the_item_show_the_payloads_as_text(self, hostile):
        crowd = Client()
        study = hostile["ordinal"]
        crowd.get(annotator_url(study), {"PROLIFIC_PID": "w1"})
        consent = crowd.get(annotator_url(study, "consent"))
        assert_escaped(consent, "consent page")
        assert "Consent &lt;script&gt;alert(1)&lt;/script&gt;" in consent.content.decode()
        crowd.post(annotator_url(study, "consent"), {"decision": "agree"})
        assert_escaped(crowd.get(annotator_url(study, "instructions")), "instructions page")
        crowd.post(annotator_url(study, "instructions"))
        item = crowd.get(annotator_url(study, "item"))
        assert_escaped(item, "ordinal item page")
        assert "&lt;script&gt;alert(1)&lt;/script&gt; prompt" in item.content.decode()

    def test_candidate_texts_are_escaped(self, hostile):
        crowd = Client()
        begin_as_crowdworker(crowd, hostile["pairwise"], "w2")
        page = crowd.get(annotator_url(hostile["pairwise"], "item"))
        assert_escaped(page, "pairwise item page")
        assert "&lt;script&gt;alert(1)&lt;/script&gt; joke" in page.content.decode()

    def test_a_refused_micro_edit_is_shown_back_escaped(self, hostile):
        crowd = Client()
        begin_as_crowdworker(crowd, hostile["micro"], "w3")
        refused = answer(crowd, hostile["micro"], {"replacement": SCRIPT})
        assert refused.status_code == 422
        for payload in RAW:
            assert payload not in refused.content.decode()
        accepted = answer(crowd, hostile["micro"], {"replacement": ATTRIBUTE})
        assert accepted.status_code == 302
        assert hostile["micro"].judgments.get().value == {"replacement": ATTRIBUTE}

    def test_a_written_explanation_is_stored_as_written(self, hostile):
        crowd = Client()
        begin_as_crowdworker(crowd, hostile["explanation"], "w4")
        text = f"Because {SCRIPT} and {BREAKOUT}"
        assert answer(crowd, hostile["explanation"], {"text": text}).status_code == 302
        assert hostile["explanation"].judgments.get().value == {"text": text}


class TestResearcherPages:
    def test_no_page_showing_the_payloads_holds_them_unescaped(self, hostile, owner):
        # Answers written by annotators, so they reach progress, analysis and exports too.
        for study, pid, data in (
            (hostile["explanation"], "w5", {"text": f"Because {SCRIPT} and {BREAKOUT}"}),
            (hostile["micro"], "w6", {"replacement": ATTRIBUTE}),
            (hostile["ordinal"], "w7", {"rating": "2"}),
        ):
            crowd = Client()
            begin_as_crowdworker(crowd, study, pid)
            assert answer(crowd, study, data).status_code == 302
        # A failed upload: its error messages quote the bad row.
        # BREAKOUT starts with a quote, so it is written quoted (doubled) as a spreadsheet would write
        # it; unquoted, it opens a cell that never closes, which the reader now refuses as a whole.
        breakout = '"' + BREAKOUT.replace('"', '""') + '"'
        bad = f"id,text,gold\n{SCRIPT},{breakout},9\n".encode()
        upload = owner.post(
            reverse("researcher:study_items", args=[hostile["ordinal"].pk]),
            {"file": SimpleUploadedFile("bad.csv", bad)},
        )
        import_status = upload["Location"]

        pages = {"study list": reverse("researcher:study_list"), "import status": import_status}
        for key in ("ordinal", "pairwise", "explanation", "micro"):
            study = hostile[key]
            pages |= {
                f"{key} detail": reverse("researcher:study_detail", args=[study.pk]),
                f"{key} items": reverse("researcher:study_items", args=[study.pk]),
                f"{key} progress": reverse("researcher:progress", args=[study.pk]),
                f"{key} analysis": reverse("ratings:study_analysis", args=[study.slug]),
                f"{key} exports": reverse("exports:page", args=[study.slug]),
                f"{key} runs": reverse("judging:study_runs", args=[study.pk]),
            }
        for key in ("ordinal", "pairwise"):
            slug = hostile[key].slug
            pages[f"{key} alignment"] = reverse("alignment:report", args=[slug])
            pages[f"{key} judge comparison"] = reverse("alignment:judges", args=[slug])
            pages[f"{key} alignment by metadata"] = reverse("alignment:report", args=[slug]) + "?breakdown=joke_type"
        pages |= {
            "judge list": reverse("judging:judge_list"),
            "judge edit": reverse("judging:judge_edit", args=[hostile["judge"].pk]),
            "run detail": reverse("judging:run_detail", args=[hostile["run"].pk]),
            "tournament": reverse("judging:tournament_detail", args=[hostile["tournament"].pk]),
            "new tournament": reverse("judging:tournament_new", args=[hostile["pairwise"].pk]),
        }
        figures = []
        for where, url in pages.items():
            response = owner.get(url)
            assert_escaped(response, where)
            if "alignment" in where:
                figures += FIGURE.findall(response.content.decode())
        # The payload names reach the figures: judges in every one, contestants in the leaderboard.
        assert any("leaderboard" in f for f in figures) and any("distributions" in f for f in figures)
        for figure in set(figures):
            response = owner.get(figure)
            assert response["Content-Type"].startswith("image/svg+xml")
            assert_escaped(response, figure)

    def test_the_payloads_do_reach_the_pages_escaped(self, hostile, owner):
        """The check above means something only if the payloads are on those pages at all."""
        detail = owner.get(reverse("researcher:study_detail", args=[hostile["ordinal"].pk])).content.decode()
        assert "Jokes &lt;script&gt;alert(1)&lt;/script&gt;" in detail
        items = owner.get(reverse("researcher:study_items", args=[hostile["pairwise"].pk])).content.decode()
        assert "&lt;script&gt;alert(1)&lt;/script&gt; joke" in items
        judges = owner.get(reverse("judging:judge_list")).content.decode()
        assert "judge &lt;script&gt;alert(1)&lt;/script&gt;" in judges
        report_request(study=hostile["pairwise"], params=AlignmentParams(seed=hostile["pairwise"].seed), inline=True)
        report = owner.get(reverse("alignment:report", args=[hostile["pairwise"].slug])).content.decode()
        assert "judge &lt;script&gt;alert(1)&lt;/script&gt;" in report
        leaderboard = next(f for f in FIGURE.findall(report) if "leaderboard" in f)
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in owner.get(leaderboard).content.decode()
