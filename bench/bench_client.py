# SPDX-License-Identifier: GPL-3.0-or-later
"""The Python client's cost over a bare HTTP client, and what its lazy lists save.

    DATABASE_URL=postgres://…/any .venv/bin/python bench/bench_client.py [--items 5000] [--repeat 30]

A scratch database (created beside the one DATABASE_URL names, dropped at the end) gets one
study with ``--items`` items. The client talks to Django's WSGI application in this process
(httpx2's WSGI transport: the whole middleware stack, no network), and every figure is printed
beside its reference from the same run:

* ``study``: ``Funnybone.study(id)`` (the client's retry layer, origin check, error reading)
  against the same GET sent by a bare ``httpx2.Client`` on the same transport (median of ``--repeat``, the two run alternately);
* ``first item``: ``next(fb.items(id))``, which asks for one page, against ``list(fb.items(id))``,
  which reads every page (what the client did before its lists were lazy).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "funnybone" / "client"))

from bench.load_server import create_database, drop_database, migrate  # noqa: E402


def paired(one, other, repeat: int) -> tuple[float, float]:
    """Median times of two calls, run alternately (after one warm-up each), so a busy moment hits both."""
    one(), other()
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeat):
        for function, bucket in ((one, times[0]), (other, times[1])):
            start = time.perf_counter()
            function()
            bucket.append(time.perf_counter() - start)
    return statistics.median(times[0]), statistics.median(times[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()

    name = f"fb_bench_client_{os.getpid()}"
    url = create_database(os.environ["DATABASE_URL"], name)
    try:
        migrate(url)
        os.environ["DATABASE_URL"] = url
        os.environ["DJANGO_SETTINGS_MODULE"] = "funnybone.settings"
        import django

        django.setup()
        import httpx2
        from django.contrib.auth import get_user_model
        from funnybone_client import Funnybone
        from rest_framework.authtoken.models import Token

        from annotation.services.studies import ItemSpec, items_create, study_create
        from funnybone.wsgi import application

        owner = get_user_model().objects.create_user("bench")
        token = Token.objects.create(user=owner).key
        study = study_create(owner=owner, name="Bench", task_type="ordinal")
        items_create(study=study, items=[ItemSpec(external_id=f"i{n}", text=f"Joke {n}") for n in range(args.items)])

        transport = httpx2.WSGITransport(app=application)
        base = "http://localhost"
        fb = Funnybone(base, token=token, transport=transport)
        bare = httpx2.Client(base_url=base, transport=transport, headers={"Authorization": f"Token {token}"})

        client_study, bare_study = paired(
            lambda: fb.study(study.pk), lambda: bare.get(f"/api/v1/studies/{study.pk}/").json(), args.repeat
        )
        first, every = paired(
            lambda: next(fb.items(study.pk)), lambda: list(fb.items(study.pk)), max(3, args.repeat // 10)
        )
        print(
            f"study        client {client_study * 1000:7.2f} ms   bare httpx2 {bare_study * 1000:7.2f} ms   "
            f"({client_study / bare_study:.2f}x)"
        )
        print(
            f"first item   lazy   {first * 1000:7.2f} ms   every page  {every * 1000:7.2f} ms   "
            f"({args.items} items, {every / first:.1f}x)"
        )
    finally:
        from django.db import connections

        connections.close_all()
        drop_database(os.environ["DATABASE_URL"], name)


if __name__ == "__main__":
    main()
