"""The admin's Metrics section while Redis is away: 503 pages inside the admin layout and 503
JSON, naming the Redis address with its credentials masked; back to normal when Redis answers."""

from __future__ import annotations

from typing import Any

import pytest

from django_redis_metrics.testing import RedisServer, free_port

from ..django_site import admin_url, client_for, make_user
from .test_admin import PAGES

pytestmark = pytest.mark.django_db

SECRET = "s3cret-password"


@pytest.fixture
def redis_away(settings: Any) -> int:
    """Settings naming a Redis (with credentials) that nothing listens to; its port."""
    port = free_port()
    settings.ROOT_URLCONF = "tests.integration.urls"
    settings.DJANGO_REDIS_METRICS = {
        "CONNECTION": f"redis://metrics:{SECRET}@127.0.0.1:{port}/0",
        "PREFIX": "away",
    }
    return port


@pytest.mark.parametrize(("model", "suffix", "query"), PAGES)
def test_every_page_and_endpoint_answers_503_naming_the_masked_address(
    redis_away: int, model: str, suffix: str, query: str
) -> None:
    url = admin_url(model, suffix) + query
    assert client_for(None).get(url).status_code == 302  # to the login page first, as always
    response = client_for(make_user("analyst", staff=True, permitted=True)).get(url)
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    address = f"redis://***@127.0.0.1:{redis_away}/0"
    assert SECRET.encode() not in response.content
    if suffix == "data":
        body = response.json()
        assert body["error"] == "redis_unreachable"
        assert address in body["message"]
        assert body["retry_after"] == 5
    else:
        page = response.content.decode()
        assert address in page
        assert "ConnectionError" in page
        assert 'id="site-name"' in page  # inside the admin layout, not a bare error page
        assert "Metrics unavailable" in page


def test_the_pages_work_again_once_redis_answers(redis_away: int, settings: Any) -> None:
    client = client_for(make_user("analyst", staff=True, permitted=True))
    url = admin_url("countermetric", "changelist")
    assert client.get(url).status_code == 503
    server = RedisServer(port=redis_away).start()
    try:
        server.client().acl_setuser(
            "metrics", enabled=True, passwords=[f"+{SECRET}"], keys=["*"], commands=["+@all"]
        )
        assert client.get(url).status_code == 200
    finally:
        server.cleanup()
