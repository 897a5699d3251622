# SPDX-License-Identifier: GPL-3.0-or-later
"""The release bundle: its script recomputes the stated figures from the data alone, and its card and
provenance say what the study and its judges were."""

import json
import subprocess
import sys
import zipfile

import pytest
import yaml

from annotation.models import Rater
from judging.services.judges import judge_create
from judging.services.runs import run_create
from ratings.exports.formats import get_format
from ratings.exports.services import write_export
from ratings.models import DatasetCard
from tests.ratings.test_selectors import add_rater, rate_all

pytestmark = pytest.mark.django_db
RELEASE = get_format("release").name


@pytest.fixture
def released(make_study, researcher, tmp_path):
    study = make_study(n_items=5, quota_per_item=10, name="Pun study", description="Puns rated 0 to 3.")
    # Three crowdworkers with gaps and an expert; an LLM judge's judgments are in the data but not in agreement.
    for name, ratings in (("ann", [0, 1, 2, 3, None]), ("bob", [0, 2, 3, 3, 1]), ("cy", [1, 1, 2, None, 1])):
        rate_all(study, add_rater(study, name), ratings)
    rate_all(study, add_rater(study, "eve", Rater.Kind.EXPERT), [0, 1, 3, 2, 2])
    rate_all(study, add_rater(study, "gpt", Rater.Kind.LLM), [3, 3, 3, 3, 3])
    DatasetCard.objects.create(
        study=study, licence="CC-BY-4.0", pay="£9 an hour on Prolific", citation="@misc{puns, title={Puns}}"
    )
    judge = judge_create(
        owner=researcher,
        name="local judge",
        base_url="http://127.0.0.1:8080/v1",
        model="smollm2-135m",
        api_key="sk-very-secret",
    )
    run_create(study=study, judge=judge, enqueue=False)
    path = tmp_path / "bundle.zip"
    write_export(study, RELEASE, path)
    with zipfile.ZipFile(path) as bundle:
        bundle.extractall(tmp_path / "out")
        names = bundle.namelist()
    folder = tmp_path / "out" / f"{study.slug}-data"
    return study, folder, names


def run_script(folder, *args):
    return subprocess.run(
        [sys.executable, str(folder / "recompute.py"), *args], capture_output=True, text=True, timeout=120
    )


def test_the_bundle_holds_data_card_figures_provenance_and_script(released):
    study, folder, names = released
    expected = {"data/judgments.csv", "data/judgments.parquet", "study.json", "figures.json", "judges.json"}
    expected |= {"README.md", "recompute.py"}
    assert {name.split("/", 1)[1] for name in names} == expected
    assert {name.split("/", 1)[0] for name in names} == {f"{study.slug}-data"}


def test_no_file_of_the_bundle_holds_a_participants_own_id(released):
    study, folder, _ = released
    for path in folder.rglob("*"):
        if path.is_file():
            assert f"{study.slug}-ann".encode() not in path.read_bytes(), path.name


def test_the_script_recomputes_the_stated_figures_from_the_data_alone(released):
    _, folder, _ = released
    stated = json.loads((folder / "figures.json").read_text())
    result = run_script(folder)
    assert result.returncode == 0, result.stderr
    recomputed = json.loads(result.stdout)
    # The figures are the study's: four people, alpha defined, and the LLM's answers not among them.
    assert stated["human_agreement"]["n_raters"] == 4
    assert stated["counts"]["llm"] == {"raters": 1, "judgments": 5}
    assert (
        stated["intervals"]["krippendorff_alpha"]["low"] <= stated["human_agreement"]["krippendorff_alpha"]["ordinal"]
    )
    for key in ("counts", "items"):
        assert recomputed[key] == stated[key]
    for level, value in stated["human_agreement"]["krippendorff_alpha"].items():
        assert recomputed["human_agreement"]["krippendorff_alpha"][level] == pytest.approx(value, abs=1e-9)
    check = run_script(folder, "--check")
    assert check.returncode == 0, check.stdout
    assert "every figure recomputed equals figures.json" in check.stdout


def test_the_check_fails_when_the_data_do_not_give_the_figures(released):
    _, folder, _ = released
    csv = folder / "data" / "judgments.csv"
    lines = csv.read_text(encoding="utf-8").splitlines(keepends=True)
    csv.write_text("".join(lines[:-2]), encoding="utf-8")  # two judgments lost
    check = run_script(folder, "--check")
    assert check.returncode == 1
    assert "DIFFERS" in check.stdout


def test_the_card_is_metadata_a_hub_reads_then_prose(released):
    study, folder, _ = released
    card = (folder / "README.md").read_text(encoding="utf-8")
    _, front, prose = card.split("---\n", 2)
    metadata = yaml.safe_load(front)
    assert metadata["license"] == "cc-by-4.0"
    assert metadata["size_categories"] == ["n<1K"]
    assert metadata["configs"][0]["data_files"][0]["path"] == "data/judgments.parquet"
    assert "3 crowdworkers" in prose and "1 expert," in prose and "1 LLM judge," in prose
    assert "Krippendorff's alpha (ordinal)" in prose and "interval" in prose
    assert "£9 an hour on Prolific" in prose
    assert "smollm2-135m" in prose  # the judges' table


def test_the_provenance_names_endpoint_host_model_and_prompt_but_no_secret(released):
    _, folder, _ = released
    text = (folder / "judges.json").read_text(encoding="utf-8")
    assert "secret" not in text and "api_key" not in text
    run = json.loads(text)["runs"][0]
    assert run["endpoint_host"] == "127.0.0.1:8080"
    assert run["model"] == "smollm2-135m"
    assert run["prompt_template"]["user"]  # the full text of the prompt
    assert run["settings"]["temperature"] == pytest.approx(0.1)


def test_a_subset_is_refused_rather_than_passed_off_as_the_whole(released, tmp_path):
    study, _, _ = released
    with pytest.raises(ValueError, match="every rater"):
        write_export(study, RELEASE, tmp_path / "subset.zip", rater_subset=[1])


def test_the_researcher_writes_the_card_on_the_export_page(client, researcher, other_researcher, make_study):
    from django.urls import reverse

    study = make_study(n_items=2)
    url = reverse("exports:card", args=[study.slug])
    client.force_login(researcher)
    bad = client.post(url, {"licence": "CC BY 4.0; DROP", "pay": ""})
    assert bad.status_code == 400
    assert "SPDX licence identifier" in bad.content.decode()
    assert not DatasetCard.objects.filter(study=study).exists()
    good = client.post(url, {"licence": "CC0-1.0", "pay": "Unpaid volunteers", "recruitment_notes": "", "citation": ""})
    assert good.status_code == 200
    assert DatasetCard.objects.get(study=study).pay == "Unpaid volunteers"
    client.force_login(other_researcher)
    assert client.post(url, {"licence": "MIT"}).status_code == 404


def test_a_subset_of_a_release_is_refused_on_the_page_with_the_field_named(client, researcher, make_study):
    from django.urls import reverse

    study = make_study(n_items=2)
    rate_all(study, rater := add_rater(study, "ann"), [1, 2])
    client.force_login(researcher)
    answer = client.post(reverse("exports:request", args=[study.slug]), {"format": RELEASE, "rater": [rater.pk]})
    assert answer.status_code == 400
    assert "takes no rater subset" in answer.content.decode()
