"""Two evaluators racing (real threads, the real server): each alert crossing its threshold
fires exactly once, and its webhook is queued once."""

from __future__ import annotations

import threading
import time
from typing import Any

from django_redis_metrics import Alert, Counter
from django_redis_metrics.alerts import evaluate
from django_redis_metrics.alerts.delivery import waiting_steps
from django_redis_metrics.core.drive import drive

ALERTS = 40
ROUNDS = 5


def test_two_evaluators_fire_each_alert_exactly_once(
    backend: Any, received: Any, metrics_settings: Any
) -> None:
    metrics_settings(ALERTS={"WEBHOOK_URL": "http://127.0.0.1:9/never-sent"})
    now = time.time()
    hits = Counter("hits", precisions=[60], samples=10, labels=("view",))
    alerts = []
    for index in range(ALERTS):
        series = hits.labels(view=f"v{index}")
        series.incr(10, when=now - 5)
        alerts.append(Alert(f"spike {index}", series, above=5, over=120, for_=30))
    start = threading.Barrier(2)
    errors: list[BaseException] = []
    states: list[list[str]] = [[], []]

    def evaluator(number: int) -> None:
        try:
            for step in range(ROUNDS):  # pending at +0, firing from +30 on
                start.wait()
                report = evaluate(now + step * 15, alerts=alerts, webhooks=False)
                states[number] += [t.state for t in report.transitions]
        except BaseException as exc:
            errors.append(exc)
            start.abort()

    threads = [threading.Thread(target=evaluator, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    fired = sorted(kw["alert"].name for kind, kw in received if kind == "fired")
    assert fired == sorted(alert.name for alert in alerts)  # each once, by one evaluator
    assert sorted(states[0] + states[1]) == ["firing"] * ALERTS + ["pending"] * ALERTS
    for alert in alerts:
        assert [d["state"] for d in drive(waiting_steps(alert))] == ["firing"]
