from django.apps import AppConfig


class JudgingConfig(AppConfig):
    name = "judging"
    verbose_name = "LLM judges"

    def ready(self) -> None:
        from ratings.alignment.judges import register_price_source
        from ratings.cached import register_kind
        from ratings.models import StudyReport

        from .rankings import tournament_figures
        from .selectors import judge_prices
        from .study_file import register

        register()
        # annotation may not import judging: judging hands the media importer its guarded fetcher.
        from annotation.media.fetch import register_fetcher

        from .outbound import fetch_once

        register_fetcher(fetch_once)
        # ratings may not import judging; judging tells it where judges' prices are.
        register_price_source(judge_prices)
        # The tournament page's leaderboard is a stored report, recomputed by a worker when verdicts arrive.
        register_kind(StudyReport.Kind.TOURNAMENT, tournament_figures)
        # Judge runs, generation runs and tournaments are job kinds (judging.tasks registers them), so the
        # one recovery loop every worker runs (annotation.tasks.recover_stale_jobs_task) recovers them too.
        from . import tasks  # noqa: F401
