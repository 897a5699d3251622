"""A whole Funnybone site on loopback, laid out as in production (docs/production.md).

gunicorn serves ``funnybone.wsgi`` and a Celery worker runs the background work,
both started from the command line as an operator would, on the test PostgreSQL
database (pytest-django's, so rows the tests commit are what the site serves),
Redis as broker and cache, and one data directory they share (exports written by
the worker are downloaded through the web server). ``production=True`` adds what
a shared server has: ``FUNNYBONE_PRODUCTION``, a secret key, collected static
files, and nginx in front terminating HTTPS with a throw-away certificate and
appending ``X-Forwarded-For`` (``FUNNYBONE_TRUSTED_PROXY_COUNT=1``).
"""

import contextlib
import getpass
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench.load_server import ROOT, Server, free_port, gunicorn
from tests.integration.conftest import Worker, broker_url, database_url, require_redis, running_worker

READY_TIMEOUT = 60


@dataclass
class LiveSite:
    url: str  # where browsers and clients go: nginx in production, else gunicorn itself
    server: Server
    worker: Worker
    data_dir: Path
    env: dict[str, str]
    proxy_log: Path | None = None

    def logs(self) -> str:
        text = f"--- gunicorn\n{self.server.log_text()}\n--- worker\n{self.worker.log_text()}"
        if self.proxy_log and self.proxy_log.exists():
            text += f"\n--- nginx\n{self.proxy_log.read_text(errors='replace')}"
        return text


def nginx_binary() -> str | None:
    return shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if Path(p).exists()), None)


def require_nginx() -> str:
    found = nginx_binary()
    if found:
        return found
    if os.environ.get("FUNNYBONE_REQUIRE_SERVICES"):
        pytest.fail("The production-layout test needs nginx (make test installs it: `make proxy`).")
    pytest.skip("needs nginx (apt-get install nginx-light, or `make proxy`)")


NGINX_CONF = """
# nginx's workers read the media files: run them as the user who owns the test's folders.
user {user};
worker_processes 1;
daemon off;
master_process on;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log {dir}/access.log;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    client_max_body_size 60m;
    server {{
        listen 127.0.0.1:{port} ssl;
        server_name localhost;
        ssl_certificate {dir}/cert.pem;
        ssl_certificate_key {dir}/key.pem;
        location / {{
            proxy_pass http://127.0.0.1:{upstream};
            proxy_set_header Host $host:$server_port;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_read_timeout 120s;
        }}
        # Media files: only the application's X-Accel-Redirect reaches them (docs/media.md).
        location /_protected_media/media/ {{
            internal;
            alias {media_root}/media/;
            add_header X-Content-Type-Options nosniff always;
            add_header Content-Security-Policy "default-src 'none'; sandbox" always;
        }}
    }}
}}
"""


@contextlib.contextmanager
def nginx(port: int, upstream: int, folder: Path, media_root: Path | None = None) -> Iterator[Path]:
    """nginx on loopback ``port``, HTTPS with a self-signed certificate, proxying to ``upstream``; yields its log.

    ``media_root`` is the site's MEDIA_ROOT, served to X-Accel-Redirect answers at its internal location.
    """
    binary = require_nginx()
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost",
            "-keyout",
            str(folder / "key.pem"),
            "-out",
            str(folder / "cert.pem"),
        ],
        check=True,
        capture_output=True,
    )
    conf = folder / "nginx.conf"
    media = media_root or folder / "media"
    conf.write_text(
        NGINX_CONF.format(dir=folder, port=port, upstream=upstream, media_root=media, user=getpass.getuser())
    )
    log = folder / "nginx.out"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [binary, "-c", str(conf), "-p", str(folder)], stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"nginx exited with {process.returncode}: {log.read_text(errors='replace')}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            if time.monotonic() > deadline:
                raise RuntimeError("nginx did not listen in time")
            time.sleep(0.1)
        yield folder / "error.log"
    finally:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"manage.py {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@contextlib.contextmanager
def running_site(
    tmp_path: Path, tmp_path_factory, *, production: bool = False, extra_env: dict[str, str] | None = None
) -> Iterator[LiveSite]:
    redis_url = broker_url()
    require_redis(redis_url)
    data_dir = tmp_path / "data"
    env = {
        "DATABASE_URL": database_url(),
        "REDIS_URL": redis_url,
        "CELERY_BROKER_URL": redis_url,
        "FUNNYBONE_DATA_DIR": str(data_dir),
        "FUNNYBONE_OUTBOUND_ALLOW_NETWORKS": "127.0.0.0/8,::1/128",
        **(extra_env or {}),
    }
    proxy_port = free_port() if production else None
    # tests/conftest.py sets this for Playwright; a production process must not inherit it
    # (check --deploy refuses it, rightly). Gone while the site's processes start, back at once
    # after: the test itself still reads the database while Playwright's event loop runs.
    with contextlib.ExitStack() as stack:
        saved_async_unsafe = os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None) if production else None
        try:
            if production:
                env.update(
                    {
                        "FUNNYBONE_PRODUCTION": "1",
                        "DEBUG": "0",
                        "SECRET_KEY": "live-test-" + os.urandom(24).hex(),
                        "ALLOWED_HOSTS": "localhost",
                        "CSRF_TRUSTED_ORIGINS": f"https://localhost:{proxy_port}",
                        "FUNNYBONE_HTTPS": "1",
                        "FUNNYBONE_TRUSTED_PROXY_COUNT": "1",
                        "FUNNYBONE_MANIFEST_STATIC": "1",
                    }
                )
                manage({**os.environ, **env}, "collectstatic", "--noinput", "-v", "0")
                manage({**os.environ, **env}, "check", "--deploy", "--fail-level", "WARNING")
            site = stack.enter_context(
                _site(tmp_path, tmp_path_factory, env=env, proxy_port=proxy_port, data_dir=data_dir)
            )
        finally:
            if saved_async_unsafe is not None:
                os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = saved_async_unsafe
        yield site


@contextlib.contextmanager
def _site(tmp_path: Path, tmp_path_factory, *, env: dict[str, str], proxy_port: int | None, data_dir: Path):
    with (
        running_worker(tmp_path_factory, env=env) as worker,
        gunicorn(env["DATABASE_URL"], log=tmp_path / "gunicorn.log", workers=2, threads=4, extra_env=env) as server,
    ):
        if proxy_port is None:
            yield LiveSite(url=server.url, server=server, worker=worker, data_dir=data_dir, env=env)
            return
        with nginx(proxy_port, server.port, tmp_path / "nginx", media_root=data_dir / "media") as proxy_log:
            yield LiveSite(
                url=f"https://localhost:{proxy_port}",
                server=server,
                worker=worker,
                data_dir=data_dir,
                env=env,
                proxy_log=proxy_log,
            )
