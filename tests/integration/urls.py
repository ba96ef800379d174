"""URLs for the Django integration tests: the admin, and a few views to count."""

from __future__ import annotations

from django.contrib import admin
from django.urls import path

from . import views

urlpatterns = [
    path("admin/", admin.site.urls),
    path("sync/", views.sync_view, name="sync"),
    path("async/", views.async_view, name="async"),
    path("class/", views.ClassView.as_view(), name="class"),
    path("health/", views.health, name="health"),
    path("articles/<slug:slug>/", views.article, name="article"),
    path("unnamed/", views.sync_view),
]
