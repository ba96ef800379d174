"""Scraping the endpoint as Prometheus would, and reading what it served."""

from __future__ import annotations

from typing import Any

from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

TOKEN = "s3cret-token-for-the-scraper"
NS = "django_redis_metrics"

Found = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(url: str, **headers: str) -> Any:
    return Client().get(url, headers={"Authorization": f"Bearer {TOKEN}", **headers})


def families(url: str) -> dict[str, Any]:
    """Every family served, by name, parsed as Prometheus parses the text format."""
    text = scrape(url).content.decode()
    return {family.name: family for family in text_string_to_metric_families(text)}


def samples(url: str) -> Found:
    """Every sample served: ``(name, sorted labels) -> value``."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in families(url).values()
        for s in family.samples
    }


def labelled(found: Found, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """The samples named ``name``: their sorted labels -> value."""
    return {labels: value for (sample, labels), value in found.items() if sample == name}
