"""A local Prolific for the crowd tests, on a port of this branch's range."""

import socket

import pytest

from .prolific_server import FakeProlific, serve

TOKEN = "prolific-test-token-" + "k" * 20


def _free_port() -> int:
    for port in range(21300, 21400):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port in 21300-21399")


@pytest.fixture
def fake_prolific(settings):
    fake = FakeProlific(token=TOKEN)
    server = serve(fake, _free_port())
    settings.FUNNYBONE_PROLIFIC_API_URL = f"http://127.0.0.1:{server.server_address[1]}"
    yield fake
    server.shutdown()
    server.server_close()
