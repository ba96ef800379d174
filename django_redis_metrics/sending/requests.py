"""The writes of one request: attached to it by the middleware, added to by the decorators.

Also how a request's user becomes the id to mark, without ever loading the user.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject, empty

from .writes import Writes

#: The attribute holding the request's writes, which the decorators add to.
WRITES_ATTRIBUTE = "_metrics_writes"


def attach_writes(request: HttpRequest) -> Writes:
    """New writes for ``request``, sent by the middleware once the response is ready."""
    writes = Writes()
    setattr(request, WRITES_ATTRIBUTE, writes)
    return writes


def request_writes(request: HttpRequest) -> Writes | None:
    """The writes the middleware sends after this request, if the middleware is installed."""
    return getattr(request, WRITES_ATTRIBUTE, None)


def user_id(user: Any) -> Any:
    """The id to mark for ``user``: its pk if authenticated, else ``None``."""
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    return user.pk


async def auser_id(request: HttpRequest) -> Any:
    """``user_id`` of the request's user, read without blocking the event loop: awaited
    through ``request.auser()`` (set by ``AuthenticationMiddleware``), else a ``request.user``
    set without it (by a test's ``RequestFactory`` request, or another middleware)."""
    auser = getattr(request, "auser", None)
    if auser is not None:
        return user_id(await auser())
    return user_id(getattr(request, "user", None))


def loaded_user_id(request: HttpRequest) -> Any:
    """``user_id`` of the request's user if the request already loaded it, else ``None``.

    Never evaluates ``request.user`` nor awaits ``request.auser()``: doing so reads the session,
    which marks it accessed (``SessionMiddleware`` then adds ``Vary: Cookie``) and costs a query.
    """
    attributes = vars(request)
    user = attributes.get("user")
    if isinstance(user, SimpleLazyObject):
        wrapped = user._wrapped
        if wrapped is not empty:
            return user_id(wrapped)
    elif user is not None:  # a real user object set by another middleware or a test
        return user_id(user)
    for cached in ("_acached_user", "_cached_user"):  # Django's auser() / get_user() caches
        if cached in attributes:
            return user_id(attributes[cached])
    return None
