from django.apps import AppConfig


class JudgingConfig(AppConfig):
    name = "judging"
    verbose_name = "LLM judges"

    def ready(self) -> None:
        from ratings.alignment.judges import register_price_source

        from .selectors import judge_prices
        from .study_file import register

        register()
        # ratings may not import judging; judging tells it where judges' prices are.
        register_price_source(judge_prices)
