# SPDX-License-Identifier: GPL-3.0-or-later
"""Time and peak memory of hostile inputs against the guards that refuse them.

    .venv/bin/python bench/bench_input_bombs.py [--cap 20] [--baseline]

Each case runs in its own child process, which reports its own peak resident
memory (``VmHWM``, ``bench/peaks.py``); ``idle`` (Django set up, nothing
else) is the floor under every figure. The guarded cases go through the
functions the app uses (``check_template`` as on saving a template,
``load_json``/``load_yaml`` as for API bodies and study files) and print the
message the user gets. ``--baseline`` adds the same inputs through the plain
parsers and Django's default engine (the ``ljust`` one scaled down to 100 MB to
stay polite); a case running past ``--cap`` seconds is stopped and shown as such.
No database is needed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.peaks import own_peak_mb, run_child  # noqa: E402

ITEM_TEXT = "x" * 20_000


def billion_laughs() -> str:
    lines = ["lol0: &lol0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"lol{n}: &lol{n} [" + ", ".join([f"*lol{n - 1}"] * 9) + "]" for n in range(1, 9)]
    return "\n".join(lines) + "\n"


def _django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "funnybone.settings")
    import django

    django.setup()


def _check(user: str) -> str:
    from django.core.exceptions import ValidationError

    from judging.prompts import check_template

    try:
        check_template(system="", user=user, task_type="ordinal")
    except ValidationError as exc:
        return " ".join(m for ms in exc.message_dict.values() for m in ms)
    return "accepted"


def _render_long_item(user: str) -> str:
    from judging.prompts.render import render, sample_context
    from judging.prompts.sandbox import PromptRenderError

    context = sample_context("ordinal")
    context["text"] = ITEM_TEXT
    try:
        return f"rendered {len(render(user, context)):,} characters"
    except PromptRenderError as exc:
        return str(exc)


def _load(kind: str, text: str) -> str:
    import yaml

    from annotation.json_limits import DataTooComplex, load_json, load_yaml

    try:
        (load_json if kind == "json" else load_yaml)(text, where=f"study.{kind}")
    except (DataTooComplex, yaml.YAMLError) as exc:
        return str(exc).replace("\n", " ")
    return "accepted"


def _plain_ljust() -> str:
    from django.template import Context, Engine

    out = Engine().from_string('{{ "a"|ljust:"100000000" }}').render(Context({}))
    return f"rendered {len(out):,} characters"


def _plain_yaml_bomb() -> str:
    import json

    import yaml

    return f"{len(json.dumps(yaml.safe_load(billion_laughs()))):,} characters of JSON"


def _plain_json_deep() -> str:
    import json

    try:
        json.loads("[" * 100_000 + "]" * 100_000)
    except RecursionError as exc:
        return f"RecursionError: {exc}"
    return "parsed"


GUARDED = {
    "idle": lambda: "Django set up, nothing else",
    "prompt ljust 1e9": lambda: _check('{{ "a"|ljust:"1000000000" }}'),
    "prompt include": lambda: _check('{% include "/etc/passwd" %}'),
    "prompt add doubling": lambda: _check(
        "{% with a=text %}" + "{% with a=a|add:a %}" * 30 + "{{ a }}" + "{% endwith %}" * 31
    ),
    "prompt 3 loops, 20k item": lambda: _render_long_item(
        "{% for a in text %}{% for b in text %}{% for c in text %}{% endfor %}{% endfor %}{% endfor %}"
    ),
    "json 100k deep": lambda: _load("json", "[" * 100_000 + "]" * 100_000),
    "json 5000-digit int": lambda: _load("json", '{"quota_per_item": ' + "9" * 5000 + "}"),
    "yaml billion laughs": lambda: _load("yaml", billion_laughs()),
    "yaml 100k deep": lambda: _load("yaml", "a: " + "[" * 100_000 + "]" * 100_000),
}
BASELINE = {
    "plain: ljust 1e8": _plain_ljust,
    "plain: json 100k deep": _plain_json_deep,
    "plain: yaml billion laughs + dumps": _plain_yaml_bomb,
}


def run_one(name: str) -> None:
    _django()
    started = time.perf_counter()
    outcome = {**GUARDED, **BASELINE}[name]()
    print(f"{time.perf_counter() - started:.3f}\t{own_peak_mb():.0f}\t{outcome[:110]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cap", type=float, default=20.0, help="seconds before a case is stopped")
    parser.add_argument("--baseline", action="store_true", help="also run the unguarded parsers")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        run_one(args.one)
        return
    names = list(GUARDED) + (list(BASELINE) if args.baseline else [])
    print(f"{'case':<36} {'seconds':>8} {'peak MB':>8}  outcome")
    for name in names:
        ran = run_child([sys.executable, __file__, "--one", name], args.cap, poll=0.05, quiet=True)
        out, status = (ran[0].strip(), ran[1]) if ran else ("", 0)
        peak = "-"
        if ran is None:
            seconds, outcome = f">{args.cap:g}", "stopped at the cap"
        elif status != 0 or out.count("\t") < 2:
            seconds, outcome = "-", out
        else:
            seconds, peak, outcome = out.split("\t", 2)
        print(f"{name:<36} {seconds:>8} {peak:>8}  {outcome}")


if __name__ == "__main__":
    main()
