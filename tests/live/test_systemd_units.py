# SPDX-License-Identifier: GPL-3.0-or-later
"""The production guide's environment file and systemd units work as written (docs/production.md).

The files are taken from the guide itself. The environment file is read with systemd's own rules
for ``EnvironmentFile=`` (systemd.exec(5)), implemented below, not with a shell's: a comment is a
whole line starting with ``#`` or ``;``; text after a value (``FUNNYBONE_HTTPS=1  # on``) is part of
the value. Then the units' commands run with that environment, as systemd would start them: the
guide's ``check --deploy``, the web unit's gunicorn answering the guide's smoke test, and the worker
unit's Celery worker until it is ready. Only what names this machine changes (paths, database,
Redis, the port): the booleans and everything else are the guide's own values.
"""

import os
import re
import shlex
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from configparser import ConfigParser
from pathlib import Path

import pytest

from bench.load_server import free_port
from tests.conftest import require_postgres
from tests.integration.conftest import broker_url, database_url, require_redis

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "production.md"
FILE = re.compile(r"<!-- production-file: (?P<path>\S+) -->\n```\w*\n(?P<body>.*?)\n```", re.S)
VENV = Path(sys.prefix)
# Generous: four gunicorn workers and a Celery worker import Django at once, on a machine that may be busy.
READY_SECONDS = 240


def guide_files() -> dict[str, str]:
    files = {m["path"]: m["body"] + "\n" for m in FILE.finditer(GUIDE.read_text(encoding="utf-8"))}
    assert set(files) >= {
        "/etc/funnybone/env",
        "/etc/systemd/system/funnybone-web.service",
        "/etc/systemd/system/funnybone-worker.service",
    }, "the guide lost a file block"
    return files


# -- systemd's EnvironmentFile= rules ----------------------------------------------------------

WHITESPACE = " \t\r"


def parse_environment_file(text: str) -> dict[str, str]:
    """Variables as systemd reads an ``EnvironmentFile=`` (systemd.exec(5)).

    Lines are ``KEY=VALUE``; empty lines, lines whose first character is ``#`` or ``;``, and lines
    without ``=`` are skipped. An unquoted value keeps its inner whitespace and any ``#``; its leading
    and trailing whitespace goes; a backslash keeps the next character and a backslash at the end of
    a line joins the next line. A value in single quotes is verbatim and may span lines; one in double
    quotes may too, where a backslash escapes ``"``, ``\\``, `` ` `` and ``$``, joins lines before a
    newline, and is kept (with the character after it) before anything else.
    """
    result: dict[str, str] = {}
    i, n = 0, len(text)
    while i < n:
        # Start of a line: skip leading whitespace, comments, empty lines.
        while i < n and text[i] in WHITESPACE:
            i += 1
        if i >= n:
            break
        if text[i] == "\n":
            i += 1
            continue
        if text[i] in "#;":
            while i < n and text[i] != "\n":
                i += 1
            continue
        key_start = i
        while i < n and text[i] not in "=\n":
            i += 1
        if i >= n or text[i] == "\n":
            continue  # no "=": ignored
        key = text[key_start:i].strip(WHITESPACE)
        i += 1
        while i < n and text[i] in WHITESPACE:
            i += 1
        value: list[str] = []
        if i < n and text[i] == "'":
            end = text.find("'", i + 1)
            end = n if end == -1 else end
            value.append(text[i + 1 : end])
            i = end + 1
            while i < n and text[i] != "\n":
                i += 1  # trailing text after the closing quote is dropped (systemd: whitespace only)
        elif i < n and text[i] == '"':
            i += 1
            while i < n and text[i] != '"':
                if text[i] == "\\" and i + 1 < n:
                    nxt = text[i + 1]
                    if nxt == "\n":
                        pass
                    elif nxt in '"\\`$':
                        value.append(nxt)
                    else:
                        value.append("\\" + nxt)
                    i += 2
                    continue
                value.append(text[i])
                i += 1
            i += 1
            while i < n and text[i] != "\n":
                i += 1
        else:
            trailing = 0  # whitespace at the end, dropped unless escaped
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n:
                    if text[i + 1] != "\n":
                        value.append(text[i + 1])
                        trailing = 0
                    i += 2
                    continue
                value.append(text[i])
                trailing = trailing + 1 if text[i] in WHITESPACE else 0
                i += 1
            if trailing:
                del value[-trailing:]
        if key and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            result[key] = "".join(value)
    return result


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("A=1  # a comment after the value\n", {"A": "1  # a comment after the value"}),
        ("# A=1\n; B=2\n  C = 3 \n", {"C": "3"}),
        ("A=one \\\ntwo\n", {"A": "one two"}),
        ('A=\'x # y\'\nB="a \\"q\\" \\n"\n', {"A": "x # y", "B": 'a "q" \\n'}),
        ("NO_EQUALS_SIGN\nA=\n", {"A": ""}),
        ("A='two\nlines'\n", {"A": "two\nlines"}),
    ],
)
def test_the_parser_follows_systemds_rules(text, expected):
    assert parse_environment_file(text) == expected


def test_every_value_of_the_guides_env_file_is_what_it_means():
    from funnybone.env import env_bool

    values = parse_environment_file(guide_files()["/etc/funnybone/env"])
    assert not [name for name, value in values.items() if "#" in value or value != value.strip()]
    for name in ("FUNNYBONE_PRODUCTION", "FUNNYBONE_HTTPS", "FUNNYBONE_MANIFEST_STATIC"):
        os.environ[name] = values[name]
        try:
            assert env_bool(name) is True, name
        finally:
            del os.environ[name]


def test_a_malformed_boolean_or_number_stops_the_start_naming_the_variable():
    env = {**os.environ, "FUNNYBONE_HTTPS": "1  # on", "DJANGO_SETTINGS_MODULE": "funnybone.settings"}
    done = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode != 0 and "FUNNYBONE_HTTPS='1  # on' is not a boolean" in done.stderr
    env = {**os.environ, "FUNNYBONE_TRUSTED_PROXY_COUNT": "one", "DJANGO_SETTINGS_MODULE": "funnybone.settings"}
    done = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode != 0 and "FUNNYBONE_TRUSTED_PROXY_COUNT='one' is not a whole number" in done.stderr


# -- the units, started with that environment ----------------------------------------------------


def unit(text: str) -> ConfigParser:
    parser = ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # systemd's keys are case-sensitive
    parser.read_string(text)
    return parser


def command(unit_text: str, port: int) -> list[str]:
    """The unit's ExecStart, split as systemd splits it, with this machine's venv and port."""
    argv = shlex.split(unit(unit_text)["Service"]["ExecStart"])
    return [
        part.replace("/srv/funnybone/venv", str(VENV)).replace("127.0.0.1:8000", f"127.0.0.1:{port}") for part in argv
    ]


@pytest.mark.integration
@pytest.mark.slow
def test_the_units_start_with_the_guides_environment(transactional_db, tmp_path):
    require_postgres()
    require_redis(broker_url())
    files = guide_files()
    web, worker = (
        files["/etc/systemd/system/funnybone-web.service"],
        files["/etc/systemd/system/funnybone-worker.service"],
    )
    for text in (web, worker):
        parsed = unit(text)
        assert parsed["Service"]["EnvironmentFile"] == "/etc/funnybone/env"
        assert parsed["Service"]["WorkingDirectory"] == "/srv/funnybone/app"
        assert parsed["Install"]["WantedBy"] == "multi-user.target"  # or `systemctl enable` refuses the unit

    values = parse_environment_file(files["/etc/funnybone/env"])
    secrets = tmp_path / "etc"
    secrets.mkdir()
    (secrets / "secret_key").write_text("s" * 30 + "-not-a-real-secret-but-long-enough-" + "k" * 20 + "\n")
    (secrets / "key_secret").write_text("another-secret-for-the-judge-keys-" + "x" * 30 + "\n")
    (secrets / "database_url").write_text(database_url() + "\n")
    here = {
        "SECRET_KEY_FILE": str(secrets / "secret_key"),
        "FUNNYBONE_KEY_SECRET_FILE": str(secrets / "key_secret"),
        "DATABASE_URL_FILE": str(secrets / "database_url"),
        "REDIS_URL": broker_url(),
        "FUNNYBONE_DATA_DIR": str(tmp_path / "data"),
    }
    assert set(here) <= set(values), "the guide's env file no longer names these"
    # systemd starts a unit with a nearly empty environment: only PATH and the file's variables.
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", **values, **here}
    python = str(VENV / "bin" / "python")

    collected = subprocess.run(
        [python, "manage.py", "collectstatic", "--noinput"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert collected.returncode == 0, collected.stderr
    checked = subprocess.run(
        [python, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr

    # Both units start at once, as systemd starts them at boot.
    port = free_port()
    web_log, worker_log = tmp_path / "web.log", tmp_path / "worker.log"
    with web_log.open("w") as web_out, worker_log.open("w") as worker_out:
        server = subprocess.Popen(command(web, port), cwd=ROOT, env=env, stdout=web_out, stderr=subprocess.STDOUT)
        celery = subprocess.Popen(
            [*command(worker, port), "--concurrency=1"], cwd=ROOT, env=env, stdout=worker_out, stderr=subprocess.STDOUT
        )
        try:
            status, headers = smoke_test(port, values["ALLOWED_HOSTS"].split(",")[0], server, web_log)
            assert status == 200
            # FUNNYBONE_HTTPS=1 was read as true: HSTS and secure cookies.
            assert "max-age=" in headers["Strict-Transport-Security"]
            assert "Secure" in headers["Set-Cookie"]
            deadline = time.monotonic() + READY_SECONDS
            while " ready." not in worker_log.read_text():
                assert celery.poll() is None, worker_log.read_text()
                assert time.monotonic() < deadline, worker_log.read_text()
                time.sleep(0.5)
        finally:
            for process in (server, celery):
                process.send_signal(signal.SIGTERM)  # systemd's default KillSignal, and the worker unit's
            server.wait(timeout=60)
            celery.wait(timeout=120)
    assert celery.returncode == 0, worker_log.read_text()  # a warm shutdown, as `systemctl stop` asks


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def smoke_test(port: int, host: str, server: subprocess.Popen, log: Path):
    """The guide's smoke test before TLS: the login page, asked as the proxy will ask (host, https)."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/accounts/login/", headers={"Host": host, "X-Forwarded-Proto": "https"}
    )
    opener = urllib.request.build_opener(NoRedirect)
    deadline = time.monotonic() + READY_SECONDS
    while True:
        try:
            with opener.open(request, timeout=30) as answer:
                return answer.status, answer.headers
        except urllib.error.HTTPError as refused:  # a 3xx or 4xx is the answer (the guide says what each means)
            return refused.code, refused.headers
        except OSError:
            assert server.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.5)
