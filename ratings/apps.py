from django.apps import AppConfig


class RatingsConfig(AppConfig):
    name = "ratings"
    verbose_name = "Ratings and analysis"

    def ready(self) -> None:
        # Exports and stored reports are job kinds (ratings.tasks registers them), so they join the
        # recovery every worker runs (annotation.tasks.recover_stale_jobs_task); annotation never imports ratings.
        from ratings import allocation, tasks  # noqa: F401 - allocation registers the active_pairs policy
        from ratings.alignment.tasks import compute_report as alignment
        from ratings.analysis import analysis_compute as analysis
        from ratings.analysis import protocol_compute as protocol
        from ratings.cached import register_kind
        from ratings.models import StudyReport

        # Stored reports (ratings.cached): what each kind computes. judging registers tournaments.
        register_kind(StudyReport.Kind.ALIGNMENT, alignment)
        register_kind(StudyReport.Kind.ANALYSIS, analysis)
        register_kind(StudyReport.Kind.PROTOCOL, protocol, linked=True)
