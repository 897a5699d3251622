"""`make run` starts the Celery worker again when it exits, as production's systemd unit does.

The recipe itself is run (its set-up steps skipped with ``-o demo``) with a virtualenv of stand-ins:
a ``celery`` that records each start and exits at once, as a worker dying of an unrecoverable
error would, and a ``python`` whose "web server" just waits.
"""

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WAIT = 60  # bounds the wait for the restarts, so a recipe that never restarts fails instead of hanging


def stand_in(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)


@pytest.fixture
def fake_venv(tmp_path) -> Path:
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    stand_in(bin_dir / "celery", f'echo started >> "{tmp_path / "starts"}"; exit 1')
    stand_in(bin_dir / "python", "exec sleep 300")
    return tmp_path / "venv"


def test_make_run_starts_a_worker_that_exits_again(fake_venv, tmp_path):
    starts = tmp_path / "starts"
    make = subprocess.Popen(
        ["make", "--no-print-directory", "-o", "demo", "run", f"VENV={fake_venv}", "PORT=1"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, so the test can stop the recipe and all it started
    )
    try:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline and make.poll() is None:
            if starts.exists() and len(starts.read_text().split()) >= 3:
                break
            time.sleep(0.2)
        assert make.poll() is None, "make run ended when its worker exited"
        assert len(starts.read_text().split()) >= 3, "the worker was not started again after it exited"
    finally:
        os.killpg(make.pid, signal.SIGTERM)
        output, _ = make.communicate(timeout=30)
    assert "The Celery worker exited (1); starting it again" in output
