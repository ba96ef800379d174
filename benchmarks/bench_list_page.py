"""The admin's counters list page at 1,000 / 10,000 / 100,000 counters, against the raw floor
measured in the same run on the same server: a ``ZRANGEBYLEX ... LIMIT`` page of names plus a
pipelined read of each shown counter's total (``HGET`` of its lifetime total).

    python benchmarks/bench_list_page.py [--sizes 1000,10000,100000] [--repeats 5]

Each figure is the fastest of ``--repeats`` renders of the whole page (the view, its Redis reads
and its template) for a staff user, first page and a page halfway down the list, then the
searches ``?q=^api.view0005`` (names starting with it: a page's cost) and ``?q=view0005``
(names holding it: every name read). "before" is the page halfway down as it was built until
now, rendered the same way: every name read and checked (``objects.names()``), paged in
Python, then ``many()``.
"""

from __future__ import annotations

import argparse
from typing import Any

from common import best_of, configure_admin_site, start
from django.conf import settings

T0 = 1_700_000_000


def populate(first: int, last: int) -> None:
    from django_redis_metrics import Batch, Counter

    with Batch() as batch:
        for index in range(first, last):
            Counter(f"api.view{index:06d}", precisions=[60, 3600, 86400]).incr(
                index % 7 + 1, when=T0, batch=batch
            )


def request(query: str) -> Any:
    from django.contrib.auth.models import User
    from django.test import RequestFactory

    made = RequestFactory().get("/admin/django_redis_metrics/countermetric/" + query)
    made.user = User(username="bench", is_staff=True, is_superuser=True, is_active=True)
    return made


def render_page(query: str) -> int:
    from django.contrib import admin

    from django_redis_metrics.models import CounterMetric

    model_admin = admin.site._registry[CounterMetric]
    response = model_admin.index_page(request(query), model_admin.context(request(query)))
    response.render()
    return len(response.context_data["rows"])


def before_page(page: int) -> int:
    """The page as it was built before querysets, rendered the same way: every name read and
    checked (``objects.names()``), searched and paged in Python, then ``many()``."""
    from django.contrib import admin
    from django.core.paginator import Paginator
    from django.template.response import TemplateResponse

    from django_redis_metrics import Counter
    from django_redis_metrics.admin.common import current_time
    from django_redis_metrics.admin.counters import TOTALS, counter_rows
    from django_redis_metrics.models import CounterMetric

    made = request(f"?p={page}")
    context = admin.site._registry[CounterMetric].context(made)
    names = Counter.objects.names()
    shown = Paginator(names, 100).get_page(page)
    rows = counter_rows(Counter.objects.many(shown.object_list), current_time())
    context.update(
        title="Counters",
        rows=rows,
        totals_labels=[text for text, _ in TOTALS],
        page=shown,
        query="",
        count=len(names),
        noun="counter",
    )
    response = TemplateResponse(made, "django_redis_metrics/admin/counter_list.html", context)
    response.render()
    return len(rows)


def floor(offset: int) -> int:
    from django_redis_metrics import get_redis_connection
    from django_redis_metrics.core.keys import catalogue_key, metric_key

    client = get_redis_connection()
    names = client.zrangebylex(catalogue_key("counter"), "-", "+", start=offset, num=100)
    pipe = client.pipeline(transaction=False)
    for name in names:
        pipe.hget(metric_key("counter", name.decode(), "meta"), "t")
    return len(pipe.execute())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()
    configure_admin_site(
        ROOT_URLCONF="tests.integration.urls",
        TEMPLATES=[
            {
                "BACKEND": "django.template.backends.django.DjangoTemplates",
                "APP_DIRS": True,
                "OPTIONS": {
                    "context_processors": [
                        "django.template.context_processors.request",
                        "django.contrib.auth.context_processors.auth",
                        "django.contrib.messages.context_processors.messages",
                    ]
                },
            }
        ],
    )
    server = start("bench-list")
    settings.DJANGO_REDIS_METRICS = {**settings.DJANGO_REDIS_METRICS, "ADMIN_PAGE_SIZE": 100}
    try:
        made = 0
        print("counters list page, 100 rows a page, fastest of", options.repeats, "(ms)")
        print(
            f"{'counters':>9} {'floor':>7} {'page 1':>7} {'deep':>7} {'^prefix':>8} "
            f"{'contains':>9} {'before':>8} {'page1/floor':>12}"
        )
        for size in (int(s) for s in options.sizes.split(",")):
            populate(made, size)
            made = size
            deep = size // 200  # a page halfway down the list
            assert render_page("") == 100
            floor_s = best_of(options.repeats, lambda: floor(0))
            first = best_of(options.repeats, lambda: render_page(""))
            middle = best_of(options.repeats, lambda d=deep: render_page(f"?p={d}"))  # type: ignore[misc]
            prefix = best_of(options.repeats, lambda: render_page("?q=%5Eapi.view0005"))
            contains = best_of(options.repeats, lambda: render_page("?q=view0005"))
            before = best_of(min(options.repeats, 3), lambda d=deep: before_page(d))  # type: ignore[misc]
            print(
                f"{size:>9} {floor_s * 1000:>7.2f} {first * 1000:>7.2f} {middle * 1000:>7.2f} "
                f"{prefix * 1000:>8.2f} {contains * 1000:>9.2f} {before * 1000:>8.1f} "
                f"{first / floor_s:>12.1f}"
            )
    finally:
        server.cleanup()


if __name__ == "__main__":
    main()
