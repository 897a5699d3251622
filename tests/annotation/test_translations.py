"""The annotator pages' translations: complete catalogs, matching placeholders, the study's language chosen.

The catalogs (locale/*/LC_MESSAGES/django.po) are committed with their compiled
.mo files, so these tests read the .po text directly and check the .mo against it.
"""

import ast
import gettext
import re
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings
from django.template import Variable, engines
from django.templatetags.i18n import BlockTranslateNode, TranslateNode
from django.utils import timezone

from annotation.languages import annotator_language
from annotation.models import Assignment
from annotation.protocols import protocol_import, study_from_template
from annotation.protocols.oogiri_benchmark import benchmark_tasks_build
from annotation.services.assignment import next_assignment
from annotation.services.enrollment import enroll_crowdworker
from annotation.services.imported_judgments import judgments_import
from annotation.services.judgments import judgment_submit
from annotation.services.studies import CandidateSpec, ItemSpec, items_create, study_set_state
from tests.protocols.test_oogiri_ground_truth import simulated_votes, voting_csv

from .test_annotator_flow import (  # noqa: F401
    answer_all,
    assignment_from,
    begin,
    csrf_from,
    enter,
    fresh_rate_limits,
    post_from_page,
    url,
)
from .test_annotator_item import item_page, open_study, submit
from .test_completion_codes import fill_up

LOCALES = {"zh-hans": "zh_Hans", "ja": "ja"}
TEMPLATES_DIR = Path(settings.BASE_DIR) / "templates"
ANNOTATOR_TEMPLATES = sorted(
    [p.relative_to(TEMPLATES_DIR).as_posix() for p in (TEMPLATES_DIR / "annotation").rglob("*.html")]
    + ["base.html", "registration/login.html"]
)
PLACEHOLDER = re.compile(r"%\((\w+)\)[sd]")
# English a page of a translated study must not show (the page's own words, not the study's texts).
ENGLISH_UI = [
    "Before you start",
    "I agree",
    "I do not agree",
    "Instructions",
    "Keyboard shortcuts",
    "Start",
    "Skip to content",
    " done",
    "Your answer",
    "Submit",
    "Thank you",
    "Your completion code is",
    "Copy the code",
    "Enter this code",
]


@dataclass
class Entry:
    context: str | None
    msgid: str
    plural: str | None
    strings: list[str]
    fuzzy: bool


def read_po(path: Path) -> list[Entry]:
    """The entries of a .po file (header left out); enough of the format for the files makemessages writes."""
    entries = []
    for block in path.read_text(encoding="utf-8").split("\n\n"):
        fields: dict[str, list[str]] = {}
        current = None
        fuzzy = False
        for line in block.splitlines():
            if line.startswith("#,") and "fuzzy" in line:
                fuzzy = True
            elif line.startswith("#") or not line.strip():
                continue
            elif line.startswith('"'):
                fields[current].append(ast.literal_eval(line))
            else:
                current, _space, rest = line.partition(" ")
                fields[current] = [ast.literal_eval(rest)]
        text = {name: "".join(parts) for name, parts in fields.items()}
        if text.get("msgid"):
            strings = [value for name, value in sorted(text.items()) if name.startswith("msgstr")]
            entries.append(Entry(text.get("msgctxt"), text["msgid"], text.get("msgid_plural"), strings, fuzzy))
    return entries


def catalog(language: str) -> list[Entry]:
    return read_po(Path(settings.BASE_DIR) / "locale" / LOCALES[language] / "LC_MESSAGES" / "django.po")


def _literal(expression) -> str | None:
    if expression is None:
        return None
    var = expression.var
    return var.literal if isinstance(var, Variable) else str(var)


def template_msgids() -> set[tuple[str | None, str]]:
    """(context, msgid) of every translate and blocktranslate tag in the annotator templates."""
    engine = engines["django"].engine
    found = set()
    for name in ANNOTATOR_TEMPLATES:
        nodelist = engine.get_template(name).nodelist
        for node in nodelist.get_nodes_by_type(TranslateNode):
            found.add((_literal(node.message_context), node.filter_expression.var.literal))
        for node in nodelist.get_nodes_by_type(BlockTranslateNode):
            found.add((_literal(node.message_context), node.render_token_list(node.singular)[0]))
    return found


@pytest.mark.parametrize("language", LOCALES)
class TestCatalogs:
    def test_every_message_is_translated_and_none_is_fuzzy(self, language):
        entries = catalog(language)
        assert len(entries) > 100
        untranslated = [e.msgid for e in entries if not e.strings or not all(s.strip() for s in e.strings)]
        assert not untranslated, f"untranslated in {language}: {untranslated}"
        assert not [e.msgid for e in entries if e.fuzzy], f"fuzzy entries in {language}"

    def test_every_message_of_the_annotator_templates_is_in_the_catalog(self, language):
        known = {(e.context, e.msgid) for e in catalog(language)}
        wanted = template_msgids()
        assert len(wanted) > 80  # the walk finds the tags, including those in partials and blocks
        assert not wanted - known, f"run `make messages`: missing in {language}: {sorted(wanted - known, key=str)}"

    def test_the_placeholders_of_each_translation_match_its_message(self, language):
        for entry in catalog(language):
            expected = set(PLACEHOLDER.findall(entry.msgid)) | set(PLACEHOLDER.findall(entry.plural or ""))
            for translated in entry.strings:
                assert set(PLACEHOLDER.findall(translated)) == expected, (entry.msgid, translated)
                # A lone % (not %% or a named placeholder) would break the substitution.
                assert not re.search(r"%(?!\(\w+\)[sd]|%)", translated), translated

    def test_the_compiled_catalog_says_what_the_po_file_says(self, language):
        directory = Path(settings.BASE_DIR) / "locale"
        compiled = gettext.translation("django", localedir=directory, languages=[LOCALES[language]])
        for entry in catalog(language):
            key = f"{entry.context}\x04{entry.msgid}" if entry.context else entry.msgid
            if entry.plural:
                assert compiled.ngettext(key, entry.plural, 1) == entry.strings[0], "run `make messages`"
            else:
                assert compiled.gettext(key) == entry.strings[0], f"stale .mo for {entry.msgid!r}: run `make messages`"


class TestStudyLanguage:
    @pytest.mark.parametrize(
        ("tag", "language"),
        [("zh", "zh-hans"), ("zh-CN", "zh-hans"), ("zh-Hans", "zh-hans"), ("ja", "ja"), ("ja-JP", "ja")]
        + [("en", "en"), ("fr", "en"), ("", "en"), ('ja" onclick="x', "en")],
    )
    def test_the_config_language_picks_a_translated_language_or_english(self, tag, language):
        assert annotator_language({"language": tag}) == language

    def test_a_study_without_a_language_is_english(self):
        assert annotator_language({}) == annotator_language(None) == "en"


JOKE = "我问老板榴莲为什么这么贵。"


def chinese_study(researcher, **config):
    items = [ItemSpec(external_id=f"zh-{i}", text=f"{JOKE}{i}") for i in range(2)]
    return open_study(researcher, "binary", items, config={"language": "zh", **config}, completion_code="ZH-CODE-1")


class TestAnnotatorPagesInTheStudyLanguage:
    def test_a_chinese_study_speaks_chinese_from_consent_to_the_completion_code(self, csrf_client, researcher):
        study = chinese_study(researcher)
        csrf_client.get(url(study), {"PROLIFIC_PID": "zh-worker-1"})
        consent = csrf_client.get(url(study, "consent"))
        assert consent["Content-Language"] == "zh-hans"
        page = consent.content.decode()
        assert '<html lang="zh-hans">' in page and "我同意" in page and "开始之前" in page
        csrf_client.post(url(study, "consent"), {"decision": "agree", "csrfmiddlewaretoken": csrf_from(consent)})
        instructions = csrf_client.get(url(study, "instructions"))
        page = instructions.content.decode()
        assert "键盘快捷键" in page and "选择“好笑”" in page
        csrf_client.post(url(study, "instructions"), {"csrfmiddlewaretoken": csrf_from(instructions)})
        item = item_page(csrf_client, study).content.decode()
        # The task type's question and default labels, which the platform wrote, in Chinese.
        assert "哪个标签合适？" in item and "不好笑" in item and "已完成 0 / 2" in item
        for _ in range(2):
            submit(csrf_client, study, {"label": "funny"})
        done = csrf_client.get(url(study, "item"), follow=True).content.decode()
        assert "你的完成码是：" in done and "ZH-CODE-1" in done and "复制完成码" in done
        for page in (consent.content.decode(), instructions.content.decode(), item, done):
            visible = re.sub(r"<[^>]+>", " ", page)
            assert not [english for english in ENGLISH_UI if english in visible], visible

    def test_a_japanese_study_answers_a_bad_post_in_japanese(self, csrf_client, researcher):
        items = [ItemSpec(external_id="ja-1", text="猫が社長になった。")]
        study = open_study(researcher, "ordinal", items, config={"language": "ja"})
        begin(csrf_client, study)
        response, _assignment = submit(csrf_client, study, {"rating": ""})
        assert response.status_code == 422
        page = response.content.decode()
        assert "評価を選んでください。" in page and "どのくらい面白いですか？" in page and "とても面白い" in page

    def test_a_label_the_researcher_wrote_is_shown_as_written(self, csrf_client, researcher):
        options = [{"value": "funny", "label": "Funny"}, {"value": "meh", "label": "还行吧 (custom)"}]
        study = chinese_study(researcher, options=options, positive="funny")
        begin(csrf_client, study)
        page = item_page(csrf_client, study).content.decode()
        assert "好笑" in page and "还行吧 (custom)" in page

    def test_an_english_study_and_the_researcher_pages_stay_english(self, client, csrf_client, researcher):
        chinese = chinese_study(researcher)
        english = open_study(researcher, "binary", [ItemSpec(external_id="en-1", text="A joke.")], name="English")
        begin(csrf_client, chinese)
        assert "我同意" not in csrf_client.get(url(chinese, "item")).content.decode()  # on the item by now
        begin(csrf_client, english, pid="worker-2")
        page = csrf_client.get(url(english, "item"))
        assert page["Content-Language"] == "en" and "Which label fits?" in page.content.decode()
        # The Chinese request left nothing behind: the researcher's pages are English.
        client.force_login(researcher)
        studies = client.get("/studies/")
        assert studies.status_code == 200 and '<html lang="en">' in studies.content.decode()
        assert "Content-Language" not in studies

    def test_the_refused_entry_link_explains_itself_in_the_study_language(self, client, researcher):
        study = open_study(researcher, "binary", [ItemSpec(external_id="ja-1", text="猫")], config={"language": "ja"})
        page = client.get(url(study), {"PROLIFIC_PID": "{{%PROLIFIC_PID%}}"})
        assert page.status_code == 400
        text = page.content.decode()
        assert "このリンクには参加者IDが必要です" in text and "<code>{{%PROLIFIC_PID%}}</code>" in text


class TestTemplateTextsInTheStudyLanguage:
    def test_a_chumor_study_gets_chinese_texts_and_an_english_one_the_originals(self, researcher):
        chinese = study_from_template(owner=researcher, template="chumor-explanation", name="zh")
        english = study_from_template(
            owner=researcher, template="chumor-explanation", name="en", config={"language": "en"}
        )
        assert "“没有完全解释清楚”" in chinese.instructions_text
        assert 'choose "Does not fully explain"' in english.instructions_text
        assert english.consent_text.startswith("You will read short jokes")

    def test_a_text_given_with_the_study_is_kept_as_given(self, researcher):
        study = study_from_template(owner=researcher, template="oogiri-voting", name="v", consent_text="Our own words.")
        assert study.consent_text == "Our own words."
        assert "3票" in study.instructions_text

    @pytest.mark.parametrize(("voting_language", "expected"), [(None, "ja"), ("en", "en")])
    def test_benchmark_studies_speak_the_language_of_their_voting_study(self, researcher, voting_language, expected):
        config = {"language": voting_language} if voting_language else {}
        voting = study_from_template(owner=researcher, template="oogiri-voting", name="votes", config=config)
        assert protocol_import(study=voting, data=voting_csv(), filename="voting.csv").ok
        judgments_import(study=voting, judgments=simulated_votes(np.random.default_rng(11)))
        built = benchmark_tasks_build(study=voting, owner=researcher, seed=5)
        assert built and {study.config["language"] for study in built.values()} == {expected}
        binary = built["binary"]
        if expected == "ja":
            assert "面白いか面白くないか" in binary.instructions_text
        else:
            assert binary.instructions_text.startswith("You will see a prompt and one answer to it.")


def no_english_ui(page: str) -> None:
    visible = re.sub(r"<[^>]+>", " ", page)
    assert not [english for english in ENGLISH_UI if english in visible], visible


class TestEveryEndingInTheStudyLanguage:
    def test_a_full_study_says_so_in_japanese(self, csrf_client, make_study):
        study = make_study(n_items=1, quota_per_item=1, config={"language": "ja"}, no_work_code="EMPTY-JA")
        fill_up(study)
        page = csrf_client.get(enter(csrf_client, study, "late-comer")["Location"], follow=True).content.decode()
        assert "残りの問題はありません" in page and "完了コード：" in page and "EMPTY-JA" in page
        no_english_ui(page)

    def test_a_session_ended_by_attention_checks_says_so_in_japanese(self, csrf_client, make_study):
        study = make_study(
            n_items=2, attention_check_rate=0.5, attention_check_policy="end", open_=False, config={"language": "ja"}
        )
        check = ItemSpec(external_id="check", text="0 を押してください。", gold={"rating": 0}, is_attention_check=True)
        items_create(study=study, items=[check])
        study_set_state(study=study, state="open")
        begin(csrf_client, study)
        answer_all(csrf_client, study, {"rating": "3"})
        page = csrf_client.get(url(study, "done")).content.decode()
        assert "セッションが終了しました" in page and "確認用の問題" in page
        no_english_ui(page)

    def test_a_closed_study_and_a_decline_say_so_in_chinese(self, csrf_client, make_study):
        study = make_study(n_items=2, config={"language": "zh"})
        begin(csrf_client, study)
        study_set_state(study=study, state="closed")
        page = csrf_client.get(url(study, "item"), follow=True).content.decode()
        assert "这项研究已经结束" in page and "感谢你的回答，它们都已保存。" in page
        other = make_study(n_items=1, name="declined", config={"language": "zh"})
        enter(csrf_client, other, "no-thanks")
        page = post_from_page(csrf_client, url(other, "consent"), {"decision": "decline"}, follow=True)
        assert "感谢你考虑参加这项研究" in page.content.decode() and "我改主意了" in page.content.decode()

    def test_waiting_for_leased_items_and_a_late_answer_are_explained_in_chinese(self, csrf_client, make_study):
        study = make_study(n_items=1, quota_per_item=1, config={"language": "zh"})
        squatter = enroll_crowdworker(study=study, participant_id="squatter")
        next_assignment(enrollment=squatter)
        begin(csrf_client, study, "real-worker")
        page = csrf_client.get(url(study, "item")).content.decode()
        assert "稍后可能会有新的题目" in page and "本页面每 15 秒检查一次" in page and "立即检查" in page
        no_english_ui(page)

        late = make_study(n_items=1, quota_per_item=1, name="late", config={"language": "zh"})
        begin(csrf_client, late, "slow-worker")
        item = csrf_client.get(url(late, "item"))
        mine = Assignment.objects.get(pk=assignment_from(item))
        Assignment.objects.filter(pk=mine.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
        quicker = enroll_crowdworker(study=late, participant_id="quicker")
        judgment_submit(
            assignment=next_assignment(enrollment=quicker).assignment, rater=quicker.rater, value={"rating": 1}
        )
        form = {"rating": "2", "assignment": mine.pk, "csrfmiddlewaretoken": csrf_from(item)}
        page = csrf_client.post(url(late, "item"), form, follow=True).content.decode()
        assert "你停留太久，这一题已经交给了别人；这是下一题。" in page and "没有剩余的题目" in page

    def test_the_leaderboard_is_in_japanese(self, client, researcher):
        items = [
            ItemSpec(
                external_id="p1",
                prompt="猫の社長の口ぐせは？",
                candidates=[CandidateSpec("a", "昼寝は仕事です"), CandidateSpec("b", "にゃ")],
            )
        ]
        study = open_study(researcher, "vote_allocation", items, config={"language": "ja"})
        worker = enroll_crowdworker(study=study, participant_id="voter-1")
        assignment = next_assignment(enrollment=worker).assignment
        judgment_submit(assignment=assignment, rater=worker.rater, value={"votes": {"a": 2, "b": 1}})
        open_page = client.get(url(study, "leaderboard")).content.decode()
        assert "結果は投票終了後に公開されます。" in open_page
        study_set_state(study=study, state="closed")
        page = client.get(url(study, "leaderboard")).content.decode()
        assert "合計 3 票" in page and "2 票" in page and '<html lang="ja">' in page
