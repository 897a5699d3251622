"""The demo login has a published password: a production server never gets one from load_demo."""

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from annotation.demo.builder import DEMO_PASSWORD, DEMO_USERNAME
from annotation.models import Study

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"  # the demo's cartoons


def load_demo(*args: str) -> str:
    out = io.StringIO()
    call_command("load_demo", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def production(settings):
    settings.FUNNYBONE_PRODUCTION = True


class TestLoadDemoInProduction:
    def test_it_refuses_the_demo_login_and_writes_nothing(self, production):
        with pytest.raises(CommandError) as refused:
            load_demo()
        message = str(refused.value)
        assert "Refusing to create or use the demo login 'demo'" in message
        assert "load_demo --owner USERNAME" in message
        assert not get_user_model().objects.filter(username=DEMO_USERNAME).exists()
        assert not Study.objects.exists()

    def test_it_loads_the_studies_for_an_account_the_operator_names(self, production, researcher):
        output = load_demo("--owner", "rita")
        assert "Demo ready" in output and DEMO_PASSWORD not in output
        assert Study.objects.exists()
        assert set(Study.objects.values_list("owner__username", flat=True)) == {"rita"}
        assert not get_user_model().objects.filter(username=DEMO_USERNAME).exists()

    def test_an_unknown_owner_is_named(self, production):
        with pytest.raises(CommandError, match="No account named 'nobody'"):
            load_demo("--owner", "nobody")
        assert not Study.objects.exists()

    def test_it_warns_of_a_demo_login_left_with_the_published_password(self, production):
        get_user_model().objects.create_user(DEMO_USERNAME, password=DEMO_PASSWORD)
        with pytest.raises(CommandError) as refused:
            load_demo()
        assert "still has the published password" in str(refused.value)
        assert "manage.py changepassword demo" in str(refused.value)
        assert not Study.objects.exists()


def test_outside_production_the_demo_login_is_still_created():
    assert "Created the researcher login demo / demo-password" in load_demo()
    assert get_user_model().objects.get(username=DEMO_USERNAME).check_password(DEMO_PASSWORD)
