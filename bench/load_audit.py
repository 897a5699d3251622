# SPDX-License-Identifier: GPL-3.0-or-later
"""Hold the database to what the simulated raters saw.

After a load or fault run the audit compares the study's rows with the
clients' logs (``load_client.RaterLog``):

* every submission a client saw confirmed is stored exactly once, with the
  value the client sent ("lost" counts the ones that are not);
* a stored judgment the client never saw confirmed must be one whose response
  was lost or was a 5xx ("phantom" counts any other);
* no rater holds two assignments or judgments of one item ("duplicates");
* no item is held (done, or leased and not expired) by more raters than the
  quota, nor judged by more ("quota violations");
* each item's stored count of taken places (``Item.places_taken``) equals
  the recount from its assignments ("place drift").

Needs Django set up on the database the server writes to.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from bench.load_client import RaterLog


@dataclass
class Audit:
    submitted: int  # answers the clients sent (once each, however often resent)
    confirmed: int
    rejected: int
    unconfirmed: int
    stored: int
    lost: list[int] = field(default_factory=list)  # confirmed assignment ids without a judgment
    wrong_value: list[int] = field(default_factory=list)
    phantom: list[int] = field(default_factory=list)  # stored, but the client never sent it or saw it rejected
    stored_unconfirmed: int = 0  # stored although the client never saw the answer (allowed)
    duplicate_judgments: int = 0
    duplicate_assignments: int = 0
    over_quota_judged: list[int] = field(default_factory=list)
    over_quota_held: list[int] = field(default_factory=list)
    place_drift: list[int] = field(default_factory=list)  # items whose places_taken disagrees with a recount
    items: int = 0
    items_full: int = 0
    quota: int = 0

    @property
    def ok(self) -> bool:
        return not (
            self.lost
            or self.wrong_value
            or self.phantom
            or self.duplicate_judgments
            or self.duplicate_assignments
            or self.over_quota_judged
            or self.over_quota_held
            or self.place_drift
        )

    def lines(self) -> list[str]:
        verdict = "OK" if self.ok else "FAILED"
        return [
            f"audit {verdict}: {self.stored} judgments stored; clients sent {self.submitted} answers: "
            f"{self.confirmed} confirmed, {self.rejected} rejected (item taken), {self.unconfirmed} unconfirmed",
            f"  confirmed but not stored: {len(self.lost)}; stored with another value: {len(self.wrong_value)}; "
            f"stored but never confirmed: {self.stored_unconfirmed} (allowed only for lost responses); "
            f"stored without a matching send: {len(self.phantom)}",
            f"  duplicates: {self.duplicate_judgments} judgments, {self.duplicate_assignments} assignments "
            f"(same rater, same item)",
            f"  quota {self.quota}: {len(self.over_quota_judged)} items judged over quota, "
            f"{len(self.over_quota_held)} held over quota; {self.items_full}/{self.items} items full; "
            f"place counters off their recount: {len(self.place_drift)}",
        ]


def audit_study(*, study_id: int, logs: list[RaterLog]) -> Audit:
    from django.db.models import Count, Q
    from django.utils import timezone

    from annotation.models import Assignment, Item, Judgment, Study
    from annotation.services.places import holding_filter, places_recount

    study = Study.objects.get(pk=study_id)
    sent = {s.assignment_id: s for log in logs for s in log.submissions}
    outcomes = Counter(s.outcome for s in sent.values())
    judgments = dict(Judgment.objects.filter(study=study, rater__kind="crowd").values_list("assignment_id", "value"))
    if study.task_type == "pairwise":
        # The client posted the position it chose; the judgment names the candidate shown there.
        shown = dict(Assignment.objects.filter(pk__in=judgments).values_list("pk", "shown_order"))

        def expected(assignment_id: int, rating: int) -> dict:
            return {"choice": shown[assignment_id][rating]}
    else:

        def expected(assignment_id: int, rating: int) -> dict:
            return {"rating": rating}

    audit = Audit(
        submitted=len(sent),
        confirmed=outcomes["confirmed"],
        rejected=outcomes["rejected"],
        unconfirmed=outcomes["unconfirmed"],
        stored=len(judgments),
        quota=study.quota_per_item,
    )
    for assignment_id, submission in sent.items():
        if submission.outcome == "confirmed":
            if assignment_id not in judgments:
                audit.lost.append(assignment_id)
            elif judgments[assignment_id] != expected(assignment_id, submission.rating):
                audit.wrong_value.append(assignment_id)
    for assignment_id in judgments:
        submission = sent.get(assignment_id)
        if submission is None or submission.outcome == "rejected":
            audit.phantom.append(assignment_id)
        elif submission.outcome == "unconfirmed":
            audit.stored_unconfirmed += 1
            if judgments[assignment_id] != expected(assignment_id, submission.rating):
                audit.wrong_value.append(assignment_id)

    def repeated(model) -> int:
        rows = model.objects.filter(study=study).values("rater_id", "item_id").annotate(n=Count("id"))
        return sum(row["n"] - 1 for row in rows.filter(n__gt=1))

    audit.duplicate_judgments = repeated(Judgment)
    audit.duplicate_assignments = repeated(Assignment)
    quota = study.quota_per_item
    regular = Item.objects.filter(study=study, is_attention_check=False)
    judged = regular.annotate(n=Count("judgments", filter=Q(judgments__rater__kind__in=["crowd", "expert"])))
    audit.over_quota_judged = list(judged.filter(n__gt=quota).values_list("pk", flat=True))
    now = timezone.now()
    held = (
        Assignment.objects.filter(study=study, item__is_attention_check=False)
        .filter(holding_filter(now))
        .values("item_id")
        .annotate(n=Count("id"))
    )
    audit.over_quota_held = [row["item_id"] for row in held if row["n"] > quota]
    audit.place_drift = sorted(places_recount(study=study))
    audit.items = regular.count()
    audit.items_full = judged.filter(n__gte=quota).count()
    return audit
