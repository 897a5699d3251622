"""What the ``judge`` and ``generate`` commands share: the endpoint options, the run's owner, waiting on it."""

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study


def study_by_ref(ref: str) -> Study:
    """A study by slug, or by id when the reference is a number."""
    study = Study.objects.filter(slug=ref).first()
    if study is None and ref.isdigit():
        study = Study.objects.filter(pk=int(ref)).first()
    if study is None:
        raise CommandError(f"No study {ref!r}.")
    return study


def add_endpoint_arguments(parser, *, required: bool, name_help: str) -> None:
    """--base-url, --model, --name, --api-key-env: which model to call, and as whom."""
    parser.add_argument(
        "--base-url", required=required, default="", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1"
    )
    parser.add_argument("--model", required=required, default="")
    parser.add_argument("--name", default="", help=name_help)
    parser.add_argument(
        "--api-key-env",
        default="",
        help="Environment variable (of the worker) holding the API key; any name, unlike a researcher's, which "
        "must be declared in FUNNYBONE_JUDGE_KEY_ENVS. It holds for this base URL only.",
    )


def add_call_arguments(parser) -> None:
    """--temperature, --max-tokens, --concurrency, --timeout, --sees-images: how to call it (default: the stored
    settings)."""
    parser.add_argument("--temperature", type=float)
    parser.add_argument("--max-tokens", type=int)
    parser.add_argument("--concurrency", type=int)
    parser.add_argument("--timeout", type=float)
    parser.add_argument(
        "--sees-images",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="The model takes images; a text-only model is refused on a study with pictures.",
    )


def add_run_arguments(parser, *, what: str) -> None:
    """--owner, --wait, --inline."""
    parser.add_argument("--owner", default="", help=f"Username owning the {what} (default: the study's owner).")
    parser.add_argument("--wait", action="store_true", help="Show progress and print a JSON summary at the end.")
    parser.add_argument(
        "--inline", action="store_true", help="Work the run in this process instead of a Celery worker."
    )


def endpoint_settings(opts: dict[str, Any]) -> dict[str, Any]:
    """The settings the options give, in the services' names; those not given are left as they are."""
    settings = {
        key: opts[opt]
        for key, opt in (
            ("temperature", "temperature"),
            ("max_tokens", "max_tokens"),
            ("concurrency", "concurrency"),
            ("timeout_seconds", "timeout"),
            ("sees_images", "sees_images"),
        )
        if opts[opt] is not None
    }
    if opts["api_key_env"]:
        settings["api_key_env"] = opts["api_key_env"]
    return settings


def run_owner(study: Study, opts: dict[str, Any]):
    """The user named by --owner, else the study's owner."""
    if not opts["owner"]:
        return study.owner
    owner = get_user_model().objects.filter(username=opts["owner"]).first()
    if owner is None:
        raise CommandError(f"No user named {opts['owner']!r}.")
    return owner


def work_and_report(
    command: BaseCommand,
    run,
    opts: dict[str, Any],
    *,
    process: Callable[..., Any],
    describe: Callable[[Any], str],
    summary: Callable[..., dict[str, Any]],
) -> None:
    """With --inline, work the run here; with --wait or --inline, watch it end and print its JSON summary."""
    if opts["inline"]:
        process(run_id=run.pk)
    if opts["wait"] or opts["inline"]:
        watch(command.stderr, run, describe)
        run.refresh_from_db()
        command.stdout.write(json.dumps(summary(run=run)))


def watch(stderr, run, describe: Callable[[Any], str]) -> None:
    """Write ``describe(run)`` whenever it changes (on one line on a terminal) until the run has ended."""
    tty = sys.stderr.isatty()
    last = None
    while True:
        run.refresh_from_db()
        line = describe(run)
        if line != last:
            stderr.write(("\r" + line) if tty else line, ending="" if tty else "\n")
            last = line
        if not run.is_active:
            if tty:
                stderr.write("")
            return
        time.sleep(0.5)
