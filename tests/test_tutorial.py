"""docs/tutorial.md, followed as a newcomer would: a fresh ``startproject`` site made of the
page's files (only the Redis URL changed to the test's private server) passes ``check``,
migrates, and its pages write the metrics the page says they write."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TUTORIAL = ROOT / "docs" / "tutorial.md"
#: A python block that is a file: its first line names it, "(appended)" to add to its end.
FILE_BLOCK = re.compile(
    r"```python\n# (?P<path>[\w/.]+\.py)(?P<appended> \(appended\))?\n(?P<body>.*?)```", re.S
)
PAGE_URL = "redis://localhost:6379/0"

VISIT = """
import json
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django_redis_metrics import Counter, EventSeries, UniqueBitmap, flush

# A startproject site in DEBUG accepts localhost (the test runner adds "testserver").
visitor, buyer = Client(HTTP_HOST="localhost"), Client(HTTP_HOST="localhost")
for _ in range(3):
    visitor.get("/")
visitor.post("/signup/")
buyer.force_login(User.objects.create_user("ann"))
buyer.post("/buy/mug/", {"country": "fr"})
buyer.get("/admin/")
flush()
hits = Counter("hits", labels=("view", "status"))
print(json.dumps({
    "home": sum(hits.labels(view="home", status=s).total(86400) for s in ("2xx", "4xx", "5xx")),
    "hits": Counter("hits").total(86400),
    "signups": Counter("signups").total(86400),
    "ok": hits.labels(view="home", status="2xx").total(86400),
    "orders": EventSeries("orders").count_by("product", 0, 2e9),
    "countries": EventSeries("orders").count_by("country", 0, 2e9),
    "buyers": UniqueBitmap("buyers").count("day"),
    "active": UniqueBitmap("active_users").count("day"),
    "prometheus": reverse("django_redis_metrics:prometheus"),
}))
"""


def run(cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    result = subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_the_tutorial_makes_a_working_site(tmp_path: Path, redis_server: Any) -> None:
    page = TUTORIAL.read_text("utf-8")
    blocks = list(FILE_BLOCK.finditer(page))
    assert [b["path"] for b in blocks] == [
        "mysite/settings.py",
        "shop/metrics.py",
        "shop/views.py",
        "mysite/urls.py",
    ]
    assert PAGE_URL in page
    run(tmp_path, "-m", "django", "startproject", "mysite", ".")
    run(tmp_path, "manage.py", "startapp", "shop")
    for block in blocks:
        path = tmp_path / block["path"]
        body = block["body"].replace(PAGE_URL, redis_server.url.rsplit("/", 1)[0] + "/9")
        if block["appended"]:
            body = path.read_text("utf-8") + "\n" + body
        path.write_text(body, "utf-8")
    checked = run(tmp_path, "manage.py", "check")
    assert "System check identified no issues" in checked
    run(tmp_path, "manage.py", "migrate", "--verbosity", "0")
    found = json.loads(run(tmp_path, "manage.py", "shell", "-v", "0", "-c", VISIT).splitlines()[-1])
    assert found["home"] == 3 == found["ok"]
    assert found["hits"] == 5  # 3 home, signup and buy: the admin is not counted
    assert found["signups"] == 1
    assert found["orders"] == {"mug": 1} and found["countries"] == {"FR": 1}
    assert found["buyers"] == 1 == found["active"]
    assert found["prometheus"] == "/metrics/"
