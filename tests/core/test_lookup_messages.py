"""The messages of refused lookups name the lookup as the caller wrote it.

Found following docs/querysets.md: ``Counter.objects.filter(name__regex="(")`` said
``name__regex__regex is not a regular expression``: ``parse`` hands the whole key (lookup
included) to ``_test``, which appends the lookup again. Parsing reads nothing from Redis, so
these tests need no server.
"""

from __future__ import annotations

import pytest

from django_redis_metrics.core.queries.lookups import parse


@pytest.mark.parametrize(
    ("lookups", "error", "named"),
    [
        ({"name__regex": "("}, ValueError, "name__regex is"),
        ({"labels__view__regex": "("}, ValueError, "labels__view__regex is"),
        ({"name__in": "abc"}, TypeError, "name__in takes"),
        ({"name__startswith": 3.5}, TypeError, "name__startswith must"),
    ],
)
def test_a_refused_lookup_is_named_once(
    lookups: dict[str, object], error: type[Exception], named: str
) -> None:
    with pytest.raises(error) as raised:
        parse(lookups)
    message = str(raised.value)
    assert message.startswith(named) or f" {named}" in message, message
    key = next(iter(lookups))
    assert f"{key}__" not in message, message


def test_a_label_may_not_be_called_name() -> None:
    """``name=`` filters a metric's own name, so no label may be called ``name``: refused where
    it is declared, and ``labels__name`` refused with the reason."""
    from django_redis_metrics import Counter

    with pytest.raises(ValueError, match="'name' are reserved"):
        Counter("x", labels=("name",))
    with pytest.raises(TypeError, match="no label may be 'name'"):
        parse({"labels__name": "x"})
