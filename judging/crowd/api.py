# SPDX-License-Identifier: GPL-3.0-or-later
"""The crowd API: a participant's withdrawal (POST /api/v1/studies/{id}/withdrawals/)."""

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.api.views import ResearcherApi

from .withdrawal import participant_find, participant_withdraw


class WithdrawalInput(serializers.Serializer):
    participant = serializers.CharField(max_length=200, help_text="The participant's pseudonym (P-…) or platform id.")


class WithdrawalsApi(ResearcherApi):
    @extend_schema(
        operation_id="withdrawals_create",
        summary="Withdraw a participant: delete everything they gave in the study",
        request=WithdrawalInput,
        responses={
            200: inline_serializer(
                "WithdrawalOutput",
                {
                    "pseudonym": serializers.CharField(),
                    "answers_deleted": serializers.IntegerField(),
                    "places_given_back": serializers.IntegerField(),
                    "exports_deleted": serializers.IntegerField(),
                },
            ),
        },
    )
    def post(self, request: Request, pk: int) -> Response:
        study = self.study(pk)
        given = WithdrawalInput(data=request.data)
        given.is_valid(raise_exception=True)
        try:
            rater = participant_find(study=study, who=given.validated_data["participant"])
            gone = participant_withdraw(study=study, rater=rater, actor=request.user)
        except DjangoValidationError as exc:
            raise ValidationError({"errors": _messages(exc)}) from None
        return Response(
            {
                "pseudonym": gone.pseudonym,
                "answers_deleted": gone.answers,
                "places_given_back": gone.places,
                "exports_deleted": gone.exports,
            }
        )


def _messages(exc: DjangoValidationError) -> list[Any]:
    if hasattr(exc, "error_dict"):
        return [f"{field}: {m}" for field, ms in exc.message_dict.items() for m in ms]
    return list(exc.messages)
