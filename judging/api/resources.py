"""The judging resources of API v1: judges, prompt templates, runs, tournaments, generators, generation runs.

The operations are the ones of ``views.py`` and ``generation_views.py`` (which
also serve the deprecated /api/judging/ URLs); v1 pages every list and adds
tournaments, which had no API before.
"""

from django.core.exceptions import ValidationError
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.access import OwnedObjectsMixin, readable_by
from annotation.api.paging import PagedListMixin
from annotation.api.permissions import IsResearcher
from annotation.models import Study
from ratings.leaderboards import judge_leaderboard
from ratings.reports import json_ready, leaderboard_dict

from ..models import ACTIVE_RUN_STATES, JudgeConfig, Tournament
from ..services.templates import ensure_builtin_templates
from ..services.tournaments import tournament_cancel, tournament_create
from .bases import invalid
from .generation_views import STUDY as GENERATION_STUDY
from .generation_views import GenerationRunListCreate, GeneratorListCreate
from .serializers import (
    MAX_ID,
    GenerationRunSerializer,
    GeneratorSerializer,
    JudgeSerializer,
    RunFilterSerializer,
    RunSerializer,
    TemplateSerializer,
)
from .views import NAME, STUDY, JudgeListCreate, RunListCreate, TemplateListCreate


class JudgesApi(PagedListMixin, JudgeListCreate):
    @extend_schema(operation_id="judges_list", summary="Your judges", responses=JudgeSerializer(many=True))
    def get(self, request):
        return self.page_of(self.configs(request), JudgeSerializer)


class GeneratorsApi(PagedListMixin, GeneratorListCreate):
    @extend_schema(operation_id="generators_list", summary="Your generators", responses=GeneratorSerializer(many=True))
    def get(self, request):
        return self.page_of(self.configs(request), GeneratorSerializer)


class TemplatesApi(PagedListMixin, TemplateListCreate):
    @extend_schema(
        operation_id="prompt_templates_list",
        summary="Your prompt templates and the built-in ones, every version",
        parameters=[NAME],
        responses=TemplateSerializer(many=True),
    )
    def get(self, request):
        ensure_builtin_templates()
        templates = readable_by(TemplateSerializer.Meta.model, user=request.user)
        if request.query_params.get("name"):
            templates = templates.filter(name=request.query_params["name"])
        return self.page_of(templates.order_by("name", "-version", "pk"), TemplateSerializer)


def _filtered_runs(view, request):
    filters = RunFilterSerializer(data=request.query_params)
    filters.is_valid(raise_exception=True)
    runs = view.runs(request)
    if filters.validated_data.get("study"):
        runs = runs.filter(study_id=filters.validated_data["study"])
    return runs


class RunsApi(PagedListMixin, RunListCreate):
    @extend_schema(
        operation_id="judge_runs_list",
        summary="Runs on your studies, newest first",
        parameters=[STUDY],
        responses=RunSerializer(many=True),
    )
    def get(self, request):
        return self.page_of(_filtered_runs(self, request), RunSerializer)


class GenerationRunsApi(PagedListMixin, GenerationRunListCreate):
    @extend_schema(
        operation_id="generation_runs_list",
        summary="Generation runs on your studies, newest first",
        parameters=[GENERATION_STUDY],
        responses=GenerationRunSerializer(many=True),
    )
    def get(self, request):
        return self.page_of(_filtered_runs(self, request), GenerationRunSerializer)


# -- tournaments (new in v1) ------------------------------------------------------------


class TournamentCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    source_study = serializers.IntegerField(
        min_value=1, max_value=MAX_ID, help_text="The study of prompts with one candidate per contestant."
    )
    judge = serializers.IntegerField(min_value=1, max_value=MAX_ID)
    schedule = serializers.ChoiceField(choices=Tournament.Schedule.choices, default=Tournament.Schedule.ROUND_ROBIN)
    budget = serializers.IntegerField(
        min_value=1, max_value=2**31 - 1, required=False, allow_null=True, help_text="Most judge calls; null: all."
    )
    seed = serializers.IntegerField(min_value=0, max_value=2**31 - 1, default=0)


class TournamentSerializer(serializers.ModelSerializer):
    judge_name = serializers.CharField(source="judge.name", read_only=True)
    matches = serializers.SerializerMethodField(help_text="Matches scheduled so far.")
    standings_url = serializers.SerializerMethodField()

    class Meta:
        model = Tournament
        fields = [
            "id",
            "name",
            "source_study",
            "match_study",
            "judge",
            "judge_name",
            "schedule",
            "budget",
            "seed",
            "status",
            "error",
            "matches",
            "created_at",
            "finished_at",
            "standings_url",
        ]
        read_only_fields = fields

    def get_matches(self, tournament: Tournament) -> int:
        return tournament.match_study.items.count()

    def get_standings_url(self, tournament: Tournament) -> str:
        path = reverse("v1:tournament_standings", args=[tournament.pk])
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request else path


class StandingsSerializer(serializers.Serializer):
    tournament = serializers.IntegerField()
    status = serializers.CharField()
    verdicts = serializers.IntegerField(help_text="Match verdicts the leaderboard is computed from.")
    leaderboard = serializers.DictField(
        allow_null=True,
        help_text="Bradley–Terry ratings with intervals, Stable Elo, win rates, ranking and position figures "
        "(null before the first verdict).",
    )


class _Tournaments(OwnedObjectsMixin, PagedListMixin):
    permission_classes = [IsResearcher]

    def tournaments(self):
        return self.owned(Tournament).select_related("judge", "match_study")


class TournamentsApi(_Tournaments, APIView):
    @extend_schema(
        operation_id="tournaments_list",
        summary="Your tournaments, newest first",
        responses=TournamentSerializer(many=True),
    )
    def get(self, request):
        return self.page_of(self.tournaments(), TournamentSerializer)

    @extend_schema(
        operation_id="tournaments_create",
        summary="Start a HumorRank tournament: the judge compares contestants' candidates pair by pair",
        request=TournamentCreateSerializer,
        responses={201: TournamentSerializer},
    )
    def post(self, request):
        incoming = TournamentCreateSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        study = self.get_owned(Study, pk=data["source_study"])
        judge = self.get_owned(JudgeConfig, pk=data["judge"])
        try:
            tournament = tournament_create(
                owner=request.user,
                name=data["name"],
                source_study=study,
                judge=judge,
                schedule=data["schedule"],
                budget=data.get("budget"),
                seed=data["seed"],
            )
        except ValidationError as exc:
            raise invalid(exc) from None
        body = TournamentSerializer(tournament, context={"request": request}).data
        return Response(body, status=status.HTTP_201_CREATED)


class TournamentApi(_Tournaments, APIView):
    @extend_schema(
        operation_id="tournaments_retrieve", summary="One of your tournaments", responses=TournamentSerializer
    )
    def get(self, request, pk):
        tournament = self.get_owned(self.tournaments(), pk=pk)
        return Response(TournamentSerializer(tournament, context={"request": request}).data)


class TournamentCancelApi(_Tournaments, APIView):
    @extend_schema(
        operation_id="tournaments_cancel",
        summary="Cancel a tournament and its runs (verdicts so far are kept)",
        request=None,
        responses=TournamentSerializer,
    )
    def post(self, request, pk):
        tournament = self.get_owned(self.tournaments(), pk=pk)
        if tournament.status in ACTIVE_RUN_STATES:
            tournament_cancel(tournament=tournament)
            tournament.refresh_from_db()
        return Response(TournamentSerializer(tournament, context={"request": request}).data)


class TournamentStandingsApi(_Tournaments, APIView):
    @extend_schema(
        operation_id="tournaments_standings",
        summary="The tournament's leaderboard from the verdicts so far",
        responses=StandingsSerializer,
    )
    def get(self, request, pk):
        tournament = self.get_owned(self.tournaments(), pk=pk)
        board, verdicts = judge_leaderboard(study=tournament.match_study, rater_id=tournament.judge.rater_id)
        return Response(
            {
                "tournament": tournament.pk,
                "status": tournament.status,
                "verdicts": len(verdicts),
                "leaderboard": json_ready(leaderboard_dict(board)) if board else None,
            }
        )
