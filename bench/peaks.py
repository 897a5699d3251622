# SPDX-License-Identifier: GPL-3.0-or-later
"""Peak memory of one phase of a bench, measured in a child process of its own.

A phase that runs in its own process reports its own peak resident memory:
``VmHWM`` from ``/proc/self/status`` just before it ends. The parent must not
read it from ``wait4``: on Linux ``ru_maxrss`` keeps what the process had before
``exec``, so every child would show at least the peak of the bench that started it.
"""

from __future__ import annotations

import json
import os
import subprocess
import time


def own_peak_mb() -> float:
    """This process's peak resident memory since it was exec'd (Linux ``VmHWM``), in MiB."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # elsewhere: includes what exec inherited


def run_child(command: list[str], cap: float, *, poll: float = 0.2, quiet: bool = False) -> tuple[str, int] | None:
    """Run a phase's process to its end: (its standard output, its exit code), or None when stopped at ``cap`` s."""
    child = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL if quiet else None,
        text=True,
        env=os.environ.copy(),
    )
    deadline = time.monotonic() + cap
    while child.poll() is None:
        if time.monotonic() > deadline:
            child.kill()
            child.wait()
            return None
        time.sleep(poll)
    return child.stdout.read(), child.returncode


def phase_figures(command: list[str], cap: float) -> dict:
    """Run a phase whose last line of output is its figures as JSON: those, or ``{"skipped": why}``."""
    ran = run_child(command, cap)
    if ran is None:
        return {"skipped": f">{cap:.0f}s"}
    output, code = ran
    if code != 0:
        return {"skipped": f"failed (exit {code})"}
    return json.loads(output.strip().splitlines()[-1])
