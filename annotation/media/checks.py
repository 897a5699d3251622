"""What media file an item may carry: checked by content, within limits, re-encoded clean.

The one place that decides whether uploaded (or fetched) bytes become a media
file. ``check_media(data, name)`` returns the bytes to store, or raises
``MediaProblem`` with a message that names the file:

- the type comes from the bytes (Pillow's decoders), never from the name; PNG,
  JPEG, GIF and WebP are accepted, animated GIF/PNG/WebP included. SVG (and any
  XML or HTML) is refused: it can carry script, and a raster is all a rater needs;
- ``FUNNYBONE_MEDIA_MAX_BYTES`` bounds the file, ``FUNNYBONE_MEDIA_MAX_PIXELS``
  each frame, and an animation's frames together may hold at most
  ``ANIMATION_PIXEL_FACTOR`` times that; the sizes are read from the header
  before any pixel is decoded, so a decompression bomb is refused unopened;
- a polyglot — an image that is also a ZIP archive, or carries HTML or script —
  is refused rather than cleaned, so the researcher learns their file is odd;
- everything accepted is decoded and encoded again by Pillow in its own format
  with no metadata: EXIF (GPS included), XMP, comments and text chunks are gone,
  a JPEG's orientation is applied to the pixels first, animations keep their
  frames, durations and loop count. What is stored and served is Pillow's output,
  never the uploaded bytes.

Audio and video are not accepted yet (docs/media.md).
"""

import io
import re
import warnings
from dataclasses import dataclass

from django.conf import settings
from PIL import Image, ImageOps, ImageSequence, UnidentifiedImageError

# An animation's frames together may hold this many times the per-frame pixel limit.
ANIMATION_PIXEL_FACTOR = 10
# Formats accepted, by Pillow's name: (content type, file ending).
FORMATS = {
    "PNG": ("image/png", "png"),
    "JPEG": ("image/jpeg", "jpg"),
    "GIF": ("image/gif", "gif"),
    "WEBP": ("image/webp", "webp"),
}
# Text formats that could run script if a browser ever rendered them; sniffed before Pillow.
_MARKUP = re.compile(rb"^\s*(?:\xef\xbb\xbf)?\s*<(?:\?xml|svg|!doctype|html|!--)", re.IGNORECASE)
# A second file riding inside an image: HTML or script anywhere, a ZIP directory near the end.
_EMBEDDED_MARKUP = re.compile(rb"<(?:script|html|svg|\?php|iframe|body)[\s>/]", re.IGNORECASE)
_ZIP_END = b"PK\x05\x06"
_ZIP_TAIL = 65_536 + 22  # a ZIP's end record sits within its comment's length of the end


def extension_for(content_type: str) -> str:
    """The file ending of an accepted content type ("bin" for anything else)."""
    return next((ending for kind, ending in FORMATS.values() if kind == content_type), "bin")


class MediaProblem(ValueError):
    """A media file refused, with a message naming it."""


@dataclass(frozen=True)
class CheckedMedia:
    data: bytes  # the re-encoded bytes: what is stored and served
    content_type: str
    kind: str  # MediaFile.Kind value: "image" or "animated"
    extension: str
    width: int
    height: int


def media_limits() -> tuple[int, int]:
    """(bytes, pixels per frame), read when a check runs so tests and deployments can change them."""
    return settings.FUNNYBONE_MEDIA_MAX_BYTES, settings.FUNNYBONE_MEDIA_MAX_PIXELS


def check_media(data: bytes, name: str) -> CheckedMedia:
    """The clean, re-encoded file, or MediaProblem naming ``name``."""
    max_bytes, max_pixels = media_limits()
    if not data:
        raise MediaProblem(f"{name}: the file is empty.")
    if len(data) > max_bytes:
        raise MediaProblem(f"{name}: {len(data):,} bytes; media files may have at most {max_bytes:,}.")
    if _MARKUP.match(data[:1024]):
        raise MediaProblem(
            f"{name}: SVG, XML and HTML files are not accepted (they can carry script); use PNG, JPEG, GIF or WebP."
        )
    if _EMBEDDED_MARKUP.search(data) or _ZIP_END in data[-_ZIP_TAIL:]:
        raise MediaProblem(
            f"{name}: the file holds a second file (HTML, script or a ZIP archive) besides the image; "
            "export the picture again from an image editor."
        )
    try:
        return _reencode(data, name, max_pixels)
    except MediaProblem:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise MediaProblem(f"{name}: the image has too many pixels (at most {max_pixels:,} per frame).") from None
    except UnidentifiedImageError:
        raise MediaProblem(
            f"{name}: not an image Funnybone accepts (PNG, JPEG, GIF or WebP), whatever its name."
        ) from None
    except (OSError, ValueError, SyntaxError, EOFError, MemoryError) as exc:
        raise MediaProblem(f"{name}: the image is damaged and cannot be read ({exc}).") from None


def _open(data: bytes, name: str, max_pixels: int) -> Image.Image:
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        image = Image.open(io.BytesIO(data), formats=list(FORMATS))
    width, height = image.size
    if width * height > max_pixels:
        raise MediaProblem(
            f"{name}: {width}×{height} pixels; media images may have at most {max_pixels:,} pixels per frame."
        )
    frames = getattr(image, "n_frames", 1)
    if frames * width * height > max_pixels * ANIMATION_PIXEL_FACTOR:
        raise MediaProblem(
            f"{name}: {frames} frames of {width}×{height} pixels; an animation may hold at most "
            f"{max_pixels * ANIMATION_PIXEL_FACTOR:,} pixels in all."
        )
    return image


def _reencode(data: bytes, name: str, max_pixels: int) -> CheckedMedia:
    image = _open(data, name, max_pixels)
    fmt = image.format or ""
    content_type, extension = FORMATS[fmt]
    animated = getattr(image, "n_frames", 1) > 1
    out = io.BytesIO()
    if animated:
        _save_animation(image, fmt, out)
    else:
        _save_still(image, fmt, out)
    width, height = _size_of(out.getvalue())
    return CheckedMedia(
        data=out.getvalue(),
        content_type=content_type,
        kind="animated" if animated else "image",
        extension=extension,
        width=width,
        height=height,
    )


def _size_of(data: bytes) -> tuple[int, int]:
    with Image.open(io.BytesIO(data)) as written:
        return written.size


def _save_still(image: Image.Image, fmt: str, out: io.BytesIO) -> None:
    image.load()
    if fmt == "JPEG":
        # The orientation lives in the EXIF that is dropped: turn the pixels instead.
        image = ImageOps.exif_transpose(image)
    clean = image.copy()
    clean.info = {}
    keep = {"transparency": image.info["transparency"]} if "transparency" in image.info else {}
    if fmt == "JPEG":
        if clean.mode not in ("RGB", "L", "CMYK"):
            clean = clean.convert("RGB")
        clean.save(out, "JPEG", quality=92, optimize=True)
    elif fmt == "WEBP":
        clean.save(out, "WEBP", quality=90, method=4)
    else:
        clean.save(out, fmt, optimize=fmt == "PNG", **keep)


def _save_animation(image: Image.Image, fmt: str, out: io.BytesIO) -> None:
    frames, durations = [], []
    for frame in ImageSequence.Iterator(image):
        durations.append(int(frame.info.get("duration", 100) or 100))
        copy = frame.convert("RGBA") if fmt != "GIF" else frame.copy()
        copy.info = {}
        frames.append(copy)
    options: dict = {"save_all": True, "append_images": frames[1:], "duration": durations}
    options["loop"] = int(image.info.get("loop", 0) or 0)
    if fmt == "GIF":
        options["disposal"] = 2
    elif fmt == "WEBP":
        options["quality"] = 90
    frames[0].save(out, fmt, **options)
