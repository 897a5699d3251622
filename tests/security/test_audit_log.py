# SPDX-License-Identifier: GPL-3.0-or-later
"""The audit log: every change a researcher makes to a study leaves an entry with who
did it and the values before and after, shown on the study's page."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.authtoken.models import Token

from annotation.audit import SECRET_NEW, SECRET_OLD, SECRET_SET, acting_as, audit_record
from annotation.models import AuditEntry, Study
from annotation.services.studies import ItemSpec, items_create, study_create, study_set_state, study_update

pytestmark = pytest.mark.django_db

NEW_STUDY = {
    "name": "Audited pairs",
    "task_type": "ordinal",
    "config": "",
    "quota_per_item": 3,
    "item_order": "random_per_rater",
    "attention_check_rate": 0,
    "attention_check_policy": "flag",
    "attention_check_max_failures": 0,
    "min_seconds_per_item": 0,
}


def settings_form(study: Study, **overrides) -> dict:
    data = {
        "name": study.name,
        "description": study.description,
        "protocol": study.protocol,
        "config": json.dumps(study.config),
        "quota_per_item": study.quota_per_item,
        "item_order": study.item_order,
        "attention_check_rate": study.attention_check_rate,
        "attention_check_policy": study.attention_check_policy,
        "attention_check_max_failures": study.attention_check_max_failures,
        "min_seconds_per_item": study.min_seconds_per_item,
        "consent_text": study.consent_text,
        "instructions_text": study.instructions_text,
        "completion_redirect_url": study.completion_redirect_url,
    }
    return {**data, **overrides}


def last_entry(study: Study) -> AuditEntry:
    return AuditEntry.objects.filter(study=study).order_by("-id").first()


@pytest.fixture
def rita(client, researcher):
    client.force_login(researcher)
    return client


class TestResearcherPages:
    def test_creating_a_study_is_recorded(self, rita, researcher):
        rita.post(reverse("researcher:study_new"), NEW_STUDY)
        study = Study.objects.get(name="Audited pairs")
        entry = last_entry(study)
        assert (entry.action, entry.actor, entry.study_name) == ("created", researcher, "Audited pairs")
        assert entry.changes["name"] == [None, "Audited pairs"]
        assert entry.changes["task_type"] == [None, "ordinal"]

    def test_changing_settings_records_the_old_and_new_values(self, rita, researcher):
        study = study_create(owner=researcher, name="Before", task_type="ordinal", quota_per_item=3)
        response = rita.post(
            reverse("researcher:study_detail", args=[study.pk]),
            settings_form(study, name="After", quota_per_item=5, consent_text="You agree."),
        )
        assert response.status_code == 302
        entry = last_entry(study)
        assert (entry.action, entry.actor, entry.study_name) == ("updated", researcher, "After")
        assert entry.changes == {
            "consent_text": ["", "You agree."],
            "name": ["Before", "After"],
            "quota_per_item": [3, 5],
        }

    def test_saving_unchanged_settings_records_nothing(self, rita, researcher):
        study = study_create(owner=researcher, name="Same", task_type="ordinal")
        rita.post(reverse("researcher:study_detail", args=[study.pk]), settings_form(study))
        assert list(AuditEntry.objects.filter(study=study).values_list("action", flat=True)) == ["created"]

    def test_opening_and_closing_are_recorded(self, rita, researcher):
        study = study_create(owner=researcher, name="Stateful", task_type="ordinal")
        items_create(study=study, items=[ItemSpec(external_id="a", text="A joke")])
        url = reverse("researcher:study_state", args=[study.pk])
        rita.post(url, {"state": "open"})
        rita.post(url, {"state": "closed"})
        entries = AuditEntry.objects.filter(study=study, action__in=["opened", "closed"]).order_by("id")
        assert [(e.action, e.actor, e.changes) for e in entries] == [
            ("opened", researcher, {"state": ["draft", "open"]}),
            ("closed", researcher, {"state": ["open", "closed"]}),
        ]

    def test_an_uploaded_item_file_is_recorded_with_who_uploaded_it(self, rita, researcher):
        study = study_create(owner=researcher, name="Upload", task_type="ordinal")
        upload = SimpleUploadedFile("jokes.csv", b"id,text\nj1,A joke\nj2,Another\n")
        rita.post(reverse("researcher:study_items", args=[study.pk]), {"file": upload})
        entry = last_entry(study)
        assert (entry.action, entry.actor, entry.changes) == ("items_imported", researcher, {"items": [0, 2]})

    def test_an_invitation_is_recorded_without_its_token(self, rita, researcher):
        study = study_create(owner=researcher, name="Invites", task_type="ordinal")
        rita.post(reverse("researcher:invitation_new", args=[study.pk]), {"email": "erin@example.org"})
        entry = last_entry(study)
        assert (entry.action, entry.actor) == ("invitation_created", researcher)
        assert entry.changes == {"name": [None, ""], "email": [None, "erin@example.org"]}
        assert study.invitations.get().token not in json.dumps(entry.changes)

    def test_the_study_page_shows_the_last_fifty_changes(self, rita, researcher):
        study = study_create(owner=researcher, name="Busy", task_type="ordinal")
        for n in range(60):
            study_update(study=study, actor=researcher, quota_per_item=n + 1)
        page = rita.get(reverse("researcher:study_detail", args=[study.pk])).content.decode()
        log = page.split('id="audit"', 1)[1]
        assert log.count("Settings changed") == 50
        assert "<code>quota_per_item</code>: 59 → 60" in log
        assert "<code>quota_per_item</code>: 1 → 2" not in log
        assert researcher.username in log


class TestApi:
    @pytest.fixture
    def api(self, client, researcher):
        key = Token.objects.create(user=researcher).key
        client.defaults["HTTP_AUTHORIZATION"] = f"Token {key}"
        return client

    def post(self, api, url, data=None):
        return api.post(url, json.dumps(data or {}), content_type="application/json")

    def test_each_api_change_is_recorded_with_the_token_owner(self, api, researcher):
        created = self.post(api, reverse("api:study_create"), {"name": "By API", "task_type": "ordinal"})
        study = Study.objects.get(pk=created.json()["id"])
        api.patch(
            reverse("api:study_update", args=[study.pk]),
            json.dumps({"quota_per_item": 7}),
            content_type="application/json",
        )
        self.post(api, reverse("api:item_import", args=[study.pk]), {"items": [{"id": "a", "text": "A joke"}]})
        self.post(api, reverse("api:study_open", args=[study.pk]))
        self.post(api, reverse("api:study_close", args=[study.pk]))
        entries = AuditEntry.objects.filter(study=study).order_by("id")
        assert [(e.action, e.actor) for e in entries] == [
            ("created", researcher),
            ("updated", researcher),
            ("items_imported", researcher),
            ("opened", researcher),
            ("closed", researcher),
        ]
        assert entries[1].changes == {"quota_per_item": [3, 7]}
        assert entries[2].changes == {"items": [0, 1]}


class TestServices:
    def test_callers_that_name_no_actor_still_work_and_record_none(self, researcher):
        study = study_create(owner=researcher, name="Scripted", task_type="ordinal")
        items_create(study=study, items=[ItemSpec(external_id="a", text="A joke")])
        study_set_state(study=study, state="open")
        assert [(e.action, e.actor) for e in AuditEntry.objects.filter(study=study).order_by("id")] == [
            ("created", None),
            ("items_imported", None),
            ("opened", None),
        ]

    def test_acting_as_names_the_actor_for_code_that_cannot_pass_one(self, researcher):
        study = study_create(owner=researcher, name="Imported", task_type="ordinal")
        with acting_as(researcher):
            items_create(study=study, items=[ItemSpec(external_id="a", text="A joke")])
        items_create(study=study, items=[ItemSpec(external_id="b", text="B joke")], replace=True)
        imported, replaced = AuditEntry.objects.filter(study=study).exclude(action="created").order_by("id")
        assert (imported.action, imported.actor, imported.changes) == ("items_imported", researcher, {"items": [0, 1]})
        assert (replaced.action, replaced.actor, replaced.changes) == ("items_replaced", None, {"items": [1, 1]})

    def test_secret_fields_are_never_written(self, researcher):
        study = study_create(owner=researcher, name="Codes", task_type="ordinal", completion_code="OLD-CODE")
        study_update(study=study, actor=researcher, completion_code="NEW-CODE")
        dumped = json.dumps(list(AuditEntry.objects.filter(study=study).values_list("changes", flat=True)))
        assert "OLD-CODE" not in dumped and "NEW-CODE" not in dumped
        assert last_entry(study).changes == {"completion_code": [SECRET_OLD, SECRET_NEW]}
        audit_record(study=study, action="updated", actor=researcher, changes={"entry_token": ["a", "b"]})
        assert last_entry(study).changes == {"entry_token": [SECRET_OLD, SECRET_NEW]}

    def test_the_log_shows_real_changes_only(self, client, researcher):
        """Untouched codes are not logged; a code set or cleared says so; the page shows none of "(changed)"."""
        study = study_create(owner=researcher, name="Codes", task_type="ordinal", completion_code="SECRET-1")
        created = last_entry(study).changes
        assert created["completion_code"] == [None, SECRET_SET]
        assert "no_work_code" not in created and "description" not in created
        study_update(study=study, actor=researcher, quota_per_item=7, no_work_code="NOWORK-1")
        assert last_entry(study).changes == {"quota_per_item": [3, 7], "no_work_code": [None, SECRET_SET]}
        study_update(study=study, actor=researcher, no_work_code="", failed_checks_code="")
        assert last_entry(study).changes == {"no_work_code": [SECRET_SET, None]}
        client.force_login(researcher)
        page = client.get(reverse("researcher:study_detail", args=[study.pk])).content.decode()
        log = page[page.index('id="audit-heading"') :]
        assert "(changed)" not in log and "NOWORK-1" not in log and "SECRET-1" not in log
        assert "<code>quota_per_item</code>: 3 → 7" in log and f"<code>no_work_code</code>: {SECRET_SET} → —" in log

    def test_a_deleted_studys_entries_keep_its_name(self, researcher):
        study = study_create(owner=researcher, name="Short-lived", task_type="ordinal")
        entry = last_entry(study)
        study.delete()
        entry.refresh_from_db()
        assert (entry.study, entry.study_name) == (None, "Short-lived")
