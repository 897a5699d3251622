"""What an item page says about the item: the protocol's question, its texts named, an edit's words marked."""

import pytest

from annotation.demo.builder import demo_studies
from annotation.protocols import study_from_template
from annotation.services.studies import CandidateSpec, ItemSpec, items_create, study_set_state
from annotation.task_types.free_text import EDIT_MARK_MAX_CHARS, Segment, edit_segments

from .test_annotator_flow import begin, fresh_rate_limits  # noqa: F401
from .test_annotator_item import item_page

pytestmark = pytest.mark.django_db


def template_study(owner, template: str, items: list[ItemSpec], **config):
    study = study_from_template(owner=owner, template=template, name=f"{template} study", config=config)
    items_create(study=study, items=items)
    study_set_state(study=study, state="open")
    return study


def explanation_pair(external_id="joke-1") -> ItemSpec:
    return ItemSpec(
        external_id=external_id,
        prompt="A joke about a tortoise called Quick.",
        candidates=[
            CandidateSpec("human", "It names the tortoise for what it lacks."),
            CandidateSpec("llm", "It is fast."),
        ],
    )


class TestChumorPreferenceQuestion:
    def test_it_asks_which_explanation_explains_the_joke_not_which_is_funnier(self, csrf_client, researcher):
        study = template_study(researcher, "chumor-preference", [explanation_pair()], language="en")
        begin(csrf_client, study)
        page = item_page(csrf_client, study).content.decode()
        assert "Which explanation explains the joke better?" in page
        assert "funnier" not in page
        assert "Explanation 1" in page and "Equally good" in page

    def test_in_chinese_the_question_and_labels_are_chinese(self, csrf_client, researcher):
        study = template_study(researcher, "chumor-preference", [explanation_pair()])
        assert study.config["language"] == "zh"  # the template's default: Chumor is a Chinese study
        begin(csrf_client, study)
        page = item_page(csrf_client, study).content.decode()
        assert "哪个解释把笑话讲得更清楚？" in page and "解释 1" in page and "一样好" in page

    def test_the_demo_preference_studies_ask_the_protocol_question(self):
        preference = [s for s in demo_studies() if s.protocol == "chumor-preference"]
        assert preference
        assert {s.config["question"] for s in preference} == {"Which explanation explains the joke better?"}


class TestChumorExplanationParts:
    def test_the_joke_and_the_explanation_are_labelled(self, csrf_client, researcher):
        item = ItemSpec(external_id="j1", prompt="同事想借我的伞。", text="这个笑话讲的是借伞。")
        study = template_study(researcher, "chumor-explanation", [item], language="en")
        begin(csrf_client, study)
        page = item_page(csrf_client, study).content.decode()
        assert (
            '<h2 class="part-label" id="item-part-prompt">Joke</h2><p class="prompt" lang="en">同事想借我的伞。</p>'
            in page
        )
        assert '<h2 class="part-label" id="item-part-text">Explanation</h2>' in page
        assert "Does the explanation fully explain the joke?" in page
        assert page.index("item-part-prompt") < page.index("item-part-text")

    def test_in_chinese_they_are_labelled_in_chinese(self, csrf_client, researcher):
        item = ItemSpec(external_id="j1", prompt="同事想借我的伞。", text="这个笑话讲的是借伞。")
        study = template_study(researcher, "chumor-explanation", [item])
        begin(csrf_client, study)
        page = item_page(csrf_client, study).content.decode()
        assert ">笑话</h2>" in page and ">解释</h2>" in page and "完全解释清楚" in page

    def test_a_study_without_a_protocol_shows_its_texts_bare(self, csrf_client, make_study):
        study = make_study(n_items=1)
        begin(csrf_client, study)
        assert "part-label" not in item_page(csrf_client, study).content.decode()


class TestSemEvalGradingItem:
    def test_the_two_headlines_are_labelled_and_the_changed_word_is_marked(self, csrf_client, researcher):
        item = ItemSpec(
            external_id="potholes:pigeons",
            prompt="Mayor unveils plan to fix city potholes by next spring",
            text="Mayor unveils plan to fix city pigeons by next spring",
        )
        study = template_study(researcher, "semeval2020t7-grading", [item])
        begin(csrf_client, study)
        page = item_page(csrf_client, study).content.decode()
        assert ">Original headline</h2>" in page and ">Edited headline</h2>" in page
        assert 'city <mark class="changed-word">potholes</mark> by' in page
        assert 'city <mark class="changed-word">pigeons</mark> by' in page
        assert page.count('class="changed-word"') == 2

    def test_markup_in_a_headline_is_escaped_inside_and_outside_the_mark(self, csrf_client, researcher):
        item = ItemSpec(
            external_id="x",
            prompt="Council <b>bans</b> & fines cats",
            text="Council <b>bans</b> & fines <script>alert(1)</script>",
        )
        study = template_study(researcher, "semeval2020t7-grading", [item])
        begin(csrf_client, study)
        page = item_page(csrf_client, study).content.decode()
        assert "<script>alert" not in page and "<b>bans" not in page
        assert "Council &lt;b&gt;bans&lt;/b&gt; &amp; fines" in page
        assert '<mark class="changed-word">&lt;script&gt;alert(1)&lt;/script&gt;</mark>' in page


class TestEditSegments:
    def test_it_marks_the_replaced_word_on_both_sides(self):
        before, after = edit_segments(
            "Storm delays launch of weather satellite", "Storm delays launch of weather balloon"
        )
        assert [s for s in before if s.changed] == [Segment("satellite", changed=True)]
        assert [s for s in after if s.changed] == [Segment("balloon", changed=True)]
        assert "".join(s.text for s in before) == "Storm delays launch of weather satellite"
        assert "".join(s.text for s in after) == "Storm delays launch of weather balloon"

    def test_punctuation_next_to_the_word_stays_unmarked(self):
        _before, after = edit_segments("Scientists warn coffee shortage!", "Scientists warn nap shortage!")
        assert [s.text for s in after if s.changed] == ["nap"]

    def test_nothing_is_marked_when_the_texts_are_the_same_missing_or_too_long(self):
        assert edit_segments("Same words", "Same words") == ([], [])
        assert edit_segments("", "Edited") == ([], [])
        long = "word " * (EDIT_MARK_MAX_CHARS // 5 + 1)
        assert edit_segments(long, long + "more") == ([], [])
