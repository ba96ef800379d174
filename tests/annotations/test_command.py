"""``manage.py annotate_metrics``: stores what a deploy script says, refuses bad input clearly."""

from __future__ import annotations

import io
import time
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from django_redis_metrics import annotations


def test_the_command_round_trip(backend: Any) -> None:
    now = time.time()
    out = io.StringIO()
    call_command("annotate_metrics", "Deploy v1.4", "--tag", "deploy", "--tag", "web", stdout=out)
    assert "Deploy v1.4 [deploy, web]" in out.getvalue()
    [stored] = annotations(now - 5, time.time())
    assert stored["text"] == "Deploy v1.4" and stored["tags"] == ["deploy", "web"]
    call_command("annotate_metrics", "Earlier", "--when", str(int(now - 100)), stdout=out)
    assert [a["text"] for a in annotations(now - 200, time.time())] == ["Earlier", "Deploy v1.4"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["  "], "empty or blank"),
        (["x", "--tag", "a b"], "is not a tag"),
        (["x", "--when", "soon"], "ISO 8601"),
        (["x", "--when", "1"], "older than"),
    ],
)
def test_bad_input_is_a_command_error(single: Any, args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        call_command("annotate_metrics", *args, stdout=io.StringIO())
    assert single.keys() == []
