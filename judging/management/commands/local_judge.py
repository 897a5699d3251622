"""``manage.py local_judge``: serve the bundled small model and point the demo studies' local judge at it.

One command for a laptop: the demo studies are loaded if missing (as ``load_demo``), their owner gets the
judge "SmolLM2-135M (local)" calling ``http://127.0.0.1:PORT/v1`` with every default setting, and the
llama.cpp server runs in the foreground until Ctrl-C. Judge any demo study from its Runs page.
"""

import os
import signal
import subprocess

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotation.demo.builder import DemoLoginRefused, load_demo
from judging.local_model import DEFAULT_PORT, LocalModelMissing, llama_server_argv, local_base_url, local_judge
from judging.outbound import base_url_problem


class Command(BaseCommand):
    help = "Start the bundled SmolLM2-135M on llama.cpp's server and point the demo studies' local judge at it."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"Loopback port (default {DEFAULT_PORT}).")
        parser.add_argument("--threads", type=int, help="CPU threads for the model (default: the server's).")
        parser.add_argument("--owner", metavar="USERNAME", help="The account whose judge it is (default: demo).")
        parser.add_argument(
            "--no-serve", action="store_true", help="Only point the judge at the port; a server is started elsewhere."
        )

    def handle(self, *args, port: int, threads: int | None, owner: str | None, no_serve: bool, **options) -> None:
        base_url = local_base_url(port)
        problem = base_url_problem(base_url)
        if problem:
            raise CommandError(
                f"{problem} make run and make local-judge allow loopback; set FUNNYBONE_OUTBOUND_ALLOW_NETWORKS="
                "127.0.0.0/8 when you run manage.py yourself."
            )
        try:
            argv = None if no_serve else llama_server_argv(port=port, threads=threads)
            result = load_demo(owner=self._owner(owner))
        except (LocalModelMissing, DemoLoginRefused) as exc:
            raise CommandError(str(exc)) from None
        judge, created = local_judge(owner=result.user, base_url=base_url)
        self.stdout.write(
            f"{'Created' if created else 'Using'} the judge {judge.name!r} of {result.user} at {base_url}: "
            f"judge any demo study from its Runs page (http://127.0.0.1:8000/)."
        )
        if argv is None:
            return
        self.stdout.write(f"Serving {argv[argv.index('--model') + 1]} on {base_url} (Ctrl-C stops it).")
        server = subprocess.Popen(argv, start_new_session=True)  # noqa: S603 - our own interpreter and arguments
        try:
            server.wait()
        except KeyboardInterrupt:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait()

    def _owner(self, username: str | None):
        if not username:
            return None
        user_model = get_user_model()
        user = user_model.objects.filter(**{user_model.USERNAME_FIELD: username}).first()
        if user is None:
            raise CommandError(f"No account named {username!r}.")
        return user
