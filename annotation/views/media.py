"""Serving a media file blind: to the study's owner, or to a rater whose session holds an item it is on.

Anyone else gets 404, as if the file did not exist. What the answer carries
(a neutral name, the stored type, ``nosniff``, X-Accel in production) is
``annotation.media.serving``'s.
"""

from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_safe

from ..access import owned_by
from ..media.serving import held_by_rater, media_response
from ..models import MediaFile, Study
from .annotator import _enrollment_in_session


def _may_fetch(request: HttpRequest, media: MediaFile) -> bool:
    if request.user.is_authenticated and owned_by(Study, user=request.user).filter(pk=media.study_id).exists():
        return True
    enrollment = _enrollment_in_session(request, media.study.entry_token)
    return enrollment is not None and held_by_rater(media=media, rater_id=enrollment.rater_id)


@require_safe
def serve(request: HttpRequest, public_id: str) -> HttpResponse:
    media = MediaFile.objects.select_related("study").filter(public_id=public_id).first()
    if media is None or not _may_fetch(request, media):
        raise Http404("No such file.")
    return media_response(media)
