"""One leaderboard: the tournament page, the HumorRank report and the export print the same numbers.

Also what a leaderboard says about the order of presentation (position
consistency, a warning for a judge that favours the first-shown joke) and how
a both-orders tournament spends its budget.
"""

import re
from html import unescape

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from openpyxl import load_workbook

from annotation.models import Judgment
from annotation.protocols import protocol_import, study_from_template
from annotation.protocols.humorrank import CONTEST
from judging.models import JudgeConfig
from judging.services.judges import judge_find_or_create
from judging.services.tournaments import process_tournament, tournament_create
from ratings.exports.workbook import write_workbook
from ratings.protocols import protocol_report, report_json

pytestmark = pytest.mark.django_db

CONTESTANTS = ("ada", "bo", "cy", "di")
CONTEST_CSV = "prompt_id,prompt,contestant,joke\n" + "".join(
    f"p{n},Headline {n},{name},Joke {n} by {name} {'!' * (n + k)}\n"
    for n in range(4)
    for k, name in enumerate(CONTESTANTS)
)


def contest(owner):
    study = study_from_template(owner=owner, template=CONTEST, name="Contest")
    assert protocol_import(study=study, data=CONTEST_CSV.encode(), filename="c.csv").ok
    return study


def played(owner, judge, **options):
    tournament = tournament_create(
        owner=owner, name=options.pop("name", "Cup"), source_study=contest(owner), judge=judge, enqueue=False, **options
    )
    process_tournament(tournament_id=tournament.pk)
    tournament.refresh_from_db()
    assert tournament.status == "done", tournament.error
    return tournament


def cell(value):
    """A printed number or name, compared as the text a reader sees."""
    if value is None or value == "—":
        return "—"
    try:
        return f"{float(value):g}"
    except (TypeError, ValueError):
        return str(value)


def page_rows(client, tournament) -> tuple[list[list[str]], str]:
    body = client.get(reverse("judging:tournament_detail", args=[tournament.pk])).content.decode()
    table = body[body.index('id="standings"') :]
    table = table[table.index("<tbody>") : table.index("</tbody>")]
    rows = []
    for row in re.findall(r"<tr>(.*?)</tr>", table, flags=re.S):
        cells = [unescape(c).strip() for c in re.findall(r"<td>(.*?)</td>", row, flags=re.S)]
        rows.append([cell(c) for c in cells[:9]])  # the printed columns; features follow
    return rows, unescape(body)


def report_rows(tournament) -> list[list[str]]:
    data = report_json(protocol_report(study=tournament.source_study))
    return [[cell(c) for c in row[1:]] for row in data["tables"]["leaderboard"]["rows"] if "Cup" in row[0]]


def export_rows(tournament, tmp_path) -> list[list[str]]:
    path = tmp_path / "matches.xlsx"
    write_workbook(tournament.match_study, str(path))
    sheet = [list(r) for r in load_workbook(path)["Rankings"].iter_rows(values_only=True)]
    start = next(n for n, r in enumerate(sheet) if str(r[0]).startswith("LLM judge"))
    rows = []
    for r in sheet[start + 2 :]:
        if not isinstance(r[0], int):
            break
        rows.append([cell(c) for c in r[:9]])
    return rows


class TestOneLeaderboard:
    def test_page_report_and_export_print_the_same_numbers(self, client, researcher, tmp_path):
        judge, _ = judge_find_or_create(owner=researcher, baseline="random")
        JudgeConfig.objects.filter(pk=judge.pk).update(both_orders=True)
        judge.refresh_from_db()
        tournament = played(researcher, judge)
        client.force_login(researcher)
        page, _body = page_rows(client, tournament)
        report = report_rows(tournament)
        export = export_rows(tournament, tmp_path)
        assert len(page) == len(CONTESTANTS)
        assert page == report == export
        # Real numbers, not empty cells: a rating with an interval around it on every row.
        for row in page:
            assert float(row[3]) <= float(row[2]) <= float(row[4])

    def test_the_numbers_do_not_depend_on_the_order_the_verdicts_are_read_in(self, researcher):
        from ratings.leaderboards import judge_verdicts
        from ratings.stats.leaderboard import leaderboard

        judge, _ = judge_find_or_create(owner=researcher, baseline="random")
        tournament = played(researcher, judge)
        verdicts = judge_verdicts(study=tournament.match_study)[judge.rater_id]
        forward = leaderboard(verdicts, seed=7)
        backward = leaderboard(verdicts[::-1], seed=7)
        assert forward.standings == backward.standings


class TestPositionBias:
    def test_a_judge_that_always_picks_the_first_joke_gets_a_visible_warning(self, client, researcher, make_llm_judge):
        judge = make_llm_judge("ok")  # the scripted server always answers "A", the joke shown first
        tournament = played(researcher, judge)
        client.force_login(researcher)
        _rows, body = page_rows(client, tournament)
        assert "Position bias: the candidate shown first won 24 of 24 decisive verdicts (100%" in body
        report = report_json(protocol_report(study=tournament.source_study))
        (position,) = report["tables"]["position"]["rows"]
        assert position[1:4] == [24, 24, 100.0] and position[-1] == "position bias"
        assert any("Position bias" in note for note in report["notes"])

    def test_both_orders_give_a_position_consistency_figure(self, client, researcher, make_llm_judge):
        judge = make_llm_judge("ok", both_orders=True)
        tournament = played(researcher, judge)
        assert Judgment.objects.filter(study=tournament.match_study, rater=judge.rater).count() == 2 * 24
        client.force_login(researcher)
        _rows, body = page_rows(client, tournament)
        # "A" in both orders names a different winner each time: never consistent.
        assert "position consistency 0.0% (0 of 24 comparisons judged in both orders kept their verdict)" in body

    def test_an_unbiased_judge_gets_no_warning(self, client, researcher):
        judge, _ = judge_find_or_create(owner=researcher, baseline="length")
        tournament = played(researcher, judge)
        client.force_login(researcher)
        _rows, body = page_rows(client, tournament)
        assert "Position bias" not in body


class TestBothOrdersBudget:
    def test_the_budget_counts_calls_so_both_orders_play_half_the_matches(self, researcher, make_llm_judge):
        judge = make_llm_judge("ok", both_orders=True)
        tournament = played(researcher, judge, budget=6)
        assert tournament.match_study.items.count() == 3
        assert Judgment.objects.filter(study=tournament.match_study).count() == 6

    def test_a_budget_below_one_match_is_refused_with_the_reason(self, researcher, make_llm_judge):
        judge = make_llm_judge("ok", both_orders=True)
        with pytest.raises(ValidationError, match="one match costs 2 with this judge"):
            tournament_create(owner=researcher, name="tiny", source_study=contest(researcher), judge=judge, budget=1)
