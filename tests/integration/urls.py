"""URLs for the Django integration tests: the admin, and a few views to count."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from . import views

urlpatterns = [
    path("admin/", admin.site.urls),
    path("metrics/", include("django_redis_metrics.urls")),
    path("sync/", views.sync_view, name="sync"),
    path("async/", views.async_view, name="async"),
    path("class/", views.ClassView.as_view(), name="class"),
    path("health/", views.health, name="health"),
    path("articles/<slug:slug>/", views.article, name="article"),
    path("unnamed/", views.sync_view),
    path("signup/", views.signup, name="signup"),
    path("upload/", views.upload, name="upload"),
    path("checkout/", views.Checkout.as_view(), name="checkout"),
    path("async-checkout/", views.AsyncCheckout.as_view(), name="async-checkout"),
    path("download/<str:file>/", views.download, name="download"),
    path("search/", views.search, name="search"),
    path("login-form/", views.login_form, name="login-form"),
    path("buy/", views.buy, name="buy"),
    path("async-buy/", views.async_buy, name="async-buy"),
    path("click/", views.click, name="click"),
    path("subscribe/", views.Subscribe.as_view(), name="subscribe"),
    path("declared/", views.declared, name="declared"),
    path("deferred/", views.deferred, name="deferred"),
    path("missing/", views.missing, name="missing"),
    path("moved/", views.moved, name="moved"),
    path("broken/", views.broken, name="broken"),
    path("async-broken/", views.async_broken, name="async-broken"),
    path("slow/", views.slow, name="slow"),
    path("async-slow/", views.async_slow, name="async-slow"),
]
