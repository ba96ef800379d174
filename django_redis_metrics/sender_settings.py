"""The ``SENDER`` setting: one dict tuning the background sender (``sending/sender.py``).

Its keys used to be seven flat keys of ``DJANGO_REDIS_METRICS`` (``SEND_DELAY``,
``FAIL_OPEN_TIMEOUT``...). A site that still sets one keeps it working: a flat key is read when
``SENDER`` does not set its key, and the system check ``W002`` asks to move it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.core.signals import setting_changed
from django.dispatch import receiver

from .setting import PACKAGE, SETTING_NAME, Setting


@dataclass(frozen=True)
class SenderKey:
    """One key of ``SENDER``: its default, the flat key it replaces, its check and doc line."""

    name: str
    default: Any
    legacy: str | None
    check: str
    validator: str
    doc: str
    shown: str | None = None


SENDER_KEYS: tuple[SenderKey, ...] = (
    SenderKey(
        "TIMEOUT",
        0.25,
        "FAIL_OPEN_TIMEOUT",
        "E044",
        f"{PACKAGE}.core.validation.positive_seconds",
        "Seconds the background sender waits for Redis (connect or reply) before it keeps "
        "the batch and tries again later. Requests never wait on it.",
    ),
    SenderKey(
        "DELAY",
        0.05,
        "SEND_DELAY",
        "E045",
        f"{PACKAGE}.core.validation.non_negative_seconds",
        "Seconds the background sender waits after the first queued request write, to merge "
        "more into the same round trip; `flush()` cuts it short, `0` turns the wait off.",
    ),
    SenderKey(
        "BATCH_SIZE",
        500,
        "SEND_BATCH_SIZE",
        "E046",
        f"{PACKAGE}.core.validation.positive_count",
        "Most requests' writes merged into one round trip; when this many are waiting they "
        "are sent without waiting for `DELAY`. A backlog left by an outage drains in batches "
        "of this size.",
    ),
    SenderKey(
        "QUEUE_SIZE",
        50_000,
        "SEND_QUEUE_SIZE",
        "E046",
        f"{PACKAGE}.core.validation.positive_count",
        "Most requests' writes kept per process while they wait to be stored (queued, or held "
        "while Redis is away). Beyond it (or beyond `QUEUE_BYTES`) new writes are dropped, "
        "counted and reported once per outage. 50,000 requests is nearly 3 minutes at 300 "
        "requests/s.",
    ),
    SenderKey(
        "QUEUE_BYTES",
        32 * 1024 * 1024,
        "SEND_QUEUE_BYTES",
        "E047",
        f"{PACKAGE}.core.validation.positive_count",
        "Most estimated bytes of those writes per process. Measured: about 6.9 MB per 10,000 "
        "requests counted by the middleware (2 counters), 8.3 MB with the user marked, 12.2 MB "
        "with an event recorded by a decorator.",
        shown="`33554432` (32 MiB)",
    ),
    SenderKey(
        "RETRY_DELAY",
        0.1,
        "SEND_RETRY_DELAY",
        "E048",
        f"{PACKAGE}.core.validation.positive_seconds",
        "Seconds before the sender tries again after Redis failed; the wait doubles with each "
        "failure in a row, up to `RETRY_MAX_DELAY`. On Redis Cluster, also how often a waiting "
        "sender asks one node who owns its batch's slots, so that a promoted replica ends the "
        "wait at once.",
    ),
    SenderKey(
        "RETRY_MAX_DELAY",
        0.5,
        "SEND_RETRY_MAX_DELAY",
        "E048",
        f"{PACKAGE}.core.validation.positive_seconds",
        "The longest wait between two attempts while Redis fails, so recording resumes at most "
        "this long after Redis answers again. Each attempt costs one connection attempt per "
        "process.",
    ),
    SenderKey(
        "REPLICAS",
        0,
        None,
        "E093",
        f"{PACKAGE}.core.validation.replica_count",
        "Replicas that must hold a batch before the sender counts it stored (Redis `WAIT`, "
        "after one `SET` of `<PREFIX>:sender:replicated`, in one more round trip per batch). "
        "A batch they have not acknowledged within half of `TIMEOUT` is kept and sent again "
        "(exactly once: the sender's writes are idempotent), so no write acknowledged by a "
        "master is lost when a failover promotes a replica that had not received it. `0` "
        "turns it off. Single node and Sentinel only (see "
        "[Redis Sentinel](operations.md#redis-sentinel)).",
    ),
)
#: The flat keys ``SENDER`` replaces, and the key of ``SENDER`` each became.
LEGACY_SENDER_KEYS: dict[str, str] = {
    key.legacy: key.name for key in SENDER_KEYS if key.legacy is not None
}


@dataclass(frozen=True, slots=True)
class SenderOptions:
    """The sender's tuning, typed (see :data:`SENDER_KEYS` for what each means)."""

    timeout: float
    delay: float
    batch_size: int
    queue_size: int
    queue_bytes: int
    retry_delay: float
    retry_max_delay: float
    replicas: int

    @classmethod
    def of(cls, value: Mapping[str, Any]) -> SenderOptions:
        return cls(
            float(value["TIMEOUT"]),
            float(value["DELAY"]),
            int(value["BATCH_SIZE"]),
            int(value["QUEUE_SIZE"]),
            int(value["QUEUE_BYTES"]),
            float(value["RETRY_DELAY"]),
            float(value["RETRY_MAX_DELAY"]),
            int(value["REPLICAS"]),
        )


#: The last setting read and its typed ``SENDER``: every request reads it, so it is worked out
#: once per setting object, and again when Django's ``setting_changed`` signal says it changed.
_last: list[tuple[Mapping[str, Any], SenderOptions]] = []


class SenderSetting(Setting[SenderOptions]):
    """``SENDER``: each key from the dict if it sets it, else from its old flat key if the
    site still sets that, else its default."""

    def typed(self, raw: Mapping[str, Any]) -> SenderOptions:
        last = _last
        if last and last[0][0] is raw:
            return last[0][1]
        options = self.read(self.value(raw))
        _last[:] = [(raw, options)]
        return options

    def value(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        given = raw.get(self.name)
        given = given if isinstance(given, Mapping) else {}
        return {
            key.name: given[key.name]
            if key.name in given
            else raw.get(key.legacy, key.default)
            if key.legacy is not None
            else key.default
            for key in SENDER_KEYS
        }


@receiver(setting_changed)
def _forget_last(*, setting: str, **kwargs: Any) -> None:
    if setting == SETTING_NAME:
        _last.clear()
