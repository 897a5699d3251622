"""The demo's cartoons, drawn with Pillow when the demo is loaded (no third-party pictures ship).

Each scene is a few flat shapes and a thick outline, the way a single-panel gag cartoon reads at a
glance; the captions in the data files were written for them. ``draw(name)`` returns PNG bytes, the
same bytes every time (no randomness, no fonts), so loading the demo twice stores each file once.
"""

import io
from collections.abc import Callable
from functools import cache

from PIL import Image, ImageDraw

WIDTH, HEIGHT = 640, 480
INK = (29, 29, 31)
LINE = 5
Draw = ImageDraw.ImageDraw


def _person(d: Draw, x: int, y: int, *, scale: float = 1.0, shirt=(70, 110, 200), hat: bool = False) -> None:
    """A standing figure whose feet are at (x, y)."""
    s = scale
    head = 28 * s
    d.line([(x, y - 90 * s), (x - 22 * s, y)], fill=INK, width=LINE)  # legs
    d.line([(x, y - 90 * s), (x + 22 * s, y)], fill=INK, width=LINE)
    d.rounded_rectangle(
        [x - 26 * s, y - 170 * s, x + 26 * s, y - 85 * s], radius=int(14 * s), fill=shirt, outline=INK, width=LINE
    )
    d.line([(x - 26 * s, y - 150 * s), (x - 55 * s, y - 110 * s)], fill=INK, width=LINE)  # arms
    d.line([(x + 26 * s, y - 150 * s), (x + 55 * s, y - 115 * s)], fill=INK, width=LINE)
    cy = y - 170 * s - head
    d.ellipse([x - head, cy - head, x + head, cy + head], fill=(250, 220, 190), outline=INK, width=LINE)
    d.ellipse([x - 11 * s, cy - 6 * s, x - 5 * s, cy], fill=INK)  # eyes
    d.ellipse([x + 5 * s, cy - 6 * s, x + 11 * s, cy], fill=INK)
    d.arc([x - 12 * s, cy, x + 12 * s, cy + 14 * s], 20, 160, fill=INK, width=3)
    if hat:
        d.rectangle([x - 22 * s, cy - head - 30 * s, x + 22 * s, cy - head + 4 * s], fill=INK)
        d.rectangle([x - 36 * s, cy - head, x + 36 * s, cy - head + 8 * s], fill=INK)


def desert_island(d: Draw) -> None:
    """A castaway on a tiny island with one palm tree, a laptop on the sand."""
    d.rectangle([0, 0, WIDTH, 300], fill=(190, 225, 250))
    d.rectangle([0, 300, WIDTH, HEIGHT], fill=(60, 140, 200))
    for x in range(20, WIDTH, 90):
        d.arc([x, 330, x + 60, 360], 200, 340, fill=(230, 245, 255), width=4)
    d.ellipse([150, 260, 500, 360], fill=(240, 215, 150), outline=INK, width=LINE)
    d.line([(400, 300), (420, 130)], fill=(120, 80, 40), width=18)
    for dx, dy in ((-90, 20), (90, 30), (-60, -30), (70, -25)):
        d.line([(420, 130), (420 + dx, 130 + dy)], fill=(40, 140, 60), width=14)
    _person(d, 260, 310, scale=0.8, shirt=(230, 90, 70))
    d.polygon([(300, 300), (350, 300), (360, 310), (290, 310)], fill=(90, 90, 100), outline=INK)
    d.rectangle([305, 270, 345, 300], fill=(140, 200, 255), outline=INK, width=3)


def office_cat(d: Draw) -> None:
    """A cat at the head of a meeting table, two people listening."""
    d.rectangle([0, 0, WIDTH, HEIGHT], fill=(245, 240, 225))
    d.rectangle([60, 40, 260, 170], fill=(255, 255, 255), outline=INK, width=LINE)  # whiteboard chart
    d.line([(80, 150), (130, 110), (180, 130), (240, 60)], fill=(200, 60, 60), width=6)
    d.rectangle([80, 330, 600, 360], fill=(150, 100, 60), outline=INK, width=LINE)  # table
    d.line([(110, 360), (110, 450)], fill=INK, width=LINE)
    d.line([(570, 360), (570, 450)], fill=INK, width=LINE)
    # The cat, sitting on the table's far end.
    d.ellipse([470, 230, 570, 335], fill=(240, 160, 60), outline=INK, width=LINE)
    d.ellipse([480, 165, 560, 240], fill=(240, 160, 60), outline=INK, width=LINE)
    d.polygon([(485, 190), (492, 150), (515, 175)], fill=(240, 160, 60), outline=INK)
    d.polygon([(555, 190), (548, 150), (525, 175)], fill=(240, 160, 60), outline=INK)
    d.ellipse([500, 195, 510, 205], fill=INK)
    d.ellipse([530, 195, 540, 205], fill=INK)
    d.line([(570, 310), (610, 260)], fill=INK, width=LINE)  # tail
    d.polygon([(505, 240), (535, 240), (520, 262)], fill=(200, 40, 40), outline=INK)  # a tie
    _person(d, 220, 330, scale=0.75, shirt=(80, 160, 120))
    _person(d, 340, 330, scale=0.75, shirt=(120, 110, 200))


def robot_doctor(d: Draw) -> None:
    """A robot on a doctor's couch, a doctor holding a screwdriver instead of a stethoscope."""
    d.rectangle([0, 0, WIDTH, HEIGHT], fill=(225, 240, 235))
    d.rectangle([60, 300, 360, 340], fill=(200, 200, 210), outline=INK, width=LINE)  # couch
    d.line([(80, 340), (80, 430)], fill=INK, width=LINE)
    d.line([(340, 340), (340, 430)], fill=INK, width=LINE)
    d.rectangle([150, 190, 260, 300], fill=(170, 180, 195), outline=INK, width=LINE)  # robot body
    d.rectangle([165, 110, 245, 185], fill=(170, 180, 195), outline=INK, width=LINE)  # head
    d.line([(205, 110), (205, 80)], fill=INK, width=LINE)
    d.ellipse([195, 68, 215, 88], fill=(230, 60, 60), outline=INK, width=3)
    d.ellipse([180, 130, 198, 148], fill=(255, 230, 90), outline=INK, width=3)
    d.ellipse([212, 130, 230, 148], fill=(255, 230, 90), outline=INK, width=3)
    d.line([(185, 165), (225, 165)], fill=INK, width=4)
    d.rectangle([175, 215, 235, 255], fill=(90, 200, 120), outline=INK, width=3)  # a heart-rate screen
    d.line([(180, 240), (195, 240), (202, 222), (210, 252), (218, 240), (230, 240)], fill=INK, width=3)
    _person(d, 470, 420, shirt=(250, 250, 250))
    d.line([(525, 305), (575, 275)], fill=(200, 170, 40), width=10)  # the screwdriver
    d.line([(575, 275), (600, 260)], fill=INK, width=4)


def moon_picnic(d: Draw) -> None:
    """Two astronauts on the moon at a picnic blanket, Earth in the sky."""
    d.rectangle([0, 0, WIDTH, HEIGHT], fill=(20, 24, 50))
    for x, y in ((40, 40), (120, 90), (300, 30), (520, 70), (600, 150), (210, 160), (450, 20)):
        d.ellipse([x, y, x + 5, y + 5], fill=(255, 255, 230))
    d.ellipse([470, 40, 580, 150], fill=(70, 130, 220), outline=(230, 230, 230), width=3)
    d.polygon([(500, 70), (530, 60), (545, 95), (515, 110)], fill=(70, 170, 90))
    d.rectangle([0, 330, WIDTH, HEIGHT], fill=(190, 190, 195))
    for x, y, r in ((80, 380, 30), (400, 420, 22), (560, 360, 18)):
        d.ellipse([x - r, y - r // 2, x + r, y + r // 2], fill=(160, 160, 168), outline=INK, width=3)
    d.polygon([(200, 400), (440, 400), (470, 450), (170, 450)], fill=(220, 70, 70), outline=INK)  # blanket
    d.rectangle([300, 370, 350, 405], fill=(200, 150, 80), outline=INK, width=3)  # basket
    for x in (170, 470):
        _person(d, x, 420, scale=0.8, shirt=(240, 240, 240))
        d.ellipse([x - 34, 210, x + 34, 278], outline=(150, 200, 255), width=6)  # helmet glass


SCENES: dict[str, Callable[[Draw], None]] = {
    "desert-island": desert_island,
    "office-cat": office_cat,
    "robot-doctor": robot_doctor,
    "moon-picnic": moon_picnic,
}


@cache
def draw(name: str) -> bytes:
    """The named scene as PNG bytes (KeyError for a scene that does not exist)."""
    scene = SCENES[name]
    image = Image.new("RGB", (WIDTH, HEIGHT), (255, 255, 255))
    scene(ImageDraw.Draw(image))
    # A frame, as printed cartoons have.
    ImageDraw.Draw(image).rectangle([0, 0, WIDTH - 1, HEIGHT - 1], outline=INK, width=4)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()
