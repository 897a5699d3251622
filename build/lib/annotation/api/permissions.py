"""Who counts as a researcher: the rule shared by the researcher pages and the API.

Crowdworkers have no account. Experts log in to accept an invitation, and
their account is linked to an expert Rater; such an account is an annotator,
not a researcher, unless it owns a study, is staff, or has been given the
"Can add study" permission in the admin.
"""

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from rest_framework.permissions import BasePermission

from ..models import Rater


def is_researcher(user: AbstractBaseUser | AnonymousUser) -> bool:
    if not user.is_authenticated or not user.is_active:
        return False
    if user.is_staff or user.has_perm("annotation.add_study"):
        return True
    if not Rater.objects.filter(user=user).exists():
        return True
    return user.studies.exists()


class IsResearcher(BasePermission):
    message = "Only researchers can use the API."

    def has_permission(self, request, view) -> bool:
        return is_researcher(request.user)
