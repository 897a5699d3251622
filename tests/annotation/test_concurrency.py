"""Many raters at once: the assignment and judgment services under real contention.

Raters start together at a barrier and work through one study: most answer
steadily, some send every answer twice at the same moment (two requests racing),
some take an item and walk away (their lease is made to expire at once), and
some walk away and then come back to submit the stale item. Every worker keeps
its own log of what the services told it; afterwards the database must agree
with those logs exactly and every item must hold exactly its quota.

On PostgreSQL the raters are threads in several processes, each process its own
Django connected to the test database. On SQLite, whose pytest database lives in
memory, one child process builds a file-backed database and runs the raters as
threads there (SQLite transactions begin IMMEDIATE, so writers queue).

Django is imported inside the functions: spawned children import this module
before they have called ``django.setup()``.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import threading
import time
import traceback
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest

BARRIER_TIMEOUT = 120  # guards against a hung run, not a performance expectation
RESULT_TIMEOUT = 600


@dataclass(frozen=True)
class Plan:
    participant: str
    role: str  # steady | double | quitter | returner


def rater_plans(n: int) -> list[Plan]:
    roles = ["quitter", "returner", "double", "double", "steady", "steady", "steady", "steady", "steady", "steady"]
    return [Plan(f"rater-{i:02d}", roles[i % len(roles)]) for i in range(n)]


def walk_aways(plans: list[Plan]) -> int:
    return sum(p.role in ("quitter", "returner") for p in plans)


class Abandonments:
    """Tells the raters when every walk-away has happened.

    A rater told "nothing left" waits for this before believing it, because a
    lease abandoned later than that frees a slot again; without the wait the
    final counts would depend on thread scheduling.
    """

    def __init__(self, ctx: Any, expected: int):
        self.count = ctx.Value("i", 0)
        self.all_done = ctx.Event()
        self.expected = expected
        if expected == 0:
            self.all_done.set()

    def one_done(self) -> None:
        with self.count.get_lock():
            self.count.value += 1
            if self.count.value >= self.expected:
                self.all_done.set()


def _rating(participant: str, item_id: int, shift: int = 0) -> dict[str, int]:
    digest = hashlib.blake2b(f"{participant}:{item_id}".encode(), digest_size=2).digest()
    return {"rating": (int.from_bytes(digest, "big") + shift) % 4}


def _submit(assignment_id: int, participant: str, value: dict, events: list[dict]) -> None:
    from django.core.exceptions import ValidationError

    from annotation.models import Assignment
    from annotation.services.judgments import judgment_submit

    assignment = Assignment.objects.select_related("rater").get(pk=assignment_id)
    entry = {"participant": participant, "assignment": assignment_id, "item": assignment.item_id, "sent": value}
    try:
        result = judgment_submit(assignment=assignment, rater=assignment.rater, value=value)
    except ValidationError as exc:
        events.append({**entry, "event": "rejected", "message": " ".join(exc.messages)})
        return
    events.append(
        {
            **entry,
            "event": "submit",
            "created": result.created,
            "judgment": result.judgment.pk,
            "value": result.judgment.value,
        }
    )


def _in_thread(target: Any, *args: Any) -> threading.Thread:
    def run() -> None:
        from django.db import connection

        try:
            target(*args)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def _double_submit(assignment_id: int, participant: str, item_id: int, events: list[dict]) -> None:
    """Two requests for the same assignment, released at the same moment."""
    both = threading.Barrier(2, timeout=BARRIER_TIMEOUT)

    def one(shift: int) -> None:
        try:
            both.wait()
            _submit(assignment_id, participant, _rating(participant, item_id, shift), events)
        except Exception as exc:
            events.append(
                {"event": "error", "participant": participant, "error": repr(exc), "trace": traceback.format_exc()}
            )

    for thread in [_in_thread(one, 0), _in_thread(one, 1)]:
        thread.join()


def _expire(assignment_id: int) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from annotation.models import Assignment

    Assignment.objects.filter(pk=assignment_id).update(lease_expires_at=timezone.now() - timedelta(seconds=1))


def rater_session(study_id: int, plan: Plan, start: Any, abandonments: Abandonments, events: list[dict]) -> None:
    """One rater's whole visit, logging every answer the services gave."""
    from annotation.models import Study
    from annotation.services.assignment import next_assignment
    from annotation.services.enrollment import enroll_crowdworker

    me = plan.participant
    walked_away = False
    try:
        start.wait(timeout=BARRIER_TIMEOUT)
        enrollment = enroll_crowdworker(study=Study.objects.get(pk=study_id), participant_id=me)
        first = next_assignment(enrollment=enrollment).assignment
        # Everyone holds a first item before anyone answers, so each rater
        # plays its role whatever the scheduler (SQLite's lock is not fair).
        start.wait(timeout=BARRIER_TIMEOUT)
        if plan.role in ("quitter", "returner"):
            _expire(first.pk)
            events.append({"event": "abandoned", "participant": me, "assignment": first.pk, "item": first.item_id})
            abandonments.one_done()
            walked_away = True
            if plan.role == "quitter":
                return
            # back after the lease ran out: the stale answer is sent anyway
            _submit(first.pk, me, _rating(me, first.item_id), events)
        current = None if walked_away else first
        waited = False
        while True:
            if current is None:
                nxt = next_assignment(enrollment=enrollment)
                if nxt.assignment is None and nxt.reason == "waiting":
                    # Items left are leased to others and may come free: ask again, as the page does.
                    time.sleep(0.02)
                    continue
                if nxt.assignment is None:
                    if not waited:
                        abandonments.all_done.wait(timeout=BARRIER_TIMEOUT)
                        waited = True
                        continue
                    events.append({"event": "finished", "participant": me, "reason": nxt.reason})
                    return
                current = nxt.assignment
            if plan.role == "double":
                _double_submit(current.pk, me, current.item_id, events)
            else:
                _submit(current.pk, me, _rating(me, current.item_id), events)
            current = None
    except Exception as exc:
        events.append({"event": "error", "participant": me, "error": repr(exc), "trace": traceback.format_exc()})
    finally:
        if not walked_away and plan.role in ("quitter", "returner"):
            abandonments.one_done()  # never leave the others waiting


def run_raters(study_id: int, plans: list[Plan], start: Any, abandonments: Abandonments) -> list[dict]:
    events: list[dict] = []
    threads = [_in_thread(rater_session, study_id, plan, start, abandonments, events) for plan in plans]
    for thread in threads:
        thread.join()
    return events


def study_snapshot(study_id: int) -> dict[str, Any]:
    """The rows the checks need, as plain data (it crosses process boundaries)."""
    from django.utils import timezone

    from annotation.models import Assignment, Item, Judgment

    return {
        "items": list(Item.objects.filter(study_id=study_id).values_list("pk", flat=True)),
        "judgments": list(
            Judgment.objects.filter(study_id=study_id).values(
                "pk", "assignment_id", "item_id", "value", "rater__external_id"
            )
        ),
        "live_leases": Assignment.objects.filter(
            study_id=study_id, state=Assignment.State.LEASED, lease_expires_at__gt=timezone.now()
        ).count(),
    }


def check_outcome(snapshot: dict[str, Any], events: list[dict], plans: list[Plan], quota: int) -> None:
    errors = [e for e in events if e["event"] == "error"]
    assert not errors, "\n".join(e["trace"] for e in errors)
    finished = {e["participant"]: e["reason"] for e in events if e["event"] == "finished"}
    assert finished == {p.participant: "exhausted" for p in plans if p.role != "quitter"}

    judgments = snapshot["judgments"]
    assert Counter(j["item_id"] for j in judgments) == dict.fromkeys(snapshot["items"], quota)
    per_rater_item = Counter((j["rater__external_id"], j["item_id"]) for j in judgments)
    assert max(per_rater_item.values()) == 1, "a rater judged the same item twice"

    accepted = [e for e in events if e["event"] == "submit" and e["created"]]
    assert len({e["assignment"] for e in accepted}) == len(accepted), "one assignment was accepted twice"
    assert all(e["value"] == e["sent"] for e in accepted)
    stored = {j["assignment_id"]: (j["pk"], j["value"]) for j in judgments}
    # every accepted answer is stored as sent, and nothing is stored that no rater had accepted
    assert stored == {e["assignment"]: (e["judgment"], e["value"]) for e in accepted}

    repeats = [e for e in events if e["event"] == "submit" and not e["created"]]
    for e in repeats:  # the second of two racing requests got the first one's judgment back
        assert (e["judgment"], e["value"]) == stored[e["assignment"]]
    doubled = Counter(e["assignment"] for e in events if e["event"] in ("submit", "rejected"))
    for plan in plans:
        if plan.role == "double":
            mine = [e["assignment"] for e in accepted if e["participant"] == plan.participant]
            assert mine and all(doubled[a] == 2 for a in mine)
    assert len(repeats) == sum(1 for e in accepted if doubled[e["assignment"]] == 2)

    for e in events:
        if e["event"] == "rejected":
            assert e["assignment"] not in stored
            assert "handed to someone else" in e["message"]
        if e["event"] == "abandoned" and e["assignment"] in stored:
            # only a returner may still have answered their stale item
            assert next(p for p in plans if p.participant == e["participant"]).role == "returner"
    quitters = {p.participant for p in plans if p.role == "quitter"}
    assert any(e["event"] == "abandoned" and e["participant"] in quitters for e in events)
    assert snapshot["live_leases"] == 0


# -- PostgreSQL: threads in several processes ----------------------------------


def _postgres_child(db_name: str, study_id: int, plans: list[Plan], start: Any, abandonments: Any, results: Any):
    try:
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "funnybone.settings")
        import django

        django.setup()
        from django.conf import settings

        # The test database, not the one DATABASE_URL names: every connection
        # this process opens reads this same settings dict.
        settings.DATABASES["default"]["NAME"] = db_name
        results.put(run_raters(study_id, plans, start, abandonments))
    except Exception as exc:
        results.put([{"event": "error", "participant": "process", "error": repr(exc), "trace": traceback.format_exc()}])


def _collect(processes: list, results: Any) -> list[dict]:
    events: list[dict] = []
    for _ in processes:
        events.extend(results.get(timeout=RESULT_TIMEOUT))
    for process in processes:
        process.join(timeout=RESULT_TIMEOUT)
        assert process.exitcode == 0
    return events


@pytest.mark.django_db(transaction=True)
def test_thirty_raters_in_three_processes_fill_every_item_exactly_on_postgresql(researcher):
    from django.conf import settings

    from tests.conftest import build_study, require_postgres

    require_postgres()
    quota, plans, n_processes = 3, rater_plans(30), 3
    study = build_study(researcher, n_items=40, quota_per_item=quota)
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(len(plans))
    abandonments = Abandonments(ctx, walk_aways(plans))
    results = ctx.Queue()
    db_name = settings.DATABASES["default"]["NAME"]
    processes = [
        ctx.Process(
            target=_postgres_child,
            args=(db_name, study.pk, plans[i::n_processes], start, abandonments, results),
        )
        for i in range(n_processes)
    ]
    for process in processes:
        process.start()
    events = _collect(processes, results)
    check_outcome(study_snapshot(study.pk), events, plans, quota)


# -- SQLite: threads on a file-backed database in a child process ---------------


def _sqlite_child(data_dir: str, n_items: int, quota: int, plans: list[Plan], results: Any) -> None:
    try:
        os.environ["DATABASE_URL"] = f"sqlite:///{data_dir}/concurrency.sqlite3"
        os.environ["FUNNYBONE_DATA_DIR"] = data_dir
        os.environ["DJANGO_SETTINGS_MODULE"] = "funnybone.settings"
        import django

        django.setup()
        from django.contrib.auth import get_user_model
        from django.core.management import call_command

        from tests.conftest import build_study

        call_command("migrate", verbosity=0)
        owner = get_user_model().objects.create(username="owner")
        study = build_study(owner, n_items=n_items, quota_per_item=quota)
        start = threading.Barrier(len(plans))
        abandonments = Abandonments(multiprocessing.get_context("spawn"), walk_aways(plans))
        events = run_raters(study.pk, plans, start, abandonments)
        results.put((events, study_snapshot(study.pk)))
    except Exception as exc:
        results.put(
            ([{"event": "error", "participant": "process", "error": repr(exc), "trace": traceback.format_exc()}], {})
        )


def test_twelve_raters_as_threads_fill_every_item_exactly_on_sqlite(tmp_path):
    quota, plans = 3, rater_plans(12)
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    child = ctx.Process(target=_sqlite_child, args=(str(tmp_path), 15, quota, plans, results))
    child.start()
    events, snapshot = results.get(timeout=RESULT_TIMEOUT)
    child.join(timeout=RESULT_TIMEOUT)
    errors = [e["trace"] for e in events if e["event"] == "error"]
    assert not errors, "\n".join(errors)
    assert child.exitcode == 0
    check_outcome(snapshot, events, plans, quota)


# -- Interleavings that once went wrong, forced one step at a time (PostgreSQL) --


class Interleave:
    """Run a call in a second thread up to the point where it finishes or waits on a row lock.

    The first thread calls ``until_blocked_or_done`` from inside the service it
    is pausing (through a patched helper), so the second call happens exactly
    between two of the first one's steps.
    """

    def __init__(self, target: Any):
        self.target = target
        self.result: Any = None
        self.error: BaseException | None = None
        self.pid: int | None = None
        self._ready = threading.Event()
        self.thread: threading.Thread | None = None

    def _run(self) -> None:
        from django.db import connection

        try:
            connection.ensure_connection()
            self.pid = connection.connection.info.backend_pid
            self._ready.set()
            self.result = self.target()
        except BaseException as exc:  # handed to the test thread
            self.error = exc
        finally:
            self._ready.set()
            connection.close()

    def until_blocked_or_done(self) -> None:
        import time

        from django.db import connection

        self.thread = threading.Thread(target=self._run)
        self.thread.start()
        self._ready.wait(timeout=BARRIER_TIMEOUT)
        deadline = time.monotonic() + BARRIER_TIMEOUT
        with connection.cursor() as cursor:
            while self.thread.is_alive():
                cursor.execute("SELECT pg_stat_clear_snapshot()")
                cursor.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [self.pid])
                row = cursor.fetchone()
                if row and row[0] == "Lock":
                    return
                assert time.monotonic() < deadline, "the second call neither finished nor waited on a lock"
                time.sleep(0.005)

    def join(self) -> Any:
        assert self.thread is not None
        self.thread.join(timeout=BARRIER_TIMEOUT)
        if self.error is not None:
            raise self.error
        return self.result


@pytest.mark.django_db(transaction=True)
class TestForcedInterleavings:
    @pytest.fixture(autouse=True)
    def _postgres(self):
        from tests.conftest import require_postgres

        require_postgres()

    def _expired_lease(self, study, participant: str):
        from annotation.services.assignment import next_assignment
        from annotation.services.enrollment import enroll_crowdworker

        enrollment = enroll_crowdworker(study=study, participant_id=participant)
        assignment = next_assignment(enrollment=enrollment).assignment
        _expire(assignment.pk)
        return enrollment, assignment

    def test_a_stale_answer_and_a_new_lease_never_both_take_the_last_slot(self, researcher, monkeypatch):
        from annotation.models import Judgment
        from annotation.services import judgments
        from annotation.services.assignment import next_assignment
        from annotation.services.enrollment import enroll_crowdworker
        from tests.conftest import build_study

        study = build_study(researcher, n_items=1, quota_per_item=1)
        slow, stale = self._expired_lease(study, "slow")
        fast = enroll_crowdworker(study=study, participant_id="fast")

        def lease_and_answer():
            nxt = next_assignment(enrollment=fast)
            if nxt.assignment is not None:
                judgments.judgment_submit(assignment=nxt.assignment, rater=fast.rater, value={"rating": 1})
            return nxt

        newcomer = Interleave(lease_and_answer)
        checked = judgments._place_for_answer

        def check_then_let_the_newcomer_in(*args, **kwargs):
            has_place = checked(*args, **kwargs)
            newcomer.until_blocked_or_done()
            return has_place

        monkeypatch.setattr(judgments, "_place_for_answer", check_then_let_the_newcomer_in)
        late = judgments.judgment_submit(assignment=stale, rater=slow.rater, value={"rating": 2})
        # The late answer held the item while it checked its place, so the newcomer
        # waited for it and then found the item full.
        assert late.created
        assert newcomer.join().reason == "exhausted"
        assert list(Judgment.objects.filter(item=stale.item).values_list("rater", flat=True)) == [slow.rater.pk]

    def test_an_item_locked_for_a_moment_is_not_reported_as_exhausted(self, researcher):
        from django.db import transaction

        from annotation.models import Item
        from annotation.services.assignment import next_assignment
        from annotation.services.enrollment import enroll_crowdworker
        from tests.conftest import build_study

        study = build_study(researcher, n_items=1, quota_per_item=2)
        item = study.items.get()
        rater = enroll_crowdworker(study=study, participant_id="p1")
        asking = Interleave(lambda: next_assignment(enrollment=rater))
        with transaction.atomic():
            # another request holds the item row, as a lease or an answer in progress does
            Item.objects.select_for_update().get(pk=item.pk)
            asking.until_blocked_or_done()
        nxt = asking.join()
        assert nxt.assignment is not None and nxt.assignment.item_id == item.pk

    def test_a_failed_check_answered_while_the_same_rater_asks_for_more_does_not_deadlock(
        self, researcher, monkeypatch
    ):
        from annotation.models import Judgment
        from annotation.services import judgments
        from annotation.services.assignment import next_assignment
        from annotation.services.enrollment import enroll_crowdworker
        from annotation.services.studies import ItemSpec, items_create, study_set_state
        from annotation.task_types.ordinal import OrdinalScale
        from tests.conftest import build_study

        study = build_study(researcher, n_items=2, attention_check_rate=0.5, open_=False)
        check_item = ItemSpec(external_id="check", text="Press 0", gold={"rating": 0}, is_attention_check=True)
        items_create(study=study, items=[check_item])
        study_set_state(study=study, state="open")
        rater = enroll_crowdworker(study=study, participant_id="p1")
        first = next_assignment(enrollment=rater).assignment
        judgments.judgment_submit(assignment=first, rater=rater.rater, value={"rating": 1})
        check = next_assignment(enrollment=rater).assignment
        assert check.item.is_attention_check
        _expire(check.pk)  # the rater paused on the check, then two tabs act at once

        same_rater_again = Interleave(lambda: next_assignment(enrollment=rater))
        compare = OrdinalScale.matches_gold

        def compare_then_let_the_other_tab_in(self_, *args, **kwargs):
            same_rater_again.until_blocked_or_done()
            return compare(self_, *args, **kwargs)

        monkeypatch.setattr(OrdinalScale, "matches_gold", compare_then_let_the_other_tab_in)
        submitted = judgments.judgment_submit(assignment=check, rater=rater.rater, value={"rating": 3})
        same_rater_again.join()
        assert submitted.created and submitted.judgment.attention_passed is False
        assert Judgment.objects.filter(item=check.item).count() == 1
