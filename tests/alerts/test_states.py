"""An alert's states: normal -> pending -> firing -> resolved -> normal, moved by evaluations at
explicit times (``now=``), kept in Redis, with the signals, the history and mail_admins."""

from __future__ import annotations

import time
from typing import Any

import django
import pytest
from django.core import mail

from django_redis_metrics import Alert, Counter, Gauge, Statistic
from django_redis_metrics.alerts import evaluate, register
from django_redis_metrics.alerts.state import statuses_steps
from django_redis_metrics.core.drive import drive


def status(alert: Alert) -> Any:
    return drive(statuses_steps([alert], history=50))[0]


def test_a_counter_alert_honours_for_fires_once_and_resolves(backend: Any, received: Any) -> None:
    now = time.time()
    hits = Counter("hits", precisions=[60], samples=10, labels=("view", "status"))
    errors = hits.labels(view="home", status="5xx")
    alert = register(Alert("5xx spike", errors, above=10, over=300, for_=120))
    errors.incr(11, when=now - 10)
    hits.labels(view="home", status="2xx").incr(100, when=now - 10)  # another series

    assert [t.state for t in evaluate(now).transitions] == ["pending"]
    assert evaluate(now + 60).transitions == [] and status(alert).state == "pending"
    assert received == []  # pending notifies nobody
    assert [t.state for t in evaluate(now + 120).transitions] == ["firing"]
    assert evaluate(now + 150).transitions == []  # still firing: no second signal
    assert [(kind, kw["value"]) for kind, kw in received] == [("fired", 11)]
    assert received[0][1]["alert"] is alert and received[0][1]["previous"] == "pending"

    later = now + 1000  # the window no longer holds the errors
    assert [t.state for t in evaluate(later).transitions] == ["resolved"]
    assert [kind for kind, _ in received] == ["fired", "resolved"]
    assert [t.state for t in evaluate(later + 60).transitions] == ["normal"]
    assert evaluate(now + 200).transitions == []  # an evaluation older than the last: ignored
    found = status(alert)
    assert (found.state, found.value, found.evaluated) == ("normal", 0, later + 60)
    assert [(h["from"], h["to"]) for h in found.history] == [
        ("resolved", "normal"),
        ("firing", "resolved"),
        ("pending", "firing"),
        ("normal", "pending"),
    ]


def test_a_condition_that_stops_holding_while_pending_never_fires(
    single: Any, received: Any
) -> None:
    now = time.time()
    signups = Counter("signups", precisions=[60], samples=10)
    alert = Alert("no signups", signups, below=1, over=120, for_=300)
    assert [t.state for t in evaluate(now, alerts=[alert]).transitions] == ["pending"]
    signups.incr(when=now)
    assert [t.state for t in evaluate(now + 30, alerts=[alert]).transitions] == ["normal"]
    assert received == []


def test_a_statistic_percentile_and_a_gauge(single: Any, received: Any) -> None:
    now = time.time()
    latency = Statistic("latency", precisions=[60], samples=10, labels=("view",))
    for value in [10] * 90 + [900] * 10:
        latency.labels(view="home").record(value, when=now - 5)
    slow = Alert("slow p95", latency, measure="p95", above=500, over=300)
    fast_mean = Alert("mean", latency.labels(view="home"), measure="mean", above=500, over=300)
    queue = Gauge("queue", precisions=[60], samples=10)
    queue.set(42, when=now - 5)
    deep = Alert("deep queue", queue, above=40, over=60)
    report = evaluate(now, alerts=[slow, fast_mean, deep])
    assert sorted(t.alert.name for t in report.transitions) == ["deep queue", "slow p95"]
    assert status(slow).value == pytest.approx(900, rel=0.05)
    assert status(fast_mean).value == pytest.approx(99)
    # A gauge not set within its window has no value: the alert resolves.
    assert [t.state for t in evaluate(now + 120, alerts=[deep]).transitions] == ["resolved"]
    assert status(deep).value is None


def test_a_queryset_alert_sums_the_selected_series(single: Any) -> None:
    now = time.time()
    hits = Counter("hits", precisions=[60], samples=10, labels=("view", "status"))
    hits.labels(view="home", status="5xx").incr(4, when=now - 5)
    hits.labels(view="cart", status="5xx").incr(4, when=now - 5)
    hits.labels(view="cart", status="2xx").incr(50, when=now - 5)
    errors = Alert(
        "all 5xx", Counter.objects.filter(name="hits", labels__status="5xx"), above=7, over=60
    )
    assert [t.state for t in evaluate(now, alerts=[errors]).transitions] == ["firing"]
    assert status(errors).value == 8
    assert errors.describe() == "counters where name=hits, status=5xx over 60 s > 7"


def test_mail_admins_when_the_setting_asks(
    single: Any, metrics_settings: Any, settings: Any
) -> None:
    # Django 6.0 takes addresses and deprecates (name, address) pairs, which 5.2 requires.
    settings.ADMINS = (
        ["ops@example.com"] if django.VERSION >= (6, 0) else [("Ops", "ops@example.com")]
    )
    now = time.time()
    signups = Counter("signups", precisions=[60], samples=10)
    alert = Alert("no signups", signups, below=1, over=60)
    evaluate(now, alerts=[alert])
    assert mail.outbox == []  # not asked
    signups.incr(when=now)
    metrics_settings(ALERTS={"MAIL_ADMINS": True})
    evaluate(now + 1, alerts=[alert])
    assert [m.subject for m in mail.outbox] == ["[Django] Alert resolved: no signups"]
    assert "signups over 60 s < 1" in mail.outbox[0].body


def test_a_failing_signal_receiver_is_logged_not_raised(
    single: Any, received: Any, caplog: Any
) -> None:
    from django_redis_metrics.signals import alert_fired

    def broken(sender: Any, **kwargs: Any) -> None:
        raise RuntimeError("pager down")

    alert_fired.connect(broken, weak=False)
    try:
        now = time.time()
        hits = Counter("hits", precisions=[60], samples=10)
        hits.incr(5, when=now)
        report = evaluate(now, alerts=[Alert("spike", hits, above=1, over=60)])
    finally:
        alert_fired.disconnect(broken)
    assert [t.state for t in report.transitions] == ["firing"]
    assert [kind for kind, _ in received] == ["fired"]  # the other receivers still ran
    assert "pager down" in caplog.text


def test_an_unreadable_source_is_reported_and_the_others_evaluated(single: Any) -> None:
    now = time.time()
    hits = Counter("hits", precisions=[60], samples=10)
    hits.incr(5, when=now)
    fine = Alert("fine", hits, above=1, over=60)
    broken = Alert("broken", hits, above=1, over=60)
    broken.over = 10**6  # past every precision's samples, as a changed setting would make it
    report = evaluate(now, alerts=[fine, broken])
    assert [t.alert.name for t in report.transitions] == ["fine"]
    assert "covers over=1000000" in report.errors["broken"]


def test_a_pass_costs_two_round_trips_however_many_alerts(single: Any, round_trips: Any) -> None:
    now = time.time()
    hits = Counter("hits", precisions=[5, 60], samples=120, labels=("view",))
    alerts = []
    for index in range(30):
        series = hits.labels(view=f"v{index}")
        series.incr(index, when=now - 1)
        alerts.append(Alert(f"a{index}", series, above=10, over=300))
    evaluate(now - 5, alerts=alerts)  # the scripts loaded
    assert round_trips(lambda: evaluate(now, alerts=alerts)) == 2  # the reads; the scripts
    whole = Alert("whole", hits, above=10, over=300)  # its series listed first
    assert round_trips(lambda: evaluate(now, alerts=[*alerts, whole])) == 3


def test_the_window_holds_at_least_over_seconds_wherever_the_evaluation_falls(
    single: Any,
) -> None:
    hits = Counter("hits", precisions=[60], samples=20)
    base = int(time.time()) // 60 * 60 - 600  # a minute's start, ten minutes ago
    hits.incr(when=base)
    alert = Alert("any", hits, above=0, over=120)
    for offset in range(0, 60, 7):  # anywhere in the evaluation's slice
        assert drive(alert.value_steps(base + 120 + offset)) == 1  # exactly `over` back: in
    assert drive(alert.value_steps(base + 240)) == 0  # over + a whole slice back: out
