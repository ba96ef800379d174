from __future__ import annotations

from django.urls import path

from . import views

urlpatterns = [
    path("", views.home, name="home"),
    path("products/<slug:slug>/", views.product, name="product"),
    path("products/<slug:product>/buy/", views.Buy.as_view(), name="buy"),
    path("signup/", views.signup, name="signup"),
    path("downloads/<str:file>/", views.download, name="download"),
    path("staff/", views.staff, name="staff"),
    path("health/", views.health, name="health"),
]
