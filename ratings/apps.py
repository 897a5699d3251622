from django.apps import AppConfig


class RatingsConfig(AppConfig):
    name = "ratings"
    verbose_name = "Ratings and analysis"

    def ready(self) -> None:
        # Exports and stored reports join the recovery every worker runs
        # (annotation.tasks.recover_stale_jobs_task); annotation never imports ratings.
        from annotation.job_tasks import job_recovery_register
        from ratings.alignment.tasks import compute_report as alignment
        from ratings.cached import register_kind, reports_recover
        from ratings.exports.services import exports_recover
        from ratings.models import StudyReport
        from ratings.protocol_views import compute_report as protocol
        from ratings.views import compute_report as analysis

        job_recovery_register("exports", exports_recover)
        job_recovery_register("reports", reports_recover)
        # Stored reports (ratings.cached): what each kind computes. judging registers tournaments.
        register_kind(StudyReport.Kind.ALIGNMENT, alignment)
        register_kind(StudyReport.Kind.ANALYSIS, analysis)
        register_kind(StudyReport.Kind.PROTOCOL, protocol, linked=True)
