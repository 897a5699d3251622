# SPDX-License-Identifier: GPL-3.0-or-later
"""Time and peak memory of reading hostile table files through the item importer's reader.

    .venv/bin/python bench/table_bombs.py [--code DIR] [--cap 60] [--memory-mb 2048] [--cases a,b]

The files are built by tests/hostile_files.py at full size (the shared strings
inflate to 100 MB, as in the report that found them). Each file is read in its
own child process by ``annotation.importers.readers.read_rows`` (the function
the web upload, the worker and ``load_study`` call) from the code in ``--code``
(default: this tree), so the figures of the code before this change come from
a copy of an older commit:

    git archive 7037a81 | (mkdir -p /tmp/fb-before && tar -x -C /tmp/fb-before)
    .venv/bin/python bench/table_bombs.py --code /tmp/fb-before

The shared virtualenv now has defusedxml, which openpyxl picks up by itself;
``OPENPYXL_DEFUSEDXML=False`` in the environment shows how the entity cases
went before it was installed (a ParseError: a server error on the web).

A child that runs past ``--cap`` seconds is stopped; one that goes past
``--memory-mb`` of address space fails with MemoryError. Peak resident memory
is the child's ``ru_maxrss`` (Django set up is included: about 70 MB); the
seconds are the reading alone, measured in the child.
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHILD = """
import io, os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "funnybone.settings")
import django
django.setup()
from annotation.importers.readers import read_rows
from annotation.task_types import get_task_type
import time
path, fmt = sys.argv[1], sys.argv[2]
started = time.monotonic()
try:
    with open(path, "rb") as stream:
        results = list(read_rows(stream, fmt=fmt, task_type=get_task_type("ordinal")))
    errors = [e for r in results for e in r.errors]
    outcome = f"read {len(results)} rows, {len(errors)} row problems " + (errors[:1] or [""])[0][:80]
except Exception as exc:
    messages = getattr(exc, "messages", None) or [repr(exc)]
    outcome = f"{type(exc).__name__}: {' '.join(str(messages[0]).split())[:100]}"
print(f"{time.monotonic() - started:.2f}|{outcome}")
"""


def cases() -> dict[str, tuple[str, object]]:
    from tests import hostile_files as hostile

    return {
        "shared-strings-100MB": ("xlsx", lambda: hostile.shared_strings_bomb(100)),
        "declared-A1:XFD1048576": ("xlsx", lambda: hostile.huge_dimension_xlsx(rows=50_000)),
        "external-entity": ("xlsx", hostile.external_entity_xlsx),
        "billion-laughs": ("xlsx", hostile.billion_laughs_xlsx),
        "unclosed-quote": ("csv", hostile.unterminated_quote_csv),
        "nul-byte": ("csv", hostile.nul_csv),
        "deep-jsonl": ("jsonl", hostile.deep_jsonl),
        "5000-digit-int": ("jsonl", hostile.huge_int_jsonl),
    }


def run_child(code: Path, path: Path, fmt: str, *, cap: float, memory_mb: int) -> tuple[float, float, str]:
    def limit() -> None:
        limit_bytes = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    env = {**os.environ, "PYTHONPATH": str(code)}
    started = time.monotonic()
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path), fmt],
        cwd=code,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        preexec_fn=limit,
        text=True,
    )
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() - started > cap:
            child.send_signal(signal.SIGKILL)
            _, status, usage = os.wait4(child.pid, 0)
            return cap, usage.ru_maxrss / 1024, f"stopped after {cap:.0f} s (still reading)"
        time.sleep(0.05)
    output = (child.stdout.read() if child.stdout else "").strip().splitlines()
    if not output or "|" not in output[-1]:
        return time.monotonic() - started, usage.ru_maxrss / 1024, f"died: exit status {status} {output[-1:]}"
    seconds, outcome = output[-1].split("|", 1)
    return float(seconds), usage.ru_maxrss / 1024, outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--code", type=Path, default=ROOT, help="The source tree whose reader is measured.")
    parser.add_argument("--cap", type=float, default=60, help="Seconds before a child is stopped.")
    parser.add_argument("--memory-mb", type=int, default=2048, help="Address-space limit of a child.")
    parser.add_argument("--cases", help="Comma-separated case names (default: all).")
    args = parser.parse_args()
    chosen = cases()
    if args.cases:
        chosen = {name: chosen[name] for name in args.cases.split(",")}
    print(f"reader: {args.code}")
    print(f"{'case':<24} {'file':>9} {'read s':>8} {'peak MB':>8}  outcome")
    with tempfile.TemporaryDirectory() as scratch:
        for name, (fmt, build) in chosen.items():
            path = Path(scratch) / f"{name.replace(':', '-')}.{fmt}"
            path.write_bytes(build())
            seconds, peak, outcome = run_child(args.code, path, fmt, cap=args.cap, memory_mb=args.memory_mb)
            size = path.stat().st_size
            print(f"{name:<24} {size / 1024:>7.0f}KB {seconds:>8.2f} {peak:>8.0f}  {outcome}")


if __name__ == "__main__":
    main()
