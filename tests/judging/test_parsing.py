"""Reading judges' answers: structured first, tolerant second, never a silent default."""

import pytest

from annotation.task_types import get_task_type
from judging.parsing import find_json_object, parse_answer

PAIR = ["cand-x", "cand-y"]
ORDINAL = get_task_type("ordinal").config(None)
BINARY = get_task_type("binary").config(None)
PAIRWISE = get_task_type("pairwise").config(None)
NO_TIE = get_task_type("pairwise").config({"allow_tie": False})


def pairwise(text, config=PAIRWISE):
    return parse_answer(task_type="pairwise", text=text, shown_order=PAIR, config=config)


class TestPairwise:
    def test_the_humorrank_json_maps_a_to_the_first_candidate_shown(self):
        parsed = pairwise(
            '{"reasoning": "sharper", "decision": "A", "humor_mechanisms": ["wordplay", "irony"],'
            ' "delivery_features": ["timing"], "failure_features": ["cliche"]}'
        )
        assert parsed.value == {"choice": "cand-x"}
        assert parsed.method == "json"
        assert parsed.extras["features"] == {
            "humor_mechanisms": ["wordplay", "irony"],
            "delivery_features": ["timing"],
            "failure_features": ["cliché"],
        }
        assert parsed.extras["reasoning"] == "sharper"

    def test_words_outside_the_vocabulary_are_dropped_and_noted(self):
        parsed = pairwise('{"decision": "B", "humor_mechanisms": ["wordplay", "vibes"]}')
        assert parsed.value == {"choice": "cand-y"}
        assert parsed.extras["features"]["humor_mechanisms"] == ["wordplay"]
        assert parsed.extras["features_dropped"] == ["vibes"]

    def test_json_inside_a_code_fence_and_chatter_is_found(self):
        assert pairwise('Sure!\n```json\n{"decision": "TIE"}\n```\nHope that helps.').value == {"choice": "tie"}

    def test_a_tie_is_refused_when_the_study_allows_none(self):
        parsed = pairwise('{"decision": "TIE"}', config=NO_TIE)
        assert parsed.value is None
        assert "tie" in parsed.error

    def test_an_unknown_decision_is_unparseable_not_a_tie(self):
        parsed = pairwise('{"decision": "C"}')
        assert parsed.value is None
        assert "not A, B" in parsed.error

    def test_a_json_answer_without_a_decision_is_not_read_word_by_word(self):
        assert pairwise('{"reasoning": "A is better than B"}').value is None

    @pytest.mark.parametrize(
        ("text", "choice", "pattern"),
        [("B", "cand-y", "whole_answer"), ("Decision: A", "cand-x", "labelled"), ("tie.", "tie", "whole_answer")],
    )
    def test_plain_text_fallback_accepts_unambiguous_answers(self, text, choice, pattern):
        parsed = pairwise(text)
        assert parsed.value == {"choice": choice}
        assert parsed.method == f"text_pattern:{pattern}"

    @pytest.mark.parametrize("text", ["", "   ", "Both jokes are fine.", "Decision: A. Actually, decision: B"])
    def test_anything_else_is_unparseable(self, text):
        parsed = pairwise(text)
        assert parsed.value is None
        assert parsed.error


class TestOrdinal:
    @pytest.mark.parametrize(
        ("text", "rating"),
        [("2", 2), ('{"rating": 3}', 3), ("Rating: 1", 1), ('{"rating": "0"}', 0), ("I would say 2 out of 3", 2)],
    )
    def test_a_digit_is_read(self, text, rating):
        assert parse_answer(task_type="ordinal", text=text, shown_order=[], config=ORDINAL).value == {"rating": rating}

    @pytest.mark.parametrize("text", ["7", "2 or 3", "I would say 2 out of 5", "funny", '{"rating": 2.5}'])
    def test_out_of_scale_or_ambiguous_answers_are_unparseable(self, text):
        parsed = parse_answer(task_type="ordinal", text=text, shown_order=[], config=ORDINAL)
        assert parsed.value is None, text


class TestBinary:
    @pytest.mark.parametrize(
        ("text", "label"),
        [
            ('{"label": "not_funny"}', "not_funny"),
            ("Not funny", "not_funny"),
            ("funny", "funny"),
            ("Yes", "funny"),
            ("Label: not funny", "not_funny"),
            ("This one is not funny at all.", "not_funny"),
        ],
    )
    def test_labels_are_read_without_confusing_not_funny_for_funny(self, text, label):
        assert parse_answer(task_type="binary", text=text, shown_order=[], config=BINARY).value == {"label": label}

    def test_both_labels_in_prose_is_unparseable(self):
        parsed = parse_answer(
            task_type="binary", text="Some find it funny, others not funny.", shown_order=[], config=BINARY
        )
        assert parsed.value is None
        assert "conflicting" in parsed.error


class TestChoicesAndText:
    def test_pick_one_reads_an_option_number(self):
        config = get_task_type("pick_one").config(None)
        keys = ["p", "q", "r"]
        assert parse_answer(task_type="pick_one", text='{"choice": 3}', shown_order=keys, config=config).value == {
            "choice": "r"
        }
        assert parse_answer(task_type="pick_one", text="Option 2", shown_order=keys, config=config).value == {
            "choice": "q"
        }
        assert parse_answer(task_type="pick_one", text='{"choice": 4}', shown_order=keys, config=config).value is None

    def test_votes_are_counted_per_response(self):
        config = get_task_type("vote_allocation").config(None)
        parsed = parse_answer(
            task_type="vote_allocation", text='{"votes": [2, 2, 1]}', shown_order=["a", "b", "c"], config=config
        )
        assert parsed.value == {"votes": {"b": 2, "a": 1}}

    def test_too_many_votes_are_refused(self):
        config = get_task_type("vote_allocation").config(None)
        parsed = parse_answer(
            task_type="vote_allocation", text='{"votes": [1, 1, 1, 1]}', shown_order=["a", "b"], config=config
        )
        assert parsed.value is None

    def test_a_micro_edit_must_change_the_word(self):
        config = get_task_type("micro_edit").config(None)
        text = "Senate passes <budget/> bill"
        kwargs = {"task_type": "micro_edit", "shown_order": [], "config": config, "item_text": text}
        assert parse_answer(text='{"replacement": "burrito"}', **kwargs).value == {"replacement": "burrito"}
        assert parse_answer(text='{"replacement": "budget"}', **kwargs).value is None

    def test_find_json_object_skips_non_objects(self):
        assert find_json_object('[1, 2] then {"a": 1}') == {"a": 1}
        assert find_json_object("no json here") is None


class TestHostileAnswers:
    def test_deeply_nested_json_is_unparseable_not_a_crash(self):
        parsed = pairwise('{"decision": ' + "[" * 100_000 + "]" * 100_000 + "}")
        assert parsed.value is None
        assert parsed.error

    def test_an_explanation_with_a_nul_character_is_refused_before_the_database(self):
        parsed = parse_answer(
            task_type="explanation",
            text='{"text": "Because the pun\\u0000 lands late."}',
            shown_order=[],
            config=get_task_type("explanation").config(None),
        )
        assert parsed.value is None
        assert parsed.error == "Your answer contains a NUL character (0x00); please remove it."
