# SPDX-License-Identifier: GPL-3.0-or-later
"""Fuzzing the study-file loader (YAML and JSON) with generated files.

A study file either creates its study with every item it lists, or is refused
with a StudyFileError whose every problem names the key, item or line it is
about — and then nothing at all was written. No other exception escapes.
"""

import itertools
import json
import re

import pytest
import yaml
from django.contrib.auth import get_user_model
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from annotation.importers.cells import MAX_CELL_CHARS
from annotation.study_files import STUDY_KEYS, StudyFileError, load_study_file

from .conftest import database_counts

pytestmark = pytest.mark.django_db

FUZZ = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
NAMES = itertools.count(1)
ENORMOUS = "ha" * (MAX_CELL_CHARS // 2) + "!"
# "name: ...", "judges[1]: ...", "items_file x.csv: Row 2: ...", "Item 3 (id 'a'): ...", "study.yaml, line 4: ...".
LOCATED = re.compile(r"^(Item \d+|Unknown key |Give either |study\.(yaml|json)[,:]|[a-z_]+(\[\d+\])?( [^:]*)?:)")

any_text = st.text(max_size=30)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 12) | st.floats(allow_nan=False) | any_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(any_text, inner, max_size=3),
    max_leaves=6,
)
gold = st.one_of(st.integers(-3, 6), st.sampled_from(["2", "yes", "funny", "a", "tie", ""]), json_values)
items = st.lists(
    st.fixed_dictionaries(
        {"id": st.sampled_from(["t1", "t2", "t3"]) | any_text},
        optional={
            "text": any_text.map("joke {}".format) | st.just(ENORMOUS) | st.sampled_from(["=1+1", "@x", "-1"]),
            "prompt": any_text,
            "gold": gold,
            "attention_check": st.booleans() | any_text,
            "metadata": json_values,
            "candidates": st.lists(
                st.fixed_dictionaries({"key": st.sampled_from(["a", "b", "a"]), "text": any_text.map("j {}".format)}),
                max_size=3,
            ),
            "colour": any_text,
        },
    ),
    max_size=5,
)
task_types = st.sampled_from(["ordinal", "pairwise", "binary", "pick_one", "ordinl"]) | any_text


@st.composite
def study_data(draw):
    """A study as a dict: mostly well formed, with a few keys missing, misspelt or of the wrong type."""
    data = {"name": f"Fuzzed study {next(NAMES)}", "task_type": draw(task_types), "items": draw(items)}
    optional = st.dictionaries(
        st.sampled_from([*STUDY_KEYS, "quota_per_itme", "judges"]),
        json_values | st.integers(-2, 5) | st.sampled_from(["open", "draft", "flag", "as_listed", "1.5"]),
        max_size=4,
    )
    data.update(draw(optional))
    if draw(st.booleans()):
        data.pop("items", None)
    if "items_file" in data:
        data["items_file"] = draw(st.sampled_from(["items.csv", "missing.csv", "items.xls", ""]))
    if "judges" in data:
        data["judges"] = draw(st.sampled_from([[{"baseline": "length"}], [{"baseline": "magic"}], "x", [{}]]))
    return data


def write(tmp_path, data: dict, *, kind: str, encoding: str) -> object:
    text = json.dumps(data, ensure_ascii=False) if kind == "json" else yaml.safe_dump(data, allow_unicode=True)
    path = tmp_path / f"study.{kind}"
    path.write_bytes(text.encode(encoding, errors="replace"))
    return path


def owner():
    user, _ = get_user_model().objects.get_or_create(username="fuzz-researcher")
    return user


def assert_all_or_nothing(path, *, items_listed: int | None) -> None:
    before = database_counts()
    try:
        study = load_study_file(path, owner())
    except StudyFileError as exc:
        assert exc.problems, "a refused study file must say why"
        unlocated = [p for p in exc.problems if not LOCATED.match(p)]
        assert not unlocated, f"problems that do not name a key, item or line: {unlocated}"
        assert database_counts() == before
        return
    after = database_counts()
    assert after[0] == before[0] + 1
    assert after[1] - before[1] == study.items.count()
    if items_listed is not None:
        assert study.items.count() == items_listed


class TestStudyFileFuzz:
    @FUZZ
    @given(
        data=study_data(),
        kind=st.sampled_from(["yaml", "json"]),
        encoding=st.sampled_from(["utf-8", "utf-8-sig", "latin-1", "utf-16"]),
    )
    def test_any_study_loads_whole_or_not_at_all(self, db, tmp_path, data, kind, encoding):
        (tmp_path / "items.csv").write_text("id,text,gold\nf1,A joke,2\nf2,Another,9\n", encoding="utf-8")
        path = write(tmp_path, data, kind=kind, encoding=encoding)
        listed = len(data["items"]) if isinstance(data.get("items"), list) and "items_file" not in data else None
        assert_all_or_nothing(path, items_listed=listed)

    @FUZZ
    @given(data=st.binary(max_size=200), kind=st.sampled_from(["yaml", "json"]))
    @example(data=b"", kind="yaml")
    @example(data=b"\xef\xbb\xbf", kind="json")
    @example(data=b"- a\n- b\n", kind="yaml")
    @example(data=b'name: "a\\0b"\ntask_type: ordinal\n', kind="yaml")
    def test_random_bytes_never_raise_anything_else(self, db, tmp_path, data, kind):
        path = tmp_path / f"study.{kind}"
        path.write_bytes(data)
        assert_all_or_nothing(path, items_listed=None)

    @FUZZ
    @given(text=st.text(max_size=200), kind=st.sampled_from(["yaml", "json"]))
    def test_random_text_never_raises_anything_else(self, db, tmp_path, text, kind):
        path = tmp_path / f"study.{kind}"
        path.write_text(text, encoding="utf-8")
        assert_all_or_nothing(path, items_listed=None)


def problems(tmp_path, text: str | bytes, kind: str = "yaml") -> list[str]:
    path = tmp_path / f"study.{kind}"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    before = database_counts()
    with pytest.raises(StudyFileError) as caught:
        load_study_file(path, owner())
    assert database_counts() == before
    return caught.value.problems


class TestRegressionExamples:
    def test_a_latin_1_file_names_the_byte(self, db, tmp_path):
        assert problems(tmp_path, "name: Crème\ntask_type: ordinal\n".encode("latin-1")) == [
            "study.yaml: byte offset 8 is not valid UTF-8; save the file as UTF-8."
        ]

    def test_a_bom_file_loads(self, db, tmp_path):
        path = tmp_path / "study.json"
        path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"name": "Bom", "task_type": "ordinal"}).encode())
        assert load_study_file(path, owner()).name == "Bom"

    def test_an_empty_file_and_a_list(self, db, tmp_path):
        expected = ["study.yaml: the file must hold one study, written as name: value pairs."]
        assert problems(tmp_path, "") == expected
        assert problems(tmp_path, "- a\n") == expected

    def test_a_nul_character_in_the_name_or_an_item(self, db, tmp_path):
        # PostgreSQL refused these with DataError once every check had passed.
        assert problems(tmp_path, 'name: "a\\0b"\ntask_type: ordinal\n') == [
            "name: holds a NUL character (0x00) at position 2; remove it."
        ]
        text = json.dumps({"name": "n", "task_type": "ordinal", "items": [{"id": "t1", "text": "a\x00"}]})
        assert problems(tmp_path, text, kind="json") == [
            "Item 1 (id 't1'): 'text' holds a NUL character (0x00) at position 2; remove it."
        ]

    def test_gold_outside_the_scale_and_a_duplicate_id(self, db, tmp_path):
        text = "name: n\ntask_type: ordinal\nitems:\n- {id: t1, text: a, gold: 7}\n- {id: t1, text: b}\n"
        found = problems(tmp_path, text)
        assert found[0].startswith("Item 1 (id 't1'): gold answer")
        assert found[1].startswith("Item 2 (id 't1'): ")

    def test_an_enormous_text_and_an_unknown_key(self, db, tmp_path):
        text = json.dumps({"name": "n", "task_type": "ordinal", "colour": 1, "items": [{"id": "t", "text": ENORMOUS}]})
        found = problems(tmp_path, text, kind="json")
        assert found[0].startswith("Unknown key 'colour'")
        assert found[1] == "Item 1 (id 't'): 'text' holds 20,001 characters; the limit is 20,000."
