"""The protocol framework: templates, imported answers, protocol files, reports, their page, workbook and command."""

import io
import json

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.urls import reverse
from openpyxl import load_workbook

from annotation.importers import FileProblem
from annotation.models import Item, Judgment, Rater
from annotation.protocols import TEMPLATES, ImportPlan, StudyTemplate, protocol_import, read_table, study_from_template
from annotation.protocols.base import register_template
from annotation.services.imported_judgments import ImportedJudgment, judgments_import
from annotation.services.studies import ImportErrors, ItemSpec, items_create, study_create
from ratings import plots
from ratings.protocols import BUILDERS, Figure, ProtocolReport, Section, Table, report_json, write_report_workbook

pytestmark = pytest.mark.django_db


def rate_importer(table, study):
    """A tiny protocol format: id, text, and optionally rater + rating."""
    table.require("id", "text")
    items, answers, seen = [], [], set()
    for row in table.rows:
        if row.text("id") not in seen:
            seen.add(row.text("id"))
            items.append(ItemSpec(external_id=row.text("id"), text=row.text("text"), row=row.where))
        if row.text("rater"):
            answers.append(
                ImportedJudgment(
                    rater=row.text("rater"),
                    item=row.text("id"),
                    value={"rating": int(row.text("rating"))},
                    row=row.where,
                )
            )
    return ImportPlan(items=items, judgments=answers)


@pytest.fixture
def test_template(monkeypatch):
    monkeypatch.setitem(TEMPLATES, "testproto", None)
    template = StudyTemplate(
        key="testproto",
        protocol="testproto",
        title="Test protocol",
        description="A protocol for the tests.",
        task_type="ordinal",
        config={"points": [0, 1, 2, 3]},
        settings={"quota_per_item": 5, "item_order": "shared_random"},
        importer=rate_importer,
        columns="id, text, rater, rating",
    )
    TEMPLATES["testproto"] = template
    return template


def report_builder(study):
    rows = [[item.external_id, item.text, item.judgments.count()] for item in study.items.order_by("position")]
    return ProtocolReport(
        study=study,
        title="Test report",
        summary=[("Items", len(rows)), ("Undefined figure", float("nan"))],
        sections=[
            Section(
                title="Items",
                tables=[Table(key="items", title="Items and answers", columns=["Item", "Text", "Answers"], rows=rows)],
                figures=[Figure(key="bars", title="Answers", plot=plots.leaderboard([]))],
            )
        ],
        notes=["No judges have been run yet."],
    )


@pytest.fixture
def test_report(monkeypatch, test_template):
    monkeypatch.setitem(BUILDERS, "testproto", report_builder)


def csv_bytes(*lines: str) -> bytes:
    return ("\n".join(lines) + "\n").encode()


class TestStudyTemplates:
    def test_a_study_from_a_template_has_its_settings_and_remembers_it(self, researcher, test_template):
        study = study_from_template(owner=researcher, template="testproto", name="From the template")
        assert (study.protocol, study.task_type, study.quota_per_item, study.item_order) == (
            "testproto",
            "ordinal",
            5,
            "shared_random",
        )
        assert study.description == "A protocol for the tests."
        assert study.state == "draft"

    def test_a_setting_can_be_overridden_when_creating(self, researcher, test_template):
        study = study_from_template(owner=researcher, template="testproto", name="Fewer raters", quota_per_item=2)
        assert study.quota_per_item == 2

    def test_an_unknown_template_names_the_known_ones(self, researcher, test_template):
        with pytest.raises(ValidationError, match="testproto"):
            study_from_template(owner=researcher, template="nope", name="x")

    def test_a_template_key_cannot_be_registered_twice(self, test_template):
        other = StudyTemplate(key="testproto", protocol="x", title="x", description="", task_type="binary")
        with pytest.raises(ValueError, match="twice"):
            register_template(other)

    def test_every_protocol_of_the_issue_has_a_template(self):
        families = {t.protocol for t in TEMPLATES.values() if t is not None}
        assert {"humorrank", "jest", "oogiri", "chumor", "semeval2020t7"} <= families


class TestImportedJudgments:
    @pytest.fixture
    def study(self, researcher):
        study = study_create(owner=researcher, name="Imported ratings", task_type="ordinal")
        items_create(study=study, items=[ItemSpec(external_id=f"i{k}", text=f"joke {k}") for k in range(3)])
        return study

    def test_answers_are_stored_as_judgments_of_raters_named_as_in_the_file(self, study):
        rows = [ImportedJudgment(rater=r, item=f"i{k}", value={"rating": k}) for r in ("R1", "R2") for k in range(3)]
        assert judgments_import(study=study, judgments=rows) == 6
        judgments = Judgment.objects.filter(study=study)
        assert judgments.count() == 6
        assert {j.rater.name for j in judgments} == {"R1", "R2"}
        assert all(j.status == "ok" and j.provenance["imported"] for j in judgments)
        assert judgments.get(rater__name="R2", item__external_id="i2").value == {"rating": 2}
        assert all(e.completed_at for e in study.enrollments.all())

    def test_the_same_name_in_two_studies_is_two_raters(self, study, researcher):
        other = study_create(owner=researcher, name="Another", task_type="ordinal")
        items_create(study=other, items=[ItemSpec(external_id="i0", text="joke")])
        judgments_import(study=study, judgments=[ImportedJudgment(rater="R1", item="i0", value={"rating": 1})])
        judgments_import(study=other, judgments=[ImportedJudgment(rater="R1", item="i0", value={"rating": 1})])
        assert Rater.objects.filter(name="R1").count() == 2

    def test_bad_rows_are_all_named_and_nothing_is_written(self, study):
        rows = [
            ImportedJudgment(rater="R1", item="i0", value={"rating": 1}, row="Row 2"),
            ImportedJudgment(rater="R1", item="missing", value={"rating": 1}, row="Row 3"),
            ImportedJudgment(rater="R1", item="i1", value={"rating": 7}, row="Row 4"),
            ImportedJudgment(rater="R1", item="i0", value={"rating": 2}, row="Row 5"),
            ImportedJudgment(rater=" ", item="i2", value={"rating": 2}, row="Row 6"),
        ]
        with pytest.raises(ImportErrors) as caught:
            judgments_import(study=study, judgments=rows)
        messages = caught.value.errors_by_row
        assert any(m.startswith("Row 3:") and "no item 'missing'" in m for m in messages)
        assert any(m.startswith("Row 4:") and "outside the scale" in m for m in messages)
        assert any(m.startswith("Row 5:") and "already judged" in m for m in messages)
        assert any(m.startswith("Row 6:") and "no name" in m for m in messages)
        assert not Judgment.objects.filter(study=study).exists()

    def test_a_rater_failing_more_attention_checks_than_allowed_is_excluded(self, study):
        items_create(
            study=study,
            items=[
                ItemSpec(external_id=f"check{k}", text="Rate this 3.", gold={"rating": 3}, is_attention_check=True)
                for k in range(2)
            ],
        )
        rows = [ImportedJudgment(rater="careless", item=f"check{k}", value={"rating": 0}) for k in range(2)]
        rows += [ImportedJudgment(rater="careful", item=f"check{k}", value={"rating": 3}) for k in range(2)]
        judgments_import(study=study, judgments=rows)
        excluded = {e.rater.name: e.excluded for e in study.enrollments.select_related("rater")}
        assert excluded == {"careless": True, "careful": False}
        assert Judgment.objects.get(rater__name="careful", item__external_id="check0").attention_passed is True

    def test_importing_the_same_answer_again_is_refused_not_overwritten(self, study):
        judgments_import(study=study, judgments=[ImportedJudgment(rater="R1", item="i0", value={"rating": 1})])
        with pytest.raises(ImportErrors, match="already has an answer"):
            judgments_import(study=study, judgments=[ImportedJudgment(rater="R1", item="i0", value={"rating": 3})])
        assert Judgment.objects.get(study=study).value == {"rating": 1}


class TestTables:
    def test_a_csv_with_a_bom_and_semicolons_reads_by_normalised_column_names(self):
        table = read_table(b"\xef\xbb\xbfID; Joke Text\n1;Hello\n\n2;World\n", filename="x.csv")
        assert table.columns == ["id", "joke_text"]
        assert [(r.where, r.text("joke_text")) for r in table.rows] == [("Row 2", "Hello"), ("Row 4", "World")]

    def test_jsonl_lines_become_rows(self):
        table = read_table(b'{"id": "a", "Rating": 2}\n{"id": "b"}\n', filename="x.jsonl")
        assert table.columns == ["id", "rating"]
        assert table.rows[0].cells["rating"] == 2 and table.rows[1].text("rating") == ""

    def test_an_xlsx_first_sheet_is_read(self):
        from openpyxl import Workbook

        book = Workbook()
        book.active.append(["id", "text"])
        book.active.append(["a", "A joke"])
        stream = io.BytesIO()
        book.save(stream)
        table = read_table(stream.getvalue(), filename="x.xlsx")
        assert table.rows[0].text("id") == "a"

    def test_a_formula_without_a_saved_value_is_refused_by_row_as_in_item_imports(self):
        # It used to read as an empty cell here while the item importer refused it.
        from openpyxl import Workbook

        book = Workbook()
        book.active.append(["id", "text"])
        book.active.append(["a", "=1+1"])
        stream = io.BytesIO()
        book.save(stream)
        with pytest.raises(FileProblem, match=r"Row 2: the formula in B2 \(=1\+1\) has no saved value"):
            read_table(stream.getvalue(), filename="x.xlsx")

    def test_a_header_naming_a_column_twice_is_refused(self):
        with pytest.raises(FileProblem, match="twice: id"):
            read_table(b"id,ID\n1,2\n", filename="x.csv")

    def test_missing_columns_are_named_with_the_ones_found(self):
        table = read_table(b"id,txt\n1,a\n", filename="x.csv")
        with pytest.raises(FileProblem, match=r"needs the column\(s\) text; its columns are: id, txt"):
            table.require("id", "text")


class TestProtocolImport:
    def test_items_and_answers_are_imported_together(self, researcher, test_template):
        study = study_from_template(owner=researcher, template="testproto", name="Import me")
        data = csv_bytes("id,text,rater,rating", "a,joke a,R1,2", "a,joke a,R2,3", "b,joke b,R1,0")
        result = protocol_import(study=study, data=data, filename="data.csv")
        assert (result.ok, result.items, result.judgments) == (True, 2, 3)

    def test_one_bad_answer_writes_no_item_and_no_answer(self, researcher, test_template):
        study = study_from_template(owner=researcher, template="testproto", name="Import me")
        data = csv_bytes("id,text,rater,rating", "a,joke a,R1,2", "b,joke b,R1,9")
        result = protocol_import(study=study, data=data, filename="data.csv")
        assert not result.ok and result.errors == ["Row 3: The rating 9 is outside the scale (0, 1, 2, 3)."]
        assert not Item.objects.filter(study=study).exists()
        assert not Judgment.objects.filter(study=study).exists()

    def test_a_study_without_a_protocol_format_says_so(self, researcher):
        study = study_create(owner=researcher, name="Plain", task_type="ordinal")
        result = protocol_import(study=study, data=b"id\n1\n", filename="x.csv")
        assert "no" in result.errors[0] and "protocol template" in result.errors[0]


class TestReportData:
    def test_the_json_form_has_no_nan_and_keeps_every_table(self, researcher, test_report):
        study = study_from_template(owner=researcher, template="testproto", name="Report me")
        data = report_json(report_builder(study))
        assert data["summary"] == {"Items": 0, "Undefined figure": None}
        assert data["tables"]["items"]["columns"] == ["Item", "Text", "Answers"]
        json.dumps(data, allow_nan=False)

    def test_the_workbook_has_a_summary_and_a_sheet_per_table_and_no_formulas(self, researcher, test_report):
        study = study_from_template(owner=researcher, template="testproto", name="Report me")
        items_create(study=study, items=[ItemSpec(external_id="x", text='=HYPERLINK("http://evil","click")')])
        stream = io.BytesIO()
        write_report_workbook(report_builder(study), stream)
        book = load_workbook(io.BytesIO(stream.getvalue()))
        assert book.sheetnames == ["Summary", "Items and answers"]
        cell = book["Items and answers"]["B2"]
        assert cell.value == '=HYPERLINK("http://evil","click")' and cell.data_type == "s"
        assert book["Summary"]["A1"].value == "Test report"


class TestProtocolPages:
    def test_a_researcher_creates_a_study_from_a_template_and_is_sent_to_its_import(
        self, csrf_client, researcher, test_template
    ):
        csrf_client.force_login(researcher)
        page = csrf_client.get(reverse("researcher:study_from_template"))
        assert page.status_code == 200 and "Test protocol" in page.content.decode()
        token = page.cookies["csrftoken"].value
        response = csrf_client.post(
            reverse("researcher:study_from_template"),
            {"template": "testproto", "name": "My study", "csrfmiddlewaretoken": token},
        )
        study = researcher.studies.get(name="My study")
        assert response.status_code == 302 and response["Location"] == reverse(
            "researcher:protocol_import", args=[study.pk]
        )
        assert study.protocol == "testproto"

    def test_a_bad_file_lists_every_problem_and_imports_nothing(self, client, researcher, test_template):
        client.force_login(researcher)
        study = study_from_template(owner=researcher, template="testproto", name="Upload")
        upload = io.BytesIO(csv_bytes("id,text,rater,rating", "a,x,R1,5", "b,y,R1,6"))
        upload.name = "bad.csv"
        response = client.post(reverse("researcher:protocol_import", args=[study.pk]), {"file": upload})
        body = response.content.decode()
        assert response.status_code == 400
        assert "Row 2:" in body and "Row 3:" in body and "Nothing was imported" in body
        assert not study.items.exists()

    def test_the_report_page_shows_tables_figures_and_notes_escaped(self, client, researcher, test_report):
        client.force_login(researcher)
        study = study_from_template(owner=researcher, template="testproto", name="Shown")
        items_create(study=study, items=[ItemSpec(external_id="x", text="<script>alert(1)</script>")])
        response = client.get(reverse("ratings:protocol_report", args=[study.slug]))
        body = response.content.decode()
        assert response.status_code == 200
        assert "Items and answers" in body and "No judges have been run yet." in body
        assert "<script>alert(1)</script>" not in body and "&lt;script&gt;" in body
        assert 'src="data:image/png;base64,' in body
        assert (
            reverse("ratings:protocol_report", args=[study.slug])
            in client.get(reverse("researcher:study_detail", args=[study.pk])).content.decode()
        )

    def test_the_figure_and_workbook_download(self, client, researcher, test_report):
        client.force_login(researcher)
        study = study_from_template(owner=researcher, template="testproto", name="Downloads")
        png = client.get(reverse("ratings:protocol_figure", args=[study.slug, "bars", "png"]))
        assert png.status_code == 200 and png.content.startswith(b"\x89PNG")
        assert client.get(reverse("ratings:protocol_figure", args=[study.slug, "nope", "png"])).status_code == 404
        book = client.get(reverse("ratings:protocol_workbook", args=[study.slug]))
        assert book.status_code == 200 and book.content[:2] == b"PK"

    def test_another_researchers_report_is_a_404(self, client, researcher, other_researcher, test_report):
        study = study_from_template(owner=researcher, template="testproto", name="Private")
        client.force_login(other_researcher)
        assert client.get(reverse("ratings:protocol_report", args=[study.slug])).status_code == 404

    def test_a_study_without_a_protocol_report_is_a_404(self, client, researcher):
        client.force_login(researcher)
        study = study_create(owner=researcher, name="Plain", task_type="ordinal")
        assert client.get(reverse("ratings:protocol_report", args=[study.slug])).status_code == 404


class TestProtocolCommand:
    def test_it_lists_templates_creates_imports_and_reports(self, researcher, test_report, tmp_path):
        out = io.StringIO()
        call_command("protocol", "templates", stdout=out)
        assert "testproto" in out.getvalue()
        call_command("protocol", "create", "testproto", "Command study", "--owner", researcher.username, stdout=out)
        study = researcher.studies.get(name="Command study")
        path = tmp_path / "data.csv"
        path.write_bytes(csv_bytes("id,text,rater,rating", "a,joke,R1,1"))
        call_command("protocol", "import", study.slug, str(path), stdout=out)
        assert "Imported 1 items and 1 judgments" in out.getvalue()
        out = io.StringIO()
        call_command("protocol", "report", study.slug, "--json", "--xlsx", str(tmp_path / "r.xlsx"), stdout=out)
        assert json.loads(out.getvalue())["tables"]["items"]["rows"] == [["a", "joke", 1]]
        assert (tmp_path / "r.xlsx").stat().st_size > 0

    def test_create_sets_task_settings_given_as_key_value(self, researcher, test_template):
        args = ("protocol", "create", "testproto", "Linked", "--owner", researcher.username)
        call_command(*args, "--config", "source_study=contest-1", stdout=io.StringIO())
        assert researcher.studies.get(name="Linked").config["source_study"] == "contest-1"
        from django.core.management.base import CommandError

        with pytest.raises(CommandError, match="KEY=VALUE"):
            call_command(*args, "--config", "no-equals-sign", stdout=io.StringIO())

    def test_a_bad_file_fails_the_command_with_its_rows(self, researcher, test_template, tmp_path):
        from django.core.management.base import CommandError

        study = study_from_template(owner=researcher, template="testproto", name="Bad import")
        path = tmp_path / "data.csv"
        path.write_bytes(csv_bytes("id,text,rater,rating", "a,joke,R1,8"))
        err = io.StringIO()
        with pytest.raises(CommandError, match="Nothing was imported"):
            call_command("protocol", "import", study.slug, str(path), stderr=err)
        assert "Row 2:" in err.getvalue()
