# SPDX-License-Identifier: GPL-3.0-or-later
"""Alignment figures of judges against a human reference, on studies whose answers are known."""

import math

import numpy as np
import pytest

from annotation.models import Item, Judgment, Rater
from annotation.services.studies import CandidateSpec, ItemSpec, items_create, study_create, study_set_state
from ratings.alignment import (
    AlignmentParams,
    AlignmentUnavailable,
    compute_alignment,
    feature_tallies,
    loo_kappas,
    metadata_groups,
    ordinal_consensus,
    pairwise_agreement,
)
from ratings.selectors import RaterInfo
from ratings.stats import cohen_kappa, order_consistency
from tests.ratings.alignment_helpers import (
    HUMANS,
    add_rater,
    build_ordinal,
    build_pairwise,
    judge,
    judge_in_order,
)

SCALE = [0.0, 1.0, 2.0, 3.0]


def by_label(rows, label):
    return next(r for r in rows if r["label"] == label)


class TestOrdinalConsensus:
    def test_it_takes_the_median_of_an_odd_panel(self):
        m = np.array([[0, 1, 1], [3, 2, 3]], dtype=float)
        assert ordinal_consensus(m, SCALE).tolist() == [1.0, 3.0]

    def test_it_rounds_a_halfway_median_up(self):
        m = np.array([[1, 2], [0, 3], [2, 2]], dtype=float)
        assert ordinal_consensus(m, SCALE).tolist() == [2.0, 2.0, 2.0]

    def test_it_snaps_to_the_nearest_point_of_an_uneven_scale(self):
        m = np.array([[1, 3], [1, 1], [1, 5]], dtype=float)
        assert ordinal_consensus(m, [1, 3, 5]).tolist() == [3.0, 1.0, 3.0]

    def test_an_unrated_item_has_no_consensus(self):
        m = np.array([[np.nan, np.nan], [0, np.nan]])
        out = ordinal_consensus(m, SCALE)
        assert math.isnan(out[0]) and out[1] == 0.0


class TestLeaveOneOut:
    def test_each_rater_is_compared_with_the_others_consensus(self):
        m = np.array([HUMANS["ann"], HUMANS["bob"], HUMANS["cat"]], dtype=float).T
        kappas = loo_kappas(m, SCALE)
        others = ordinal_consensus(m[:, 1:], SCALE)
        assert others.tolist() == [1, 1, 2, 3, 1, 3]
        assert kappas[0] == pytest.approx(cohen_kappa(m[:, 0], others, labels=SCALE, weights="quadratic"))
        assert len(kappas) == 3

    def test_a_lone_rater_has_no_figure(self):
        assert math.isnan(loo_kappas(np.array([[1.0], [2.0]]), SCALE)[0])


@pytest.mark.django_db
class TestOrdinalStudy:
    @pytest.fixture
    def report(self, researcher):
        study, raters = build_ordinal(researcher)
        return compute_alignment(study=study, params=AlignmentParams(n_resamples=200)), raters

    def test_a_judge_identical_to_the_consensus_has_kappa_one(self, report):
        result, _ = report
        twin = by_label(result["overall"]["judges"], "twin")
        assert twin["kappa"]["estimate"] == pytest.approx(1.0)
        assert twin["spearman"]["estimate"] == pytest.approx(1.0)
        assert twin["n_missing"] == 0
        # RMSE is measured against the reference mean, not the consensus.
        means = np.mean([HUMANS[n] for n in HUMANS], axis=0)
        assert twin["rmse"] == pytest.approx(float(np.sqrt(np.mean((means - [0, 1, 2, 3, 0, 3]) ** 2))))

    def test_a_judge_saying_the_opposite_has_kappa_minus_one(self, report):
        result, _ = report
        contrarian = by_label(result["overall"]["judges"], "contrarian")
        assert contrarian["kappa"]["estimate"] == pytest.approx(-1.0)
        assert contrarian["spearman"]["estimate"] == pytest.approx(-1.0)
        assert contrarian["kappa"]["p_value"] == pytest.approx(1.0)

    def test_missing_answers_are_counted_by_reason(self, report):
        result, _ = report
        gappy = by_label(result["overall"]["judges"], "gappy")
        assert (gappy["n_missing"], gappy["unparseable"], gappy["failed"], gappy["not_judged"]) == (3, 1, 1, 1)
        assert gappy["n_items"] == 6
        assert gappy["kappa"]["estimate"] == pytest.approx(1.0)

    def test_the_humans_own_figure_leaves_each_rater_out(self, report):
        result, _ = report
        humans = result["overall"]["humans"]
        assert humans["n"] == 3
        assert humans["min"] <= humans["mean"] <= humans["max"]
        twin = by_label(result["overall"]["judges"], "twin")
        assert twin["kappa_gap"] == pytest.approx(1.0 - humans["mean"])

    def test_the_excluded_rater_stays_out_of_the_default_reference(self, report):
        result, _ = report
        assert sorted(r["label"] for r in result["reference"]["raters"]) == ["ann", "bob", "cat"]

    def test_judges_are_ranked_by_kappa(self, report):
        result, _ = report
        assert [r["label"] for r in result["ranking"]][-1] == "contrarian"
        assert result["ranking"][0]["primary"] == pytest.approx(1.0)

    def test_a_chosen_subset_of_raters_is_the_reference(self, researcher):
        study, raters = build_ordinal(researcher)
        params = AlignmentParams(reference="selected", reference_rater_ids=(raters["ann"].pk,), n_resamples=50)
        result = compute_alignment(study=study, params=params)
        assert [r["label"] for r in result["reference"]["raters"]] == ["ann"]
        twin = by_label(result["overall"]["judges"], "twin")
        ann = np.array(HUMANS["ann"], dtype=float)
        expected = cohen_kappa(ann, np.array([0, 1, 2, 3, 0, 3.0]), labels=SCALE, weights="quadratic")
        assert twin["kappa"]["estimate"] == pytest.approx(expected)

    def test_breakdown_counts_a_multi_label_item_in_each_group(self, researcher):
        study, _ = build_ordinal(researcher)
        result = compute_alignment(study=study, params=AlignmentParams(breakdown="joke_type", n_resamples=50))
        groups = {g["value"]: g for g in result["breakdown"]["groups"]}
        assert {k: g["n_items"] for k, g in groups.items()} == {
            "pun": 3,
            "cultural": 2,
            "situational": 1,
            "(not set)": 1,
        }
        # gappy answered items 0–2 only: in "pun" (items 0, 1, 5) item 5 is missing.
        gappy = by_label(groups["pun"]["section"]["judges"], "gappy")
        assert (gappy["n_missing"], gappy["not_judged"]) == (1, 1)

    def test_only_the_chosen_judges_are_compared(self, researcher):
        study, raters = build_ordinal(researcher)
        params = AlignmentParams(judge_ids=(raters["twin"].pk,), n_resamples=50)
        result = compute_alignment(study=study, params=params)
        assert [j["label"] for j in result["overall"]["judges"]] == ["twin"]

    def test_plot_data_holds_distributions_and_confusion(self, report):
        result, raters = report
        plots = result["plots"]
        assert plots["counts"][plots["raters"].index("ann")] == [2, 1, 1, 2]
        confusion = plots["confusion"][str(raters["gappy"].pk)]
        # rows: consensus 0..3, columns: judge 0..3 then "missing"
        assert confusion[3] == [0, 0, 0, 0, 2]
        assert confusion[0] == [1, 0, 0, 0, 1]


def binary_study(owner):
    study = study_create(owner=owner, name="Explains?", task_type="binary", quota_per_item=20)
    config = {
        "options": [{"value": "good", "label": "Fully explains"}, {"value": "bad", "label": "Does not"}],
        "positive": "good",
    }
    study.config = config
    study.save(update_fields=["config"])
    items_create(
        study=study,
        items=[
            ItemSpec(external_id=f"e{i}", text=f"Joke {i}", gold={"label": g}, metadata={"explanation_source": s})
            for i, (g, s) in enumerate([("good", "llm"), ("bad", "llm"), ("good", "human"), ("bad", "human")])
        ],
    )
    study_set_state(study=study, state="open")
    return study


#: The labels ann, bob and cat all give to the items of ``voted_binary_study``, their gold too.
BINARY_TRUTH = ["good", "bad", "good", "bad"]


def voted_binary_study(owner):
    """``binary_study`` with three humans who all give each item its gold label; returns it and its items."""
    study = binary_study(owner)
    items = list(study.items.order_by("position"))
    for name in ("ann", "bob", "cat"):
        rater = add_rater(study, name)
        for item, label in zip(items, BINARY_TRUTH, strict=True):
            judge(study, rater, item, {"label": label})
    return study, items


@pytest.mark.django_db
class TestBinaryStudy:
    @pytest.fixture
    def result(self, researcher):
        study = binary_study(researcher)
        humans = [add_rater(study, n) for n in ("ann", "bob", "cat")]
        truth = ["good", "bad", "good", "bad"]
        flipped = {"good": "bad", "bad": "good"}
        for h in humans:
            for item, label in zip(study.items.order_by("position"), truth, strict=True):
                judge(study, h, item, {"label": label})
        same = add_rater(study, "same", Rater.Kind.LLM)
        opposite = add_rater(study, "opposite", Rater.Kind.LLM)
        silent = add_rater(study, "silent", Rater.Kind.LLM)
        items = list(study.items.order_by("position"))
        for item, label in zip(items, truth, strict=True):
            judge(study, same, item, {"label": label})
            judge(study, opposite, item, {"label": flipped[label]})
        judge(study, silent, items[0], {"label": "good"})
        judge(study, silent, items[1], None, status=Judgment.Status.UNPARSEABLE)
        params = AlignmentParams(reference="humans", breakdown="explanation_source", n_resamples=50)
        return compute_alignment(study=study, params=params)

    def test_the_same_labels_score_perfectly(self, result):
        same = by_label(result["overall"]["judges"], "same")["vs_majority"]
        assert (same["accuracy"], same["mcc"], same["fpr"], same["fnr"], same["kappa"]) == (1.0, 1.0, 0.0, 0.0, 1.0)

    def test_the_opposite_labels_score_zero(self, result):
        opposite = by_label(result["overall"]["judges"], "opposite")["vs_gold"]
        assert (opposite["accuracy"], opposite["mcc"], opposite["fpr"], opposite["fnr"]) == (0.0, -1.0, 1.0, 1.0)

    def test_missing_answers_count_as_wrong(self, result):
        silent = by_label(result["overall"]["judges"], "silent")["vs_majority"]
        assert silent["accuracy"] == 0.25
        assert (silent["n_missing"], silent["unparseable"], silent["not_judged"]) == (3, 1, 2)
        # A missing answer on a gold-negative item is a false positive, on a positive a false negative.
        assert silent["fpr"] == 1.0 and silent["fnr"] == 0.5

    def test_the_breakdown_splits_by_explanation_source(self, result):
        groups = {g["value"]: g["section"] for g in result["breakdown"]["groups"]}
        assert set(groups) == {"llm", "human"}
        assert by_label(groups["llm"]["judges"], "silent")["vs_majority"]["accuracy"] == 0.5
        assert by_label(groups["human"]["judges"], "silent")["vs_majority"]["accuracy"] == 0.0


@pytest.mark.django_db
class TestPairwiseStudy:
    @pytest.fixture
    def setup(self, researcher):
        study, humans, items = build_pairwise(researcher)
        bot = add_rater(study, "bot", Rater.Kind.LLM)
        # Human majority: x, y, tie, x.  bot: x (right), tie (wrong), tie (right), x (right).
        judge_in_order(study, bot, items[0], "x", shown=["x", "y"])
        judge_in_order(study, bot, items[0], "x", shown=["y", "x"], trial=1000, base_trial=0)
        judge_in_order(study, bot, items[1], "tie", shown=["x", "y"])
        judge_in_order(study, bot, items[1], "y", shown=["y", "x"], trial=1000, base_trial=0)
        judge_in_order(study, bot, items[2], "tie", shown=["x", "y"])
        judge_in_order(study, bot, items[3], "x", shown=["x", "y"])
        judge_in_order(
            study, bot, items[3], None, shown=["y", "x"], trial=1000, base_trial=0, status=Judgment.Status.UNPARSEABLE
        )
        echo = add_rater(study, "echo", Rater.Kind.BASELINE)
        for item, choice in zip(items, ["x", "y", "tie", "x"], strict=True):
            judge_in_order(study, echo, item, choice, shown=["x", "y"])
        return study

    def test_agreement_with_and_without_ties_counts_both_orders_verdicts(self, setup):
        result = compute_alignment(study=setup, params=AlignmentParams(n_resamples=50))
        bot = by_label(result["overall"]["judges"], "bot")
        # bot was asked in both orders: each order's verdict counts, as in the rankings (8 verdicts on 4 items).
        # A/B: x right, tie wrong, tie right, x right; B/A: x right, y right, never asked (missing), unparseable.
        assert bot["both_orders"] is True
        assert bot["with_ties"] == {"value": 5 / 8, "n": 8, "correct": 5}
        # Without ties: item 2 (human tie) and bot's A/B tie on item 1 are left out.
        assert bot["without_ties"] == {"value": 4 / 5, "n": 5, "correct": 4}
        echo = by_label(result["overall"]["judges"], "echo")
        assert echo["both_orders"] is False
        assert echo["with_ties"] == {"value": 1.0, "n": 4, "correct": 4}

    def test_the_confusion_matrix_counts_the_verdicts_the_figures_count(self, setup):
        result = compute_alignment(study=setup, params=AlignmentParams(n_resamples=50))
        bot = by_label(result["overall"]["judges"], "bot")
        scale = result["plots"]["scale"]
        table = np.asarray(result["plots"]["confusion"][str(bot["id"])])
        # Rows: the human majority; columns: bot's verdict, the last one missing. Both orders count, so on item 1
        # (majority y) the A/B tie and the B/A y are two verdicts, and item 3's unparseable B/A one is missing.
        first, tie, second, missing = scale.index(1.0), scale.index(0.5), scale.index(0.0), len(scale)
        expected = np.zeros((3, 4), dtype=int)
        expected[first, first] = 3  # items 0 and 3 in A/B, item 0 in B/A
        expected[first, missing] = 1  # item 3 in B/A: unparseable
        expected[second, tie] = 1  # item 1 in A/B
        expected[second, second] = 1  # item 1 in B/A
        expected[tie, tie] = 1  # item 2 in A/B
        expected[tie, missing] = 1  # item 2 never asked in B/A
        assert table.tolist() == expected.tolist()
        assert table.sum() == bot["with_ties"]["n"] == 8
        assert np.trace(table[:, :3]) == bot["with_ties"]["correct"]
        echo = by_label(result["overall"]["judges"], "echo")
        assert np.sum(result["plots"]["confusion"][str(echo["id"])]) == echo["with_ties"]["n"] == 4

    def test_a_judge_that_always_picks_the_first_shown_joke_loses_its_position_bonus(self, researcher):
        study, _, items = build_pairwise(researcher)
        first = add_rater(study, "first-shown", Rater.Kind.LLM)
        for item in items:
            judge_in_order(study, first, item, "x", shown=["x", "y"])
            judge_in_order(study, first, item, "y", shown=["y", "x"], trial=1000, base_trial=0)
        result = compute_alignment(study=study, params=AlignmentParams(n_resamples=50))
        row = by_label(result["overall"]["judges"], "first-shown")
        # Human majority x, y, tie, x: the A/B order alone scores 2 of 4 (x, x); the B/A order adds 1 of 4 (y).
        assert row["with_ties"] == {"value": 3 / 8, "n": 8, "correct": 3}
        assert row["position_consistency"]["value"] == 0.0

    def test_position_consistency_pairs_the_two_orders(self, setup):
        result = compute_alignment(study=setup, params=AlignmentParams(n_resamples=50))
        consistency = by_label(result["overall"]["judges"], "bot")["position_consistency"]
        assert consistency == {"value": 0.5, "n_pairs": 2, "consistent": 1, "incomplete": 1}

    def test_rankings_are_compared_with_kendall_tau(self, setup):
        result = compute_alignment(study=setup, params=AlignmentParams(n_resamples=50))
        echo = by_label(result["overall"]["judges"], "echo")
        assert echo["ranking_tau"]["n"] == 3
        assert echo["ranking_tau"]["tau"] == pytest.approx(1.0)
        pairs = result["overall"]["judge_pairs"]
        assert len(pairs) == 1 and pairs[0]["n"] == 3
        rankings = result["plots"]["rankings"]
        assert rankings["reference"]["names"] == ["m0", "m1", "m2"]

    def test_a_judge_that_never_answered_an_item_is_missing_there(self, setup):
        result = compute_alignment(study=setup, params=AlignmentParams(n_resamples=50, breakdown="source"))
        groups = {g["value"]: g["section"] for g in result["breakdown"]["groups"]}
        assert by_label(groups["news"]["judges"], "bot")["with_ties"]["n"] == 4  # 2 items, both orders
        assert by_label(result["overall"]["judges"], "echo")["n_missing"] == 0


@pytest.mark.django_db
def test_feature_tallies_share_wins_and_losses_per_contestant(researcher):
    study, _, items = build_pairwise(researcher)
    bot = add_rater(study, "bot", Rater.Kind.LLM)
    wordplay = {"humor_mechanisms": ["wordplay"], "delivery_features": ["timing"], "failure_features": ["cliché"]}
    # m0 beats m1 with wordplay; m1 beats m2 without mechanisms; m0 v m2 a tie (not tallied).
    judge_in_order(study, bot, items[0], "x", shown=["x", "y"], features=wordplay)
    judge_in_order(study, bot, items[1], "x", shown=["x", "y"], features={"failure_features": ["confusing"]})
    judge_in_order(study, bot, items[2], "tie", shown=["x", "y"], features=wordplay)
    tallies = feature_tallies(study, [RaterInfo(id=bot.pk, label="bot", kind="llm")])[bot.pk]
    assert tallies["contestants"] == ["m0", "m1", "m2"]
    assert tallies["features"] == ["loss:cliché", "loss:confusing", "win:timing", "win:wordplay"]
    share = dict(zip(tallies["contestants"], tallies["shares"], strict=True))
    assert share["m0"] == [None, None, 1.0, 1.0]  # one win, with wordplay and timing; never lost
    assert share["m1"] == [1.0, 0.0, 0.0, 0.0]  # lost once (cliché), won once (no mechanism)
    assert share["m2"] == [0.0, 1.0, None, None]


class TestPureHelpers:
    def test_pairwise_agreement_counts_each_order_of_a_both_orders_judge(self):
        majority = np.array([1.0, 0.0, np.nan])
        ab = np.array([1.0, 1.0, 1.0])
        ba = np.array([0.0, np.nan, 0.0])
        out = pairwise_agreement(majority, ab, ba)
        assert out["with_ties"] == {"value": 1 / 4, "n": 4, "correct": 1}

    def test_pairwise_agreement_counts_missing_as_wrong(self):
        majority = np.array([1.0, 0.0, 0.5, np.nan])
        judge_answers = np.array([np.nan, 0.0, 0.5, 1.0])
        out = pairwise_agreement(majority, judge_answers)
        assert out["with_ties"] == {"value": 2 / 3, "n": 3, "correct": 2}
        assert out["without_ties"] == {"value": 0.5, "n": 2, "correct": 1}

    def test_consistency_ignores_items_judged_in_one_order(self):
        groups = [
            {("a", "b"): ["a"], ("b", "a"): ["a"]},
            {("a", "b"): ["a"]},
            {("a", "b"): ["tie"], ("b", "a"): ["tie"]},
        ]
        assert order_consistency(groups).as_dict() == {"value": 1.0, "n_pairs": 2, "consistent": 2, "incomplete": 0}

    def test_metadata_groups_are_multi_label(self):
        groups = metadata_groups([["pun", "cultural"], "pun", None, {"a": 1}])
        assert groups == {"cultural": [0], "pun": [0, 1], "(not set)": [2], '{"a": 1}': [3]}


@pytest.mark.django_db
class TestPickOneStudy:
    def test_accuracy_against_gold_and_majority(self, researcher):
        study = study_create(owner=researcher, name="Oogiri", task_type="pick_one", quota_per_item=20)
        items_create(
            study=study,
            items=[
                ItemSpec(
                    external_id=f"q{i}",
                    prompt=f"Prompt {i}",
                    candidates=[CandidateSpec(key=k, text=f"Answer {k}{i}") for k in ("a", "b", "c")],
                    gold={"choice": "b"},
                )
                for i in range(3)
            ],
        )
        study_set_state(study=study, state="open")
        items = list(Item.objects.filter(study=study).order_by("position"))
        for name, picks in {"ann": "bbc", "bob": "bac", "cat": "abc"}.items():
            rater = add_rater(study, name)
            for item, pick in zip(items, picks, strict=True):
                judge(study, rater, item, {"choice": pick})
        llm = add_rater(study, "llm", Rater.Kind.LLM)
        judge(study, llm, items[0], {"choice": "b"})
        judge(study, llm, items[1], {"choice": "b"})
        judge(study, llm, items[2], None, status=Judgment.Status.FAILED)
        result = compute_alignment(study=study, params=AlignmentParams(n_resamples=50))
        row = by_label(result["overall"]["judges"], "llm")
        assert row["vs_gold"]["accuracy"] == pytest.approx(2 / 3)
        assert (row["vs_gold"]["n_missing"], row["vs_gold"]["failed"]) == (1, 1)
        # Human majority: b (b, b, a), b (b, a, b), c (c, c, c); the failed answer on the last is wrong.
        assert row["vs_majority"]["n"] == 3
        assert row["vs_majority"]["accuracy"] == pytest.approx(2 / 3)


@pytest.mark.django_db
def test_free_text_studies_have_no_alignment_report(researcher):
    study = study_create(owner=researcher, name="Edits", task_type="micro_edit")
    with pytest.raises(AlignmentUnavailable):
        compute_alignment(study=study, params=AlignmentParams())


@pytest.mark.django_db
def test_a_study_without_judges_says_so(researcher):
    study, _ = build_ordinal(researcher)
    Judgment.objects.filter(rater__kind__in=["llm", "baseline"]).delete()
    with pytest.raises(AlignmentUnavailable, match="no LLM or baseline judge"):
        compute_alignment(study=study, params=AlignmentParams())


def test_params_digest_ignores_the_order_of_ids():
    a = AlignmentParams(reference="selected", reference_rater_ids=(3, 1), judge_ids=(9, 2))
    b = AlignmentParams(reference="selected", reference_rater_ids=(1, 3), judge_ids=(2, 9))
    assert a.key == b.key
    assert a.key != AlignmentParams(reference="humans").key
    with pytest.raises(ValueError):
        AlignmentParams(reference="selected")


@pytest.mark.django_db
def test_a_study_judged_only_by_models_still_ranks_and_tallies(researcher):
    study, humans, items = build_pairwise(researcher)
    Judgment.objects.filter(rater__in=humans.values()).delete()
    bot = add_rater(study, "bot", Rater.Kind.LLM)
    for item, choice in zip(items, ["x", "y", "x", "x"], strict=True):
        judge_in_order(study, bot, item, choice, shown=["x", "y"], features={"humor_mechanisms": ["irony"]})
    result = compute_alignment(study=study, params=AlignmentParams(n_resamples=50))
    assert result["overall"] is None and result["ranking"] == []
    assert "only the judges' own rankings" in result["warnings"][-1]
    assert result["plots"]["rankings"][str(bot.pk)]["names"] == ["m0", "m1", "m2"]
    assert result["plots"]["features"][str(bot.pk)]["features"] == ["win:irony"]
    assert "confusion" not in result["plots"]


@pytest.mark.django_db
def test_a_pairwise_breakdown_does_not_repeat_the_overall_ranking(researcher):
    study, _, items = build_pairwise(researcher)
    echo = add_rater(study, "echo", Rater.Kind.BASELINE)
    for item, choice in zip(items, ["x", "y", "tie", "x"], strict=True):
        judge_in_order(study, echo, item, choice, shown=["x", "y"])
    result = compute_alignment(study=study, params=AlignmentParams(n_resamples=50, breakdown="source"))
    assert by_label(result["overall"]["judges"], "echo")["ranking_tau"]["n"] == 3
    for group in result["breakdown"]["groups"]:
        assert by_label(group["section"]["judges"], "echo")["ranking_tau"] == {"tau": None, "p_value": None, "n": 0}


@pytest.mark.django_db
def test_rater_figures_keep_the_busiest_raters_of_a_large_panel(researcher, monkeypatch):
    monkeypatch.setattr("ratings.alignment.study.MAX_PLOT_RATERS", 5)
    study, raters = build_ordinal(researcher)
    Judgment.objects.filter(rater=raters["cat"], item__position__gte=3).delete()
    result = compute_alignment(study=study, params=AlignmentParams(n_resamples=50))
    plots = result["plots"]
    # 5 columns − 3 judges leaves the 2 humans with the most ratings (ann and bob, not cat).
    assert plots["raters"] == ["ann", "bob", "twin", "contrarian", "gappy"]
    assert len(plots["spearman"]) == 5
    assert "2 reference raters" in plots["note"]
