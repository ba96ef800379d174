"""The webhook: POSTed as JSON to a local server that fails first, retried by a later pass
after its backoff, given up after its attempts; a hanging one does not hold the pass."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from django_redis_metrics import Alert, Counter
from django_redis_metrics.alerts import evaluate
from django_redis_metrics.alerts.delivery import waiting_steps
from django_redis_metrics.alerts.state import statuses_steps
from django_redis_metrics.core.drive import drive


class Hook:
    """A webhook on 127.0.0.1 (a free port): answers each request with the next status of
    ``answers`` (then 200), or hangs until the test ends while ``hang`` is set."""

    def __init__(self) -> None:
        self.answers: list[int] = []
        self.bodies: list[dict[str, Any]] = []
        self.hang = threading.Event()
        self.release = threading.Event()
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                hook.bodies.append(body)
                if hook.hang.is_set():
                    hook.release.wait(30)
                    return
                self.send_response(hook.answers.pop(0) if hook.answers else 200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hook() -> Iterator[Hook]:
    found = Hook()
    yield found
    found.close()


@pytest.fixture
def breached(backend: Any) -> tuple[Alert, float]:
    """An alert over its threshold, on the single node and on the cluster."""
    now = time.time()
    hits = Counter("hits", precisions=[60], samples=10)
    hits.incr(20, when=now - 5)
    return Alert("spike", hits, above=10, over=120), now


def test_a_failing_webhook_is_retried_by_a_later_pass(
    hook: Hook, breached: tuple[Alert, float], metrics_settings: Any
) -> None:
    alert, now = breached
    metrics_settings(ALERTS={"WEBHOOK_URL": hook.url, "WEBHOOK_BACKOFF": 60})
    hook.answers = [500]
    report = evaluate(now, alerts=[alert])
    assert [t.state for t in report.transitions] == ["firing"]
    assert [(o.attempt, o.delivered) for o in report.deliveries] == [(1, False)]
    assert [(d["attempt"], d["due"]) for d in drive(waiting_steps(alert))] == [(1, now + 60)]
    assert evaluate(now + 30, alerts=[alert]).deliveries == []  # not due yet
    report = evaluate(now + 60, alerts=[alert])
    assert [(o.attempt, o.delivered) for o in report.deliveries] == [(2, True)]
    assert drive(waiting_steps(alert)) == []
    assert [(b["alert"], b["state"], b["attempt"], b["value"]) for b in hook.bodies] == [
        ("spike", "firing", 1, 20),
        ("spike", "firing", 2, 20),
    ]
    assert hook.bodies[0]["threshold"] == "> 10" and hook.bodies[0]["id"] == 1
    assert drive(statuses_steps([alert]))[0].delivered == 1


def test_a_webhook_is_given_up_after_its_attempts(
    hook: Hook, breached: tuple[Alert, float], metrics_settings: Any
) -> None:
    alert, now = breached
    metrics_settings(ALERTS={"WEBHOOK_URL": hook.url, "WEBHOOK_BACKOFF": 10, "WEBHOOK_ATTEMPTS": 3})
    hook.answers = [503] * 10
    evaluate(now, alerts=[alert])  # attempt 1; next due after 10 s, then 20 s
    evaluate(now + 10, alerts=[alert])
    assert [d["due"] for d in drive(waiting_steps(alert))] == [now + 30]
    evaluate(now + 30, alerts=[alert])
    assert len(hook.bodies) == 3 and drive(waiting_steps(alert)) == []
    assert drive(statuses_steps([alert]))[0].gave_up == 1


def test_a_hanging_webhook_does_not_hold_the_evaluation(
    hook: Hook, breached: tuple[Alert, float], metrics_settings: Any
) -> None:
    alert, now = breached
    metrics_settings(ALERTS={"WEBHOOK_URL": hook.url, "WEBHOOK_TIMEOUT": 0.2})
    hook.hang.set()
    report = evaluate(now, alerts=[alert])  # returns while the server still hangs
    assert not hook.release.is_set() and len(hook.bodies) == 1
    assert [t.state for t in report.transitions] == ["firing"]
    assert [(o.delivered, "timed out" in o.error) for o in report.deliveries] == [(False, True)]
    assert [d["attempt"] for d in drive(waiting_steps(alert))] == [1]


def test_deliveries_past_the_pass_budget_wait_for_the_next_pass(
    hook: Hook, single: Any, metrics_settings: Any
) -> None:
    now = time.time()
    hits = Counter("hits", precisions=[60], samples=10)
    hits.incr(20, when=now - 5)
    alerts = [Alert(f"spike {n}", hits, above=10, over=120) for n in range(3)]
    metrics_settings(ALERTS={"WEBHOOK_URL": hook.url, "WEBHOOK_TIMEOUT": 0.2, "PASS_SECONDS": 0.1})
    hook.hang.set()
    report = evaluate(now, alerts=alerts)
    assert len(report.deliveries) == 1  # the first took the whole budget
    waiting = [d for a in alerts for d in drive(waiting_steps(a))]
    assert sorted(d["attempt"] for d in waiting) == [0, 0, 1]
    assert sorted(d["due"] for d in waiting)[:2] == [now, now]  # due at once, untried
