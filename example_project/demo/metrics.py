"""The demo's metrics, declared once; ``django_redis_metrics`` imports every app's
``metrics.py`` at start-up, as the admin does with ``admin.py``."""

from __future__ import annotations

from django_redis_metrics import (
    Alert,
    Counter,
    EventSeries,
    Funnel,
    Gauge,
    Statistic,
    UniqueBitmap,
    UniqueEstimate,
)

#: Counted by ``@count`` on the sign-up view.
signups = Counter("signups")
#: One event per order, indexed by product and country (``@track_event`` on the buy view).
orders = EventSeries("orders", index=["product", "country"])
#: One event per download, indexed by file.
downloads = EventSeries("downloads", index=["file"])
#: Every signed-in visitor, marked by the middleware (``ACTIVE_USERS``, the default name).
active_users = UniqueBitmap("active_users")
#: Customers, marked by ``@mark`` on the buy view: signed-in visitors, so each buyer of a day
#: is one of that day's active users too.
buyers = UniqueBitmap("buyers")
#: Of the day's active users, those who bought: its admin page (Metrics > Funnels) shows the
#: conversion per step and per day.
checkout = Funnel(steps=[active_users, buyers])
#: Every visitor, signed in or not (by user or session), as a HyperLogLog estimate.
visitors = UniqueEstimate("visitors")
#: Orders placed in the last two hours, waiting to be shipped: set every minute.
orders_pending = Gauge("orders_pending")

# Alerts (docs/alerts.md), evaluated by ``manage.py check_alerts`` or ``clean_metrics --loop``:
#: More than 20 server errors in 5 minutes, on any view (a queryset of the middleware's series),
#: for a minute.
server_errors = Alert(
    "5xx spike",
    Counter.objects.filter(name="hits", labels__status="5xx"),
    above=20,
    over=300,
    for_=60,
)
#: The slowest 5 % of the product page's answers over 800 ms for 5 minutes.
slow_product = Alert(
    "slow product page",
    Statistic("latency", labels=("view",)).labels(view="product"),
    measure="p95",
    above=800,
    over=300,
    for_=300,
)
#: No sign-up in the last hour.
no_signups = Alert("no signups", signups, below=1, over=3600)
#: More than 50 orders waiting to be shipped.
backlog = Alert("orders backlog", orders_pending, above=50, over=600)

#: What the shop sells, and where its customers are (used by the views and generate_traffic).
PRODUCTS = ("mug", "t-shirt", "sticker", "poster")
COUNTRIES = ("FR", "DE", "US", "JP", "BR")
FILES = ("manual.pdf", "price-list.csv", "logo.svg")
#: How long an order waits to be shipped (``orders_pending`` counts those placed since).
SHIPPING_DELAY = 2 * 3600
