"""One home for deciding what an image is: only annotation/media/checks.py opens images with Pillow.

A second place that opened uploaded bytes with Pillow would be a second, unchecked
idea of what a picture may be (limits, bombs, metadata). Drawing new images (the
demos) is fine; opening given bytes is the checks' job.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ("annotation", "ratings", "judging", "funnybone")
HOME = ROOT / "annotation" / "media" / "checks.py"


def opens_images(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "open"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "Image"
    ]


def test_only_the_checks_open_images():
    found = {
        f"{path.relative_to(ROOT)}:{line}"
        for app in APPS
        for path in sorted((ROOT / app).rglob("*.py"))
        if path != HOME
        for line in opens_images(path)
    }
    assert not found, f"open images only through annotation.media.checks.check_media: {sorted(found)}"
    assert opens_images(HOME), "the scan found nothing in the home itself: it would pass vacuously"
