"""The crowd entry rate limit: launch-sized behind a proxy, unfooled by a forged header, shared by every process."""

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import redis
from django.core.cache import caches
from django.test import Client, override_settings

from annotation.models import Enrollment, Rater
from annotation.ratelimit import _key, hit
from tests.conftest import build_study

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
PROXY = "10.0.0.2"  # the reverse proxy's address: every request arrives from it


def enter(client: Client, study, pid: str, *, forwarded: str | None = None):
    extra = {"HTTP_X_FORWARDED_FOR": forwarded} if forwarded is not None else {}
    return client.get(f"/s/{study.entry_token}/", {"PROLIFIC_PID": pid}, **extra)


@pytest.fixture
def study(researcher):
    return build_study(researcher, n_items=2)


@pytest.fixture
def behind_one_proxy(settings):
    settings.FUNNYBONE_TRUSTED_PROXY_COUNT = 1


class TestAStudyLaunchBehindAProxy:
    def test_three_hundred_participants_from_one_network_all_get_in(self, study, behind_one_proxy):
        # A launch on Prolific: 300 workers in a minute, all through one proxy and
        # (the worst case) one campus NAT address, with the default budgets.
        proxy = Client(REMOTE_ADDR=PROXY)
        statuses = [enter(proxy, study, f"launch-{n}", forwarded="203.0.113.50").status_code for n in range(300)]
        assert statuses == [302] * 300
        assert Enrollment.objects.filter(study=study).count() == 300

    def test_participants_behind_the_proxy_each_have_their_own_budget(self, study, behind_one_proxy, settings):
        settings.FUNNYBONE_ENTRY_RATE_PER_MINUTE = 2
        proxy = Client(REMOTE_ADDR=PROXY)
        for n in range(2):
            assert enter(proxy, study, f"a-{n}", forwarded="203.0.113.1").status_code == 302
        assert enter(proxy, study, "a-2", forwarded="203.0.113.1").status_code == 429
        # Same proxy, another participant's address: a fresh budget.
        assert enter(proxy, study, "b-0", forwarded="203.0.113.2").status_code == 302

    def test_with_two_proxies_the_client_is_the_second_address_from_the_right(self, study, settings):
        settings.FUNNYBONE_TRUSTED_PROXY_COUNT = 2
        settings.FUNNYBONE_ENTRY_RATE_PER_MINUTE = 1
        proxy = Client(REMOTE_ADDR=PROXY)
        # The load balancer (10.0.0.1) appended the client's address, nginx appended the balancer's.
        assert enter(proxy, study, "x-0", forwarded="203.0.113.9, 10.0.0.1").status_code == 302
        assert enter(proxy, study, "x-1", forwarded="203.0.113.9, 10.0.0.1").status_code == 429
        assert enter(proxy, study, "y-0", forwarded="203.0.113.10, 10.0.0.1").status_code == 302


class TestOneClientHammering:
    def test_an_address_inventing_participant_ids_is_refused_past_its_budget(self, study, behind_one_proxy, settings):
        settings.FUNNYBONE_ENTRY_RATE_PER_MINUTE = 5
        proxy = Client(REMOTE_ADDR=PROXY)
        for n in range(5):
            assert enter(proxy, study, f"bot-{n}", forwarded="198.51.100.66").status_code == 302
        refused = enter(proxy, study, "bot-5", forwarded="198.51.100.66")
        assert refused.status_code == 429
        assert refused["Retry-After"] == "60"
        assert "too many times from your network" in refused.content.decode()
        assert not Rater.objects.filter(external_id="bot-5").exists()

    def test_one_participant_reloading_is_stopped_without_spending_the_networks_budget(
        self, study, behind_one_proxy, settings
    ):
        settings.FUNNYBONE_ENTRY_RATE_PER_PARTICIPANT = 3
        settings.FUNNYBONE_ENTRY_RATE_PER_MINUTE = 5
        proxy = Client(REMOTE_ADDR=PROXY)
        for _ in range(3):
            assert enter(proxy, study, "looping", forwarded="203.0.113.77").status_code == 302
        for _ in range(10):
            refused = enter(proxy, study, "looping", forwarded="203.0.113.77")
            assert refused.status_code == 429
        assert "too many times with your participant id" in refused.content.decode()
        # The loop's refused requests did not use up the address: two more participants fit.
        assert enter(proxy, study, "neighbour-1", forwarded="203.0.113.77").status_code == 302
        assert enter(proxy, study, "neighbour-2", forwarded="203.0.113.77").status_code == 302
        assert enter(proxy, study, "neighbour-3", forwarded="203.0.113.77").status_code == 429


class TestAForgedForwardedHeader:
    def test_it_is_ignored_when_no_proxy_is_trusted(self, study, settings):
        settings.FUNNYBONE_TRUSTED_PROXY_COUNT = 0
        settings.FUNNYBONE_ENTRY_RATE_PER_MINUTE = 2
        client = Client(REMOTE_ADDR="198.51.100.5")
        # A new made-up address in every request buys nothing: the peer's address is counted.
        assert enter(client, study, "f-0", forwarded="192.0.2.1").status_code == 302
        assert enter(client, study, "f-1", forwarded="192.0.2.2").status_code == 302
        assert enter(client, study, "f-2", forwarded="192.0.2.3").status_code == 429
        assert enter(Client(REMOTE_ADDR="198.51.100.6"), study, "g-0").status_code == 302

    def test_only_the_addresses_the_trusted_proxies_wrote_count(self, study, behind_one_proxy, settings):
        settings.FUNNYBONE_ENTRY_RATE_PER_MINUTE = 2
        proxy = Client(REMOTE_ADDR=PROXY)
        # The client wrote the left part; the proxy appended the real address on the right.
        assert enter(proxy, study, "s-0", forwarded="192.0.2.1, 198.51.100.7").status_code == 302
        assert enter(proxy, study, "s-1", forwarded="192.0.2.2, 198.51.100.7").status_code == 302
        assert enter(proxy, study, "s-2", forwarded="192.0.2.3, 198.51.100.7").status_code == 429

    def test_a_request_that_skipped_the_proxy_counts_as_its_peer(self, study, settings):
        settings.FUNNYBONE_TRUSTED_PROXY_COUNT = 2
        settings.FUNNYBONE_ENTRY_RATE_PER_MINUTE = 1
        direct = Client(REMOTE_ADDR="198.51.100.8")
        # One hop where two proxies should have written two: the header cannot be trusted.
        assert enter(direct, study, "d-0", forwarded="192.0.2.1").status_code == 302
        assert enter(direct, study, "d-1", forwarded="192.0.2.2").status_code == 429


# -- shared across processes -------------------------------------------------------

# Another web process: entries to an always-open view behind the same decorator, from one address.
OTHER_PROCESS = """
import sys
import django
django.setup()
from django.http import HttpResponse
from django.test import RequestFactory
from annotation.ratelimit import entry_rate_limited
view = entry_rate_limited(lambda request: HttpResponse("in"))
address, n = sys.argv[1], int(sys.argv[2])
requests = (RequestFactory().get("/s/t/", {"PROLIFIC_PID": f"other-{i}"}, REMOTE_ADDR=address) for i in range(n))
print(" ".join(str(view(request).status_code) for request in requests))
"""


def other_process(redis_url: str, address: str, n: int, *, limit: int) -> list[int]:
    env = {
        **{k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"},
        "DJANGO_SETTINGS_MODULE": "funnybone.settings",
        "REDIS_URL": redis_url,
        "FUNNYBONE_ENTRY_RATE_PER_MINUTE": str(limit),
    }
    result = subprocess.run(
        [sys.executable, "-c", OTHER_PROCESS, address, str(n)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return [int(code) for code in result.stdout.split()]


class TestSharedThroughRedis:
    def test_entries_in_another_process_spend_the_same_budget(self, study, redis_cache, settings):
        settings.FUNNYBONE_ENTRY_RATE_PER_MINUTE = 3
        address = f"198.51.100.20-{uuid.uuid4().hex}"  # a fresh client on every run
        client = Client(REMOTE_ADDR=address)
        assert other_process(redis_cache, address, 2, limit=3) == [200, 200]
        # Two of three already spent elsewhere: this process lets one more in, then refuses.
        assert enter(client, study, "here-0").status_code == 302
        assert enter(client, study, "here-1").status_code == 429
        # And the other process sees this one's entry too.
        assert other_process(redis_cache, address, 1, limit=3) == [429]

    def test_a_counter_always_runs_out(self, redis_cache):
        # Django's cache.incr on Redis is two steps; a key that expires between them comes
        # back without an expiry and would refuse the client for good. Ours always has one.
        raw = redis.Redis.from_url(redis_cache)
        key = caches["default"].make_key(_key("entry", "stuck-client"))
        raw.set(key, 7)  # a counter left without an expiry
        assert hit(scope="entry", client="stuck-client", window=60) == 8
        assert 0 < raw.ttl(key) <= 60
        assert hit(scope="entry", client="fresh-client", window=60) == 1
        assert 0 < raw.ttl(caches["default"].make_key(_key("entry", "fresh-client"))) <= 60


class TestACacheOutage:
    def test_participants_still_get_in_when_redis_is_unreachable(self, study, settings):
        # Nothing listens on port 1: every count fails at once. A launch must not fail with it.
        settings.FUNNYBONE_ENTRY_RATE_PER_MINUTE = 1
        unreachable = {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:1/0"}
        client = Client()
        with override_settings(CACHES={"default": unreachable}):
            statuses = [enter(client, study, f"outage-{n}").status_code for n in range(3)]
        assert statuses == [302, 302, 302]
