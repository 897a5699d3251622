# SPDX-License-Identifier: GPL-3.0-or-later
"""The cost of a crowdworker's answer on a study with pictures, beside the same study without them.

    .venv/bin/python bench/bench_media_answers.py [--items 20000] [--answers 300] [--pictures 200]

Builds, in a scratch PostgreSQL database (``fb_media_<pid>`` on the server ``--database-url`` or
``DATABASE_URL`` names; dropped at the end), two ordinal (0-3) studies of ``--items`` items each,
quota 1: a text study, and the same items each carrying a prompt picture (``--pictures`` distinct
PNGs drawn with Pillow, checked and stored through the media home into a temporary
``MEDIA_ROOT``, attached round-robin, as a caption contest shows one cartoon under many captions).

Then one rater per study answers item after item through the real view in this process (Django's
test client, htmx answer = store the judgment + lease the next item + render its card, which for
the picture study reads the item's media and writes the <img> tags). The two studies take turns in
blocks of ``--block`` answers, so both see the same machine load; the first ``--warmup`` answers of
each are not counted. Printed: wall p50/p95 per answer and the CPU per answer (this process plus
this database's PostgreSQL backends, from /proc), each for both studies, and the picture study's
as a multiple of the text study's. The issue's target is within 1.2x; nothing here asserts it.

Loopback only; every loop is bounded in count.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.load import _django, cpu_snapshot, cpu_used, make_study  # noqa: E402
from bench.load_client import ASSIGNMENT_FIELD, percentile, rating_for  # noqa: E402
from bench.load_server import create_database, drop_database, migrate  # noqa: E402

DEFAULT_SERVER = "postgres://postgres@127.0.0.1:5432/postgres"


def picture(n: int) -> bytes:
    """A small distinct PNG (a coloured panel with a shape), as a cartoon would be stored."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (480, 360), ((37 * n) % 256, (91 * n) % 256, (173 * n) % 256))
    draw = ImageDraw.Draw(image)
    draw.ellipse([60 + n % 200, 60, 260 + n % 200, 260], fill=(255, 255, 255), outline=(0, 0, 0), width=4)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def attach_pictures(study, n_pictures: int) -> None:
    """Store ``n_pictures`` PNGs through the media home and give every item one as its prompt picture."""
    from annotation.media.checks import check_media
    from annotation.media.store import StoredFiles, media_store
    from annotation.models import MediaAttachment

    written = StoredFiles()
    files = [
        media_store(
            study=study, checked=check_media(picture(n), f"p{n}.png"), original_name=f"p{n}.png", written=written
        )
        for n in range(n_pictures)
    ]
    item_ids = list(study.items.order_by("pk").values_list("pk", flat=True))
    MediaAttachment.objects.bulk_create(
        (
            MediaAttachment(
                media=files[n % n_pictures], item_id=item_id, role="prompt", alt_text=f"Cartoon {n % n_pictures}."
            )
            for n, item_id in enumerate(item_ids)
        ),
        batch_size=5000,
    )


class Rater:
    """One crowdworker in this process, answering through the real views with htmx headers."""

    def __init__(self, study, name: str):
        from django.test import Client

        self.client = Client(HTTP_HOST="127.0.0.1")
        self.base = f"/s/{study.entry_token}/"
        self.name = name
        self.client.get(self.base, {"PROLIFIC_PID": f"{name}-{os.getpid()}", "STUDY_ID": "s", "SESSION_ID": "s"})
        self.client.post(self.base + "consent/", {"decision": "agree"})
        self.client.post(self.base + "instructions/", {})
        self.page = self.client.get(self.base + "item/").content.decode()
        self.times: list[float] = []

    def answer(self, *, timed: bool) -> None:
        assignment_id = int(ASSIGNMENT_FIELD.search(self.page).group(1))
        started = time.perf_counter()
        response = self.client.post(
            self.base + "item/",
            {"assignment": assignment_id, "rating": rating_for(self.name, assignment_id, [0, 1, 2, 3])},
            headers={"HX-Request": "true"},
        )
        elapsed = time.perf_counter() - started
        assert response.status_code == 200, response.status_code
        self.page = response.content.decode()
        if timed:
            self.times.append(elapsed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--answers", type=int, default=300, help="answers measured per study (bounded)")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--block", type=int, default=25, help="answers per turn before the other study's turn")
    parser.add_argument("--pictures", type=int, default=200, help="distinct pictures in the picture study")
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL") or DEFAULT_SERVER)
    args = parser.parse_args(argv)
    if not args.database_url.startswith("postgres"):
        parser.error("give --database-url postgres://...")
    scratch = f"fb_media_{os.getpid()}"
    database_url = create_database(args.database_url, scratch)
    try:
        migrate(database_url)
        with tempfile.TemporaryDirectory(prefix="fb-media-bench-") as media_root:
            os.environ["MEDIA_ROOT"] = media_root
            _django(database_url)
            from django.conf import settings

            settings.MEDIA_ROOT = media_root
            built = time.perf_counter()
            text = make_study(label="text", n_items=args.items, quota=1)
            pictured = make_study(label="pictures", n_items=args.items, quota=1)
            attach_pictures(pictured, args.pictures)
            print(
                f"two ordinal studies of {args.items:,} items (quota 1), one with a prompt picture on every item "
                f"({args.pictures} distinct PNGs); built in {time.perf_counter() - built:.0f} s"
            )
            raters = {"text": Rater(text, "text"), "pictures": Rater(pictured, "pictures")}
            for rater in raters.values():
                for _ in range(args.warmup):
                    rater.answer(timed=False)
            assert "<img" in raters["pictures"].page and "<img" not in raters["text"].page
            cpu = {"text": 0.0, "pictures": 0.0}
            done = 0
            while done < args.answers:
                block = min(args.block, args.answers - done)
                for label, rater in raters.items():
                    before = cpu_snapshot(None, scratch)
                    for _ in range(block):
                        rater.answer(timed=True)
                    used = cpu_used(before, cpu_snapshot(None, scratch))
                    cpu[label] += used["client"] + used["db"]
                done += block
            print(f"htmx answers in-process, {args.answers} per study in turns of {args.block}:")
            ref = None
            for label, rater in raters.items():
                p50, p95 = 1000 * percentile(rater.times, 50), 1000 * percentile(rater.times, 95)
                cpu_ms = 1000 * cpu[label] / args.answers
                ref = ref or (p50, cpu_ms)
                print(
                    f"  {label:<9} wall p50 {p50:6.1f} ms  p95 {p95:6.1f} ms  CPU {cpu_ms:6.1f} ms/answer   "
                    f"({p50 / ref[0]:.2f}x wall, {cpu_ms / ref[1]:.2f}x CPU of the text study)"
                )
    finally:
        drop_database(args.database_url, scratch)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
