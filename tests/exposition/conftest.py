from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from .scraping import TOKEN


@pytest.fixture
def exposition(settings: Any, backend: Any) -> str:
    """The endpoint's URL, open to the test token, on the single node then the cluster."""
    settings.ROOT_URLCONF = "tests.integration.urls"
    settings.DJANGO_REDIS_METRICS = {**settings.DJANGO_REDIS_METRICS, "EXPORT_TOKEN": TOKEN}
    return reverse("django_redis_metrics:prometheus")
