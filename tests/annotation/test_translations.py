"""The annotator pages' translations: complete catalogs, matching placeholders, the study's language chosen.

The catalogs (locale/*/LC_MESSAGES/django.po) are committed with their compiled
.mo files, so these tests read the .po text directly and check the .mo against it.
"""

import ast
import gettext
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings
from django.template import Variable, engines
from django.templatetags.i18n import BlockTranslateNode, TranslateNode

from annotation.languages import annotator_language
from annotation.protocols import protocol_import, study_from_template
from annotation.protocols.oogiri_benchmark import benchmark_tasks_build
from annotation.services.imported_judgments import judgments_import
from annotation.services.studies import ItemSpec
from tests.protocols.test_oogiri_ground_truth import simulated_votes, voting_csv

from .test_annotator_flow import begin, csrf_from, fresh_rate_limits, url  # noqa: F401
from .test_annotator_item import item_page, open_study, submit

LOCALES = {"zh-hans": "zh_Hans", "ja": "ja"}
TEMPLATES_DIR = Path(settings.BASE_DIR) / "templates"
ANNOTATOR_TEMPLATES = sorted(
    [p.relative_to(TEMPLATES_DIR).as_posix() for p in (TEMPLATES_DIR / "annotation").rglob("*.html")] + ["base.html"]
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
