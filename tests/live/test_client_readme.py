"""The Python client's README example, run as written against a live site (gunicorn, a Celery
worker, PostgreSQL, Redis on loopback), with the client installed from its own package."""

import csv
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token

from annotation.models import Study
from judging.models import JudgeRun, Tournament
from tests.conftest import require_postgres

from .conftest import running_site

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "funnybone" / "client"
BLOCK = re.compile(r"<!-- (example-file: (?P<name>[\w.-]+)|example-script) -->\n```\w*\n(?P<body>.*?)\n```", re.S)


def readme_example() -> tuple[dict[str, str], str]:
    """The files the README shows and its script, taken from the README itself so they cannot drift."""
    files, script = {}, None
    for match in BLOCK.finditer((CLIENT / "README.md").read_text()):
        if match["name"]:
            files[match["name"]] = match["body"] + "\n"
        else:
            script = match["body"] + "\n"
    assert script and files, "the README lost its example blocks"
    return files, script


def install_client(target: Path) -> None:
    """pip-install the client package as a user would (its dependencies are already in this environment).

    From a copy: setuptools leaves a build/ folder beside the sources it builds, which the
    one-home scans of the checkout would then read as project code.
    """
    source = target.parent / "funnybone-client-src"
    shutil.copytree(CLIENT, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert (target / "funnybone_client" / "client.py").exists()


def test_the_readme_example_runs_against_a_live_site(transactional_db, tmp_path, tmp_path_factory):
    require_postgres()
    user = get_user_model().objects.create_user("reader", password="reader-password-123")
    token = Token.objects.create(user=user)
    files, script = readme_example()
    work = tmp_path / "work"
    work.mkdir()
    for name, text in files.items():
        (work / name).write_text(text)
    (work / "example.py").write_text(script)
    install_client(tmp_path / "site-packages")

    with running_site(tmp_path, tmp_path_factory) as site:
        env = {
            **os.environ,
            "FUNNYBONE_URL": site.url,
            "FUNNYBONE_TOKEN": token.key,
            "PYTHONPATH": str(tmp_path / "site-packages"),
        }
        done = subprocess.run(
            [sys.executable, "example.py"], cwd=work, env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n{site.logs()}"

    out = done.stdout
    study = Study.objects.get(owner=user, name="Cat jokes, rated 0-3")
    assert study.state == "open"
    assert sorted(study.items.values_list("external_id", flat=True)) == ["j1", "j2", "j3", "j4", "j5"]
    assert f"crowd link: {site.url}/s/{study.entry_token}/" in out
    runs = JudgeRun.objects.filter(study=study)
    assert runs.count() == 2 and all(run.status == "done" for run in runs)
    assert study.judgments.count() == 10
    assert "alpha:" in out
    assert "runs on the study: 2" in out and out.count(" done") >= 2  # on_progress saw each run end
    assert "no alignment yet: the chosen human reference has no judgments" in out
    cup = Tournament.objects.get(owner=user, name="Short or long")
    assert cup.status == "done"
    assert "ranking: ['terse', 'rambling']" in out
    with (work / "jokes-judgments.csv").open(newline="") as exported:
        rows = list(csv.DictReader(exported))
    assert len(rows) == 10
    # The DataFrame the example printed has one mean rating per judge.
    assert out.count("baseline: ") >= 2
