from django.apps import AppConfig


class RatingsConfig(AppConfig):
    name = "ratings"
    verbose_name = "Ratings and analysis"

    def ready(self) -> None:
        # Exports and alignment reports join the recovery every worker runs
        # (annotation.tasks.recover_stale_jobs_task); annotation never imports ratings.
        from annotation.job_tasks import job_recovery_register
        from ratings.alignment.tasks import reports_recover
        from ratings.exports.services import exports_recover

        job_recovery_register("exports", exports_recover)
        job_recovery_register("alignment reports", reports_recover)
