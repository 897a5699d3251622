"""Privacy by default: pseudonyms in every export and report, withdrawal, and the erasure of platform ids."""

import csv
import io
import json
import zipfile
from datetime import timedelta

import pandas as pd
import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone
from openpyxl import load_workbook
from rest_framework.test import APIClient

from annotation.models import AuditEntry, Enrollment, Item, Judgment, Rater, Study
from annotation.privacy import pseudonym, study_pseudonyms
from annotation.services.places import places_recount
from ratings.analysis import analysis_result
from ratings.cached import study_inputs
from ratings.exports.formats import export_formats, get_format
from ratings.exports.services import export_claim, export_create, export_file_path, export_run, write_export
from tests.conftest import build_study
from tests.ratings.export_helpers import rate_as_crowd

LEAVER, STAYER, THIRD = "5" * 24, "6" * 24, "7" * 24


@pytest.fixture
def study(researcher):
    study = build_study(researcher, n_items=3, quota_per_item=3, recruitment=Study.Recruitment.PROLIFIC)
    answers = {
        pid: {f"item-{i}": {"rating": (i + n) % 4} for i in range(3)} for n, pid in enumerate((LEAVER, STAYER, THIRD))
    }
    rate_as_crowd(study, answers)
    Enrollment.objects.filter(study=study).update(entry_params={"STUDY_ID": "s" * 24, "SESSION_ID": "x" * 24})
    return study


def everything_exported(study, tmp_path) -> str:
    """Every registered export of the study, read back as text (Parquet through pandas, XLSX through openpyxl)."""
    parts = []
    for export_format in export_formats():
        path = tmp_path / f"all.{export_format.extension}"
        write_export(study, export_format.name, path)
        if export_format.extension.endswith("parquet"):
            parts.append(pd.read_parquet(path).to_csv())
        elif export_format.extension.endswith("zip"):  # the release bundle: every file in it
            with zipfile.ZipFile(path) as bundle:
                for name in bundle.namelist():
                    data = bundle.read(name)
                    is_parquet = name.endswith(".parquet")
                    parts.append(pd.read_parquet(io.BytesIO(data)).to_csv() if is_parquet else data.decode("utf-8"))
        elif export_format.extension.endswith("xlsx"):
            book = load_workbook(path, read_only=True)
            parts.append(" ".join(str(c) for ws in book for row in ws.iter_rows(values_only=True) for c in row))
        else:
            parts.append(path.read_text(encoding="utf-8"))
    return "\n".join(parts)


def test_pseudonyms_are_short_stable_within_a_study_and_unrelated_across_studies(researcher, study):
    other = build_study(researcher, n_items=1)
    rater = Rater.objects.get(external_id=LEAVER)
    here = pseudonym(study_id=study.pk, key=study.pseudonym_key, rater_id=rater.pk)
    assert len(here) == 10 and here.startswith("P-")
    assert here == study_pseudonyms(Study.objects.get(pk=study.pk), [rater.pk])[rater.pk]
    assert here != pseudonym(study_id=other.pk, key=other.pseudonym_key, rater_id=rater.pk)


def test_exports_carry_pseudonyms_and_only_the_participant_key_holds_platform_ids(study, tmp_path):
    raw = tmp_path / "data.raw.csv"
    write_export(study, "csv_raw", raw)
    frame = pd.read_csv(raw, dtype=str, keep_default_na=False)
    aliases = set(study_pseudonyms(study, Rater.objects.filter(kind="crowd").values_list("pk", flat=True)).values())
    assert set(frame["rater_pseudonym"]) == aliases
    assert "rater_external_id" not in frame.columns
    for export_format in export_formats():
        path = tmp_path / f"one.{export_format.extension}"
        write_export(study, export_format.name, path)
        data = path.read_bytes()
        assert (LEAVER.encode() in data) == export_format.holds_rater_ids, export_format.name
    key = (tmp_path / f"one.{get_format('ids_key').extension}").read_text()
    assert key.startswith("# Personal data")
    rows = list(csv.DictReader(io.StringIO(key.split("\n", 1)[1])))
    assert {r["pseudonym"] for r in rows} == aliases and {r["platform_id"] for r in rows} == {LEAVER, STAYER, THIRD}


def test_a_withdrawal_removes_the_participant_from_every_export_and_report(
    client, settings, researcher, study, tmp_path
):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    leaver = Rater.objects.get(external_id=LEAVER)
    alias = study_pseudonyms(study, [leaver.pk])[leaver.pk]
    queued = export_create(study=study, user=researcher, fmt="csv_raw")
    stored = export_run(export=export_claim(export_id=queued.pk))
    stored_file = export_file_path(stored)
    before_inputs = study_inputs(study=study)
    before = analysis_result(study=study, group="humans", rater_ids=None, k=2, tie="higher")
    assert alias in everything_exported(study, tmp_path) and alias in json.dumps(before)
    taken = sum(Item.objects.filter(study=study).values_list("places_taken", flat=True))

    client.force_login(researcher)
    answer = client.post(reverse("crowd:withdraw", args=[study.pk]), {"participant": alias})
    assert answer.status_code == 302

    assert not Judgment.objects.filter(rater_id=leaver.pk).exists()
    assert not Enrollment.objects.filter(rater_id=leaver.pk).exists()
    assert not Rater.objects.filter(pk=leaver.pk).exists()  # nothing of theirs is left anywhere
    assert sum(Item.objects.filter(study=study).values_list("places_taken", flat=True)) == taken - 3
    assert places_recount(study=study) == {}
    assert not stored_file.exists() and not study.exports.exists()  # a written export held them
    assert study_inputs(study=study) != before_inputs  # stored reports are out of date
    after = analysis_result(study=study, group="humans", rater_ids=None, k=2, tie="higher")
    exported = everything_exported(study, tmp_path)
    assert alias not in json.dumps(after) and alias not in exported and LEAVER not in exported
    entry = AuditEntry.objects.get(study=study, action=AuditEntry.Action.WITHDRAWN)
    assert entry.changes["participant"] == [alias, None] and LEAVER not in json.dumps(entry.changes)
    assert entry.actor == researcher


def test_the_api_withdraws_by_platform_id_and_names_what_is_wrong(researcher, other_researcher, study):
    api = APIClient()
    api.force_authenticate(researcher)
    url = reverse("v1:withdrawal_create", args=[study.pk])
    assert api.post(url, {"participant": "P-00000000"}, format="json").status_code == 400
    unknown = api.post(url, {"participant": "nobody"}, format="json")
    assert unknown.status_code == 400 and "participant: No participant 'nobody'" in unknown.json()["errors"][0]
    done = api.post(url, {"participant": STAYER}, format="json")
    assert done.status_code == 200 and done.json()["answers_deleted"] == 3
    assert not Rater.objects.filter(external_id=STAYER).exists()
    api.force_authenticate(other_researcher)
    assert api.post(url, {"participant": THIRD}, format="json").status_code == 404
    assert Rater.objects.filter(external_id=THIRD).exists()


def test_platform_ids_are_erased_after_the_retention_and_pseudonyms_stay(settings, study):
    settings.FUNNYBONE_RAW_ID_RETENTION_DAYS = 30
    third = Rater.objects.get(external_id=THIRD)
    alias = study_pseudonyms(study, [third.pk])[third.pk]
    Enrollment.objects.filter(study=study).exclude(rater=third).update(created_at=timezone.now() - timedelta(days=31))
    out = io.StringIO()
    call_command("erase_raw_ids", stdout=out)
    assert "Erased the platform ids of 2 enrolment(s) older than 30 days" in out.getvalue()
    assert set(Rater.objects.filter(kind="crowd").values_list("external_id", flat=True)) == {"", THIRD}
    old = Enrollment.objects.filter(study=study).exclude(rater=third)
    assert all("SESSION_ID" not in e.entry_params and "erased_at" in e.entry_params for e in old)
    assert Enrollment.objects.get(rater=third).entry_params["SESSION_ID"] == "x" * 24
    assert study_pseudonyms(study, [third.pk])[third.pk] == alias
    assert AuditEntry.objects.filter(study=study, action=AuditEntry.Action.RAW_IDS_ERASED).count() == 1
    settings.FUNNYBONE_RAW_ID_RETENTION_DAYS = 0
    out = io.StringIO()
    call_command("erase_raw_ids", stdout=out)
    assert "kept" in out.getvalue()
