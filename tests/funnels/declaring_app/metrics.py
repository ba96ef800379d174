"""Declared at start-up by the app's ``ready()``, as a site's ``metrics.py`` is."""

from django_redis_metrics import EventSeries, Funnel, UniqueBitmap

visited = UniqueBitmap("declared.visited")
bought = UniqueBitmap("declared.bought")
shop = EventSeries("declared.shop", index=["type"])

checkout = Funnel(steps=[visited, bought])
purchase = Funnel.ordered(shop, [{"type": "view"}, {"type": "buy"}], name="purchase in a day")
_private = Funnel(steps=[visited])
