"""Refusing NUL characters in the address, the query string and cookies, for every view at once.

PostgreSQL stores no NUL (0x00) in text and cannot even compare one in a query,
so ``?PROLIFIC_PID=a%00b`` or ``?name=%00`` used to end in a DataError (a 500)
wherever the value reached a lookup. Answering 400 here covers every view,
present and future. Form fields are left to the forms (Django's CharField
refuses a NUL, and the task types check answers), so a NUL typed into a form
comes back as that form's error rather than as a bare error page. What counts as a
NUL is the hostile-input guard's (``annotation.json_limits``).
"""

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from annotation.json_limits import NUL, has_nul


def nul_problem(request: HttpRequest) -> str | None:
    """Where a NUL is, phrased for the message; None when there is none."""
    if has_nul(request.path_info):
        return "the address"
    for name, values in request.GET.lists():
        if has_nul(name) or any(has_nul(value) for value in values):
            return f"the query parameter {name.replace(NUL, '') or '(unnamed)'}"
    for name, value in request.COOKIES.items():
        if has_nul(name) or has_nul(value):
            return f"the cookie {name.replace(NUL, '')}"
    return None


class RefuseNulMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        where = nul_problem(request)
        if where is None:
            return self.get_response(request)
        message = f"NUL characters are not allowed in {where}."
        if request.path_info.startswith("/api/"):
            return JsonResponse({"detail": message}, status=400)
        context = {"title": "This link does not work", "message": message + " Please check the link you followed."}
        return render(request, "annotation/message.html", context, status=400)
