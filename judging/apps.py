from django.apps import AppConfig


class JudgingConfig(AppConfig):
    name = "judging"
    verbose_name = "LLM judges"

    def ready(self) -> None:
        from .study_file import register

        register()
