# SPDX-License-Identifier: GPL-3.0-or-later
"""An export as an HTTP answer, shared by the export pages and the API.

A small study's export is answered within the request (streamed when its
format can stream, otherwise written to memory first); a finished background
export is answered from its file. The format's registry entry says how.
"""

from __future__ import annotations

import io

from django.core.exceptions import ValidationError
from django.http import FileResponse, Http404, HttpResponse, StreamingHttpResponse

from annotation.models import Study
from ratings.models import Export

from .formats import get_format
from .services import export_file_path, export_filename, write_export


def export_direct_response(study: Study, fmt: str, subset: list[int]) -> HttpResponse:
    """The whole export in this response (small studies only)."""
    export_format = get_format(fmt)
    filename = export_filename(study, fmt)
    if export_format.stream is not None:
        response = StreamingHttpResponse(
            export_format.stream(study, rater_subset=subset), content_type=export_format.content_type
        )
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response
    buffer = io.BytesIO()
    write_export(study, fmt, buffer, rater_subset=subset)
    buffer.seek(0)
    return FileResponse(buffer, as_attachment=True, filename=filename, content_type=export_format.content_type)


def export_file_response(export: Export) -> FileResponse:
    """The finished export's file as a download; 404 while it is not ready or when its file is gone."""
    if export.status != Export.Status.DONE:
        raise Http404("This export is not ready.")
    try:
        path = export_file_path(export)
        handle = open(path, "rb")  # noqa: SIM115 - FileResponse closes it
    except FileNotFoundError:
        raise Http404("This export's file is gone; please request a new one.") from None
    return FileResponse(
        handle,
        as_attachment=True,
        filename=path.name.split("-", 1)[1],
        content_type=_content_type(export.format),
    )


def _content_type(name: str) -> str:
    try:
        return get_format(name).content_type
    except ValidationError:
        # A format withdrawn since this file was written: the file is still the owner's to fetch.
        return "application/octet-stream"
