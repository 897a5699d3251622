"""Hostile table files, built in the test: XLSX bombs and entity tricks, broken CSV, JSON lines past the limits.

Each builder returns the file's bytes. The XLSX ones start from a real
workbook written by openpyxl and replace one XML part, as an attacker would.
bench/table_bombs.py uses the same builders at full size.
"""

import io
import json
import zipfile

from openpyxl import Workbook

SHEET = "xl/worksheets/sheet1.xml"
SHARED_STRINGS = "xl/sharedStrings.xml"
MAIN_NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"


def workbook(rows: list[list]) -> bytes:
    book = Workbook()
    for row in rows:
        book.active.append(row)
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def with_part(data: bytes, name: str, content: bytes) -> bytes:
    """The workbook with one part replaced (or added), compressed as Excel would."""
    source = zipfile.ZipFile(io.BytesIO(data))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as target:
        for info in source.infolist():
            if info.filename != name:
                target.writestr(info.filename, source.read(info.filename))
        target.writestr(name, content)
    return buffer.getvalue()


def with_shared_strings(sst: bytes) -> bytes:
    """A workbook whose sheet reads its two cells from this shared-strings part, registered as Excel does."""
    data = workbook([["id"]])
    source = zipfile.ZipFile(io.BytesIO(data))
    types = source.read("[Content_Types].xml").replace(
        b"</Types>",
        b'<Override PartName="/xl/sharedStrings.xml" ContentType="application/'
        b'vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml" /></Types>',
    )
    rels = source.read("xl/_rels/workbook.xml.rels").replace(
        b"</Relationships>",
        b'<Relationship Id="rIdStrings" Target="sharedStrings.xml" Type="http://schemas.openxmlformats.org/'
        b'officeDocument/2006/relationships/sharedStrings" /></Relationships>',
    )
    sheet = _sheet('<sheetData><row r="1"><c r="A1" t="s"><v>0</v></c></row></sheetData>')
    for name, content in (("[Content_Types].xml", types), ("xl/_rels/workbook.xml.rels", rels), (SHEET, sheet)):
        data = with_part(data, name, content)
    return with_part(data, SHARED_STRINGS, sst)


def shared_strings_bomb(megabytes: float) -> bytes:
    """A small XLSX whose shared-strings part inflates to about this many megabytes of tiny strings."""
    item = b"<si><t>ha</t></si>"
    count = int(megabytes * 1024 * 1024) // len(item)
    xml = (
        b'<?xml version="1.0" encoding="UTF-8"?>'
        + f'<sst xmlns="{MAIN_NS}" count="{count}" uniqueCount="{count}">'.encode()
        + item * count
        + b"</sst>"
    )
    return with_shared_strings(xml)


def _sheet(body: str, *, prolog: str = "") -> bytes:
    return (f'<?xml version="1.0" encoding="UTF-8"?>{prolog}<worksheet xmlns="{MAIN_NS}">{body}</worksheet>').encode()


def external_entity_xlsx() -> bytes:
    """A sheet whose cell pulls /etc/passwd in through an external entity."""
    prolog = '<!DOCTYPE worksheet [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
    body = (
        '<sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>id</t></is></c></row>'
        '<row r="2"><c r="A2" t="inlineStr"><is><t>&xxe;</t></is></c></row></sheetData>'
    )
    return with_part(workbook([["id"], ["j1"]]), SHEET, _sheet(body, prolog=prolog))


def billion_laughs_xlsx() -> bytes:
    """Shared strings whose one entity expands to a billion "lol"s."""
    entities = ['<!ENTITY lol0 "lol">'] + [f'<!ENTITY lol{n} "{f"&lol{n - 1};" * 10}">' for n in range(1, 10)]
    xml = (
        f'<?xml version="1.0" encoding="UTF-8"?><!DOCTYPE sst [{"".join(entities)}]>'
        f'<sst xmlns="{MAIN_NS}" count="1" uniqueCount="1"><si><t>&lol9;</t></si></sst>'
    )
    return with_shared_strings(xml.encode())


def huge_dimension_xlsx(rows: int = 200_000) -> bytes:
    """A sheet that declares A1:XFD1048576 and holds many empty formatted rows before a real one.

    openpyxl's row iterator pads every row to the declared width and every
    gap to the declared height; this is what kept a worker busy for minutes.
    """
    filler = "".join(f'<row r="{n}"><c r="XFD{n}" s="0"/></row>' for n in range(2, rows))
    body = (
        '<dimension ref="A1:XFD1048576"/><sheetData>'
        '<row r="1"><c r="A1" t="inlineStr"><is><t>id</t></is></c><c r="B1" t="inlineStr"><is><t>text</t></is></c></row>'
        f"{filler}"
        f'<row r="{rows}"><c r="A{rows}" t="inlineStr"><is><t>j1</t></is></c>'
        f'<c r="B{rows}" t="inlineStr"><is><t>A joke</t></is></c></row></sheetData>'
    )
    return with_part(workbook([["id"]]), SHEET, _sheet(body))


def unterminated_quote_csv() -> bytes:
    return b'id,text\nj1,"A joke that never closes its quote\nj2,Another joke\n'


def nul_csv() -> bytes:
    return b"id,text\nj1,fine\nj2,a\x00b\n"


def deep_jsonl(depth: int = 10_000) -> bytes:
    return (
        b'{"id": "j1", "text": "fine"}\n{"id": "j2", "text": "x", "metadata": {"a": '
        + b"[" * depth
        + b"]" * depth
        + b"}}\n"
    )


def jsonl_lines(*lines: str) -> bytes:
    """A JSON Lines file whose first line is a good item; the lines are written as given (escapes stay escapes)."""
    return ('{"id": "j1", "text": "fine"}\n' + "".join(line + "\n" for line in lines)).encode()


def surrogate_text_jsonl() -> bytes:
    return jsonl_lines('{"id": "j2", "text": "a\\ud800b"}')


def surrogate_metadata_jsonl() -> bytes:
    return jsonl_lines('{"id": "j2", "text": "x", "metadata": {"note": "a\\udfffb"}}')


def nan_jsonl() -> bytes:
    return jsonl_lines('{"id": "j2", "text": "x", "metadata": {"score": NaN}}')


def duplicate_key_jsonl() -> bytes:
    return jsonl_lines('{"id": "j2", "text": "first", "text": "second"}')


def huge_int_jsonl(digits: int = 5_000) -> bytes:
    return (
        json.dumps({"id": "j1", "text": "fine"}).encode()
        + b'\n{"id": "j2", "text": "x", "gold": '
        + b"9" * digits
        + b"}\n"
    )


# -- media files (docs/media.md) -----------------------------------------------------


def png(size: tuple[int, int] = (40, 30), color: tuple[int, int, int] = (200, 40, 40)) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, "PNG")
    return buffer.getvalue()


def jpeg_with_gps() -> bytes:
    """A JPEG whose EXIF names a place (GPS latitude and longitude) and a camera."""
    from PIL import Image

    exif = Image.Exif()
    exif[0x010F] = "SecretCam"  # Make
    exif[0x8825] = {1: "N", 2: (51.0, 30.0, 0.0), 3: "W", 4: (0.0, 7.0, 0.0)}  # GPS IFD
    buffer = io.BytesIO()
    Image.new("RGB", (32, 24), (10, 120, 200)).save(buffer, "JPEG", exif=exif)
    return buffer.getvalue()


def animated_gif(frames: int = 3) -> bytes:
    from PIL import Image

    images = [Image.new("RGB", (20, 20), (index * 60, 90, 200 - index * 40)) for index in range(frames)]
    buffer = io.BytesIO()
    images[0].save(buffer, "GIF", save_all=True, append_images=images[1:], duration=[80] * frames, loop=0)
    return buffer.getvalue()


def png_polyglot_zip() -> bytes:
    """A valid PNG with a ZIP archive appended: an image viewer shows the picture, unzip finds a page."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("index.html", "<p>hello</p>")
    return png() + buffer.getvalue()


def gif_polyglot_html() -> bytes:
    """A GIF with a script after its trailer (read as HTML by a sniffing browser)."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("P", (4, 4)).save(buffer, "GIF")
    return buffer.getvalue() + b"<script>alert(document.cookie)</script>"


def svg_with_script() -> bytes:
    return b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'


def png_pixel_bomb(side: int = 60_000) -> bytes:
    """A PNG whose header claims side × side pixels with almost no data: decoding it would need gigabytes."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", side, side, 1, 0, 0, 0, 0)  # 1-bit greyscale
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\0" * 1024))
        + chunk(b"IEND", b"")
    )


def archive(entries: dict[str, bytes], *, compress: bool = True) -> bytes:
    buffer = io.BytesIO()
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with zipfile.ZipFile(buffer, "w", method) as target:
        for name, data in entries.items():
            target.writestr(name, data)
    return buffer.getvalue()


def archive_of_many(count: int) -> bytes:
    """An archive with ``count`` tiny entries besides its item file."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as target:
        target.writestr("items.csv", "id,text\na,hello\n")
        for index in range(count):
            target.writestr(f"m/{index}.png", b"x")
    return buffer.getvalue()


def archive_zip_bomb(megabytes: int = 40) -> bytes:
    """An archive whose picture inflates from a few kilobytes to ``megabytes`` of zeros."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as target:
        target.writestr("items.csv", "id,text,media\na,hello,big.png\n")
        target.writestr("big.png", b"\0" * (megabytes * 1024 * 1024))
    return buffer.getvalue()
