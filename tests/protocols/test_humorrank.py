"""HumorRank templates, importers and report on small hand-made data."""

import io

import pytest
from django.utils import timezone

from annotation.models import Assignment, Judgment, Rater, Study
from annotation.protocols import get_template, protocol_import, study_from_template
from annotation.protocols.humorrank import CONTEST, HUMAN_CHECK, MATCHES
from annotation.services.studies import CandidateSpec, ItemSpec, items_create, study_create
from ratings.protocols import protocol_report, report_json

pytestmark = pytest.mark.django_db

CONTEST_CSV = b"""prompt_id,prompt,contestant,joke
h1,Town bans umbrellas,alpha,It never rained again.
h1,Town bans umbrellas,beta,Sales of hats went through the roof.
h1,Town bans umbrellas,gamma,Umbrellas.
h2,Zoo hires a goat as mayor,alpha,The goat ran on a platform of grass.
h2,Zoo hires a goat as mayor,beta,Approval ratings are baaad.
"""


@pytest.fixture
def contest(researcher):
    return study_from_template(owner=researcher, template=CONTEST, name="Contest")


@pytest.fixture
def check(researcher, contest):
    return study_from_template(
        owner=researcher, template=HUMAN_CHECK, name="Check", config={"source_study": contest.slug}
    )


def human_check_csv(*rows: str) -> bytes:
    header = "pair_id,prompt_id,prompt,contestant_a,joke_a,contestant_b,joke_b,rater,choice,shown_first"
    return "\n".join([header, *rows]).encode()


PAIR = "h1|alpha|beta,h1,Town bans umbrellas,alpha,It never rained again.,beta,Sales of hats went through the roof."


class TestTemplates:
    def test_the_contest_offers_every_contestant_of_a_prompt_in_one_item(self, contest):
        assert (contest.protocol, contest.task_type) == (CONTEST, "pick_one")
        assert contest.consent_text and contest.instructions_text

    def test_the_human_check_is_a_blind_a_b_tie_vote_in_random_order(self, check):
        assert check.task_type == "pairwise"
        assert check.config["labels"] == ["Joke A", "Joke B", "Tie"] and check.config["allow_tie"]
        assert check.item_order == Study.ItemOrder.RANDOM_PER_RATER
        assert get_template(HUMAN_CHECK).analyses["bootstrap_resamples"] == 1000


class TestContestImport:
    def test_it_makes_one_item_per_prompt_with_a_candidate_per_contestant(self, contest):
        result = protocol_import(study=contest, data=CONTEST_CSV, filename="contest.csv")
        assert (result.ok, result.items, result.judgments) == (True, 2, 0)
        first = contest.items.get(external_id="h1")
        assert first.prompt == "Town bans umbrellas"
        assert [c.key for c in first.candidates.all()] == ["alpha", "beta", "gamma"]

    def test_a_stream_is_read_in_pieces_never_whole(self, contest):
        # The worker hands the stored upload over as a stream (issue 16): nothing may read it in one go.
        class PieceByPiece(io.BytesIO):
            def read(self, size=-1):
                assert size is not None and size >= 0, "the whole file was read at once"
                return super().read(size)

        result = protocol_import(study=contest, data=PieceByPiece(CONTEST_CSV), filename="contest.csv")
        assert (result.ok, result.items, result.judgments) == (True, 2, 0)

    def test_it_names_every_bad_row_and_writes_nothing(self, contest):
        bad = CONTEST_CSV + (
            b"h1,Town bans umbrellas,alpha,A second joke from alpha.\n"
            b"h1,A different headline,delta,Hm.\n"
            b"h3,Lonely prompt,alpha,Only one contestant here.\n"
            b"h2,Zoo hires a goat as mayor,,No contestant.\n"
        )
        result = protocol_import(study=contest, data=bad, filename="contest.csv")
        assert not result.ok
        text = "\n".join(result.errors)
        assert "Row 7: 'alpha' already has a joke for prompt 'h1'" in text
        assert "Row 8: prompt 'h1' has a different prompt text in Row 2" in text
        assert "Prompt 'h3' (Row 9): a prompt needs jokes from at least two contestants" in text
        assert "Row 10: contestant is empty" in text
        assert contest.items.count() == 0

    def test_it_says_which_columns_are_missing(self, contest):
        result = protocol_import(study=contest, data=b"prompt,joke\nx,y\n", filename="contest.csv")
        assert "prompt_id, contestant" in result.errors[0]


class TestHumanCheckImport:
    def test_it_stores_pairs_and_the_votes_already_given(self, check):
        data = human_check_csv(f"{PAIR},ana,A,B", f"{PAIR},ben,beta,A", f"{PAIR},chloé,tie,")
        result = protocol_import(study=check, data=data, filename="check.csv")
        assert (result.ok, result.items, result.judgments) == (True, 1, 3)
        votes = {j.rater.name: (j.value["choice"], j.shown_order) for j in Judgment.objects.filter(study=check)}
        assert votes == {"ana": ("alpha", ["beta", "alpha"]), "ben": ("beta", ["alpha", "beta"]), "chloé": ("tie", [])}
        assert set(Rater.objects.filter(judgments__study=check).values_list("kind", flat=True)) == {"crowd"}

    def test_every_bad_vote_is_named_and_nothing_is_written(self, check):
        data = human_check_csv(
            f"{PAIR},ana,C,",
            f"{PAIR},,A,",
            "h1|alpha|beta,h1,Town bans umbrellas,alpha,A changed joke.,beta,Sales of hats went through the roof.,ben,A,",
            "h2,h2,Goat mayor,alpha,Joke.,alpha,Joke again.,ben,A,",
        )
        result = protocol_import(study=check, data=data, filename="check.csv")
        text = "\n".join(result.errors)
        assert "Row 2: choice 'C' is not A, B, tie" in text
        assert "Row 3: a vote needs both rater and choice" in text
        assert "Row 4: pair 'h1|alpha|beta' differs from Row 2" in text
        assert "Row 5: the two jokes come from the same contestant" in text
        assert check.items.count() == 0 and not Judgment.objects.filter(study=check).exists()


def add_matches(owner, contest, judge_name, verdicts, *, schedule="round_robin"):
    """A tournament's match study as the judging app writes it, with one judge's verdicts."""
    matches = study_create(
        owner=owner,
        name=f"{judge_name} matches",
        task_type="pairwise",
        protocol=MATCHES,
        config={"source_study": contest.slug, "tournament": f"{judge_name} cup", "schedule": schedule},
    )
    prompt_pks = dict(contest.items.values_list("external_id", "pk"))
    specs = [
        ItemSpec(
            external_id=f"{prompt}|{first}|{second}|{n}",
            prompt=prompt,
            candidates=[
                CandidateSpec(key=first, text=f"{first} joke"),
                CandidateSpec(key=second, text=f"{second} joke"),
            ],
            metadata={"prompt_item": prompt_pks[prompt], "contestants": [first, second]},
        )
        for n, (prompt, first, second, _choice) in enumerate(verdicts)
    ]
    items_create(study=matches, items=specs)
    judge = Rater.objects.create(kind=Rater.Kind.LLM, name=judge_name)
    now = timezone.now()
    for item, (*_pair, choice) in zip(matches.items.order_by("pk"), verdicts, strict=True):
        assignment = Assignment.objects.create(
            study=matches, item=item, rater=judge, state=Assignment.State.DONE, leased_at=now, lease_expires_at=now
        )
        features = {"humor_mechanisms": ["wordplay"], "failure_features": ["cliché"]} if choice != "tie" else {}
        Judgment.objects.create(
            assignment=assignment,
            study=matches,
            item=item,
            rater=judge,
            value={"choice": choice},
            provenance={"features": features},
        )
    return matches


class TestReport:
    def test_a_contest_with_no_judgments_still_renders_and_says_what_is_missing(self, contest):
        protocol_import(study=contest, data=CONTEST_CSV, filename="contest.csv")
        data = report_json(protocol_report(study=contest))
        assert data["summary"]["Prompts"] == 2 and data["summary"]["Contestants"] == 3
        assert any("No judge verdicts yet" in n for n in data["notes"])
        assert any("No human check yet" in n for n in data["notes"])

    def test_it_ranks_contestants_per_judge_and_compares_two_judges(self, researcher, contest):
        protocol_import(study=contest, data=CONTEST_CSV, filename="contest.csv")
        verdicts = [
            ("h1", "alpha", "beta", "alpha"),
            ("h1", "alpha", "gamma", "alpha"),
            ("h1", "beta", "gamma", "beta"),
            ("h2", "alpha", "beta", "tie"),
            ("h1", "gamma", "beta", "beta"),
            ("h1", "gamma", "alpha", "gamma"),
        ]
        add_matches(researcher, contest, "judge one", verdicts)
        add_matches(researcher, contest, "judge two", verdicts[::-1], schedule="swiss")
        data = report_json(protocol_report(study=contest))
        board = data["tables"]["leaderboard"]["rows"]
        first = [row[2] for row in board if row[0].startswith("judge one")]
        assert first == ["alpha", "beta", "gamma"]
        alpha_row = next(row for row in board if row[0].startswith("judge one") and row[2] == "alpha")
        assert alpha_row[6] == pytest.approx(100 * (1 + 1 + 0.5 + 0) / 4, abs=0.05)  # win rate %, a tie counts half
        (tau,) = data["tables"]["cross_judge_tau"]["rows"]
        assert tau[3] == pytest.approx(1.0)
        features = data["tables"]["features_1"]
        assert features["columns"] == ["contestant", "win: wordplay", "loss: cliché"]
        assert {"leaderboard", "win_rates_1", "features_1"} <= set(data["figures"])

    def test_the_human_check_reports_alpha_agreement_and_alignment_with_the_judge(self, researcher, contest, check):
        protocol_import(study=contest, data=CONTEST_CSV, filename="contest.csv")
        add_matches(researcher, contest, "judge one", [("h1", "beta", "alpha", "alpha")])
        data = human_check_csv(f"{PAIR},ana,A,", f"{PAIR},ben,A,", f"{PAIR},chloé,B,")
        assert protocol_import(study=check, data=data, filename="check.csv").ok
        report = report_json(protocol_report(study=contest))
        (row,) = report["tables"]["human_agreement"]["rows"]
        assert row[1:4] == [1, 3, 3]
        assert row[5] == pytest.approx(1 / 3, abs=1e-3)  # one agreeing rater pair of three
        (aligned,) = report["tables"]["human_judge_alignment"]["rows"]
        assert aligned[2:] == [1, 1, 1, 1.0]  # majority alpha; the judge also chose alpha
        # The check's own report finds the contest and says the same.
        own = report_json(protocol_report(study=check))
        assert own["tables"]["human_judge_alignment"]["rows"] == report["tables"]["human_judge_alignment"]["rows"]

    def test_a_check_with_one_rater_says_agreement_needs_two(self, contest, check):
        assert protocol_import(study=check, data=human_check_csv(f"{PAIR},ana,A,"), filename="check.csv").ok
        data = report_json(protocol_report(study=check))
        assert any("agreement needs at least two" in n for n in data["notes"])
