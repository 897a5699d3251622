from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in, user_login_failed
        from django.core import checks

        from . import study_changes
        from .logins import on_logged_in, on_login_failed
        from .media import store  # noqa: F401 - its signal removes a deleted media file's bytes
        from .ratelimit import shared_cache_check

        checks.register(shared_cache_check, checks.Tags.security, deploy=True)

        # Every password check counts toward login throttling, whichever form or API made it.
        user_login_failed.connect(on_login_failed, dispatch_uid="funnybone-login-failed")
        user_logged_in.connect(on_logged_in, dispatch_uid="funnybone-logged-in")
        # Edits in place count toward the study's inputs revision, which stored reports compare.
        study_changes.connect()
