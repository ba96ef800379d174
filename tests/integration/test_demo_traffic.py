"""The demo's traffic: live visitors at the generated history's rates, ``demo`` idempotent,
and generated events carrying the fields live ones have."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .test_demo import manage


def shell(tmp_path: Path, redis_url: str, script: str) -> dict[str, Any]:
    """Run ``script`` in the demo's ``manage.py shell``; it prints one JSON object."""
    output = manage(tmp_path, redis_url, "shell", "--verbosity", "0", "-c", script)
    result: dict[str, Any] = json.loads(output.strip().splitlines()[-1])
    return result


RATES = """
import json, random
from datetime import datetime
from zoneinfo import ZoneInfo
from demo import traffic
rng = random.Random(7)
now = datetime(2026, 11, 23, 15, tzinfo=ZoneInfo("Europe/Paris")).timestamp()  # the peak
delays, views = [], {}
for _ in range(20000):
    delay, view = traffic.next_visit(rng, now)
    delays.append(delay)
    views[view] = views.get(view, 0) + 1
history = {view: len(traffic.arrivals(rng, now - 1800, now + 1800, rate))
           for view, rate in traffic.VIEW_RATES.items()}
print(json.dumps({"live": 60 * len(delays) / sum(delays), "history": sum(history.values()) / 60,
                  "views": views, "history_views": history}))
"""


def test_live_visitors_browse_at_the_generated_historys_rate(
    tmp_path: Path, redis_server: Any
) -> None:
    """It was one request every 0.4 s (150 a minute) against ~17 a minute of history: every
    chart a flat line with a spike at its end."""
    found = shell(tmp_path, redis_server.url, RATES)
    assert 0.9 < found["live"] / found["history"] < 1.1, found
    assert 14 < found["live"] < 20  # requests per minute at the peak
    live_share = found["views"]["product"] / sum(found["views"].values())
    history_share = found["history_views"]["product"] / sum(found["history_views"].values())
    assert abs(live_share - history_share) < 0.05, found


SNAPSHOT = """
import json
from datetime import datetime
from django_redis_metrics import Counter, EventSeries, Statistic, UniqueBitmap
from demo import traffic
until = traffic.written_until()
hits = Counter("hits", labels=("view", "status"))
statuses = [hits.labels(view="product", status=c).total(86400) for c in ("2xx", "4xx", "5xx")]
print(json.dumps({
    "timed": Statistic("latency", labels=("view",)).labels(view="product").totals()["count"],
    "product": sum(statuses),
    "statuses": statuses,
    "until": until,
    "hits": [[s, c] for s, c in Counter("hits").series(3600) if s + 3600 <= until],
    "orders": EventSeries("orders").count(0, until),
    "downloads": EventSeries("downloads").count(0, until),
    "weeks": [UniqueBitmap("active_users").count("week", until - 7 * 86400 * k) for k in (1, 2, 3)],
}))
"""


def test_running_demo_again_does_not_double_the_history(tmp_path: Path, redis_server: Any) -> None:
    url = redis_server.url.rsplit("/", 1)[0] + "/7"  # a database of its own
    manage(tmp_path, url, "demo", "--no-serve")
    first = shell(tmp_path, url, SNAPSHOT)
    assert first["orders"] > 100 and sum(c for _, c in first["hits"]) > 1000
    # the Views page's history: every generated hit has a status class and a response time
    assert first["timed"] == first["product"] == sum(first["statuses"]) > 100
    assert first["statuses"][1] > 0  # some product pages answered 4xx
    output = manage(tmp_path, url, "demo", "--no-serve")
    second = shell(tmp_path, url, SNAPSHOT)
    assert second["until"] >= first["until"]
    done = {start: count for start, count in second["hits"] if start + 3600 <= first["until"]}
    assert done == {start: count for start, count in first["hits"]}
    for key in ("orders", "downloads"):
        assert shell(tmp_path, url, COUNT_BEFORE.format(key=key, until=first["until"])) == {
            "count": first[key]
        }
    assert second["weeks"][1:] == first["weeks"][1:]  # past weeks: the same users
    assert "hits:" in output
    assert "history: kept from an earlier run (written up to " in output  # not just zeros


COUNT_BEFORE = """
import json
from django_redis_metrics import EventSeries
print(json.dumps({{"count": EventSeries("{key}").count(0, {until})}}))
"""

FIELDS = """
import json, time
from django.contrib.auth.models import User
from django.test import Client
from django_redis_metrics import EventSeries, flush
before = time.time()
user, _ = User.objects.get_or_create(username="fields-visitor")
signed_in, anonymous = Client(), Client()
signed_in.force_login(user)
signed_in.post("/products/mug/buy/", {"country": "FR"})
anonymous.post("/products/poster/buy/", {"country": "DE"})
anonymous.get("/downloads/manual.pdf/")
flush()
def shapes(name, start, end):
    return sorted({tuple(sorted(event)) for event in EventSeries(name).between(start, end)})
print(json.dumps({
    "live_orders": shapes("orders", before, time.time()),
    "generated_orders": shapes("orders", 0, before),
    "live_downloads": shapes("downloads", before, time.time()),
    "generated_downloads": shapes("downloads", 0, before),
}))
"""


def test_generated_events_carry_the_fields_live_ones_have(
    tmp_path: Path, redis_server: Any
) -> None:
    url = redis_server.url.rsplit("/", 1)[0] + "/8"
    manage(tmp_path, url, "demo", "--no-serve")
    found = shell(tmp_path, url, FIELDS)
    assert found["live_orders"] == [
        ["country", "id", "product", "timestamp", "user", "view"],
        ["country", "id", "product", "timestamp", "view"],  # an anonymous buyer
    ]
    assert found["generated_orders"] == found["live_orders"]
    assert found["live_downloads"] == [["file", "id", "timestamp", "view"]]
    assert found["generated_downloads"] == found["live_downloads"]
