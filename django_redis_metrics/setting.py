"""What one key of ``DJANGO_REDIS_METRICS`` is: a :class:`Setting`, declared once in
:mod:`django_redis_metrics.conf`, from which the typed access (``conf.PREFIX``), the system
check of its value and its row in ``docs/settings.md`` are all made, so they cannot differ.

A validator is named by its dotted path rather than imported: validators live beside the code
they protect (a kind's model, the core's keys), which itself reads ``conf``; the system checks
resolve them once the app is loaded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Generic, TypeVar, overload

from django.conf import settings

SETTING_NAME = "DJANGO_REDIS_METRICS"
#: The start of the dotted path of every validator the settings name.
PACKAGE = "django_redis_metrics"

T = TypeVar("T")
#: The setting when the site does not set it: always the same object, so that a value derived
#: from it can be remembered.
UNSET: Mapping[str, Any] = MappingProxyType({})
#: Where ``django.conf.settings`` keeps each setting it has read (emptied when
#: ``override_settings`` swaps the settings, a key dropped when it is set or deleted): a setting
#: found there is read without going through the lazy object's attribute machinery, about a
#: microsecond less on a path that reads it for every write.
_READ: dict[str, Any] = vars(settings)
_MISSING = object()


@dataclass(frozen=True, eq=False)
class Setting(Generic[T]):
    """One key: its default, how it is read, how it is checked and what the docs say of it.

    As a class attribute of a :class:`SettingsReader` it is a descriptor: reading it on a
    reader returns the setting's current value, made typed by ``read``.
    """

    default: Any
    #: Makes the stored value (the default when the key is unset) typed.
    read: Callable[[Any], T]
    #: The docs' line: what the key means, for users.
    doc: str
    #: The system check id reported when ``validator`` refuses the value ("E008").
    check: str | None = None
    #: Dotted path of a function refusing a bad value with ``TypeError``/``ValueError``.
    validator: str | None = None
    #: How the docs show the default, when its ``repr`` would not say it well.
    shown: str | None = None
    name: str = field(default="", init=False)

    def __set_name__(self, owner: type, name: str) -> None:
        object.__setattr__(self, "name", name)

    def value(self, raw: Mapping[str, Any]) -> Any:
        """The stored value of this key in ``raw`` (the whole setting), or its default."""
        return raw.get(self.name, self.default)

    @overload
    def __get__(self, reader: None, owner: type) -> Setting[T]: ...

    @overload
    def __get__(self, reader: SettingsReader, owner: type) -> T: ...

    def __get__(self, reader: SettingsReader | None, owner: type) -> Setting[T] | T:
        if reader is None:
            return self
        return self.typed(reader.raw)

    def typed(self, raw: Mapping[str, Any]) -> T:
        """This key's value in ``raw`` (the whole setting), typed."""
        return self.read(self.value(raw))

    def default_text(self) -> str:
        """The default as the docs show it."""
        return self.shown if self.shown is not None else f"`{python_literal(self.default)}`"


def python_literal(value: Any) -> str:
    """``value`` as a user writes it in settings.py (``None``, ``"x"``, ``(1, 5)``)."""
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, dict):
        return (
            "{"
            + ", ".join(f"{python_literal(k)}: {python_literal(v)}" for k, v in value.items())
            + "}"
        )
    if isinstance(value, tuple):
        return "(" + ", ".join(python_literal(item) for item in value) + ")"
    return repr(value)


class SettingsReader:
    """A typed, always-fresh view of ``DJANGO_REDIS_METRICS``: nothing is cached, so
    ``override_settings`` and pytest-django's ``settings`` fixture take effect at once.
    Subclasses declare their keys as :class:`Setting` class attributes."""

    def __init__(self, fixed: Mapping[str, Any] | None = None) -> None:
        self._fixed = fixed

    @classmethod
    def table(cls) -> Iterator[Setting[Any]]:
        """Every declared key, in the order of declaration (the docs' order): the class's own
        first, then those of the tables it extends."""
        for klass in cls.__mro__:
            for attribute in vars(klass).values():
                if isinstance(attribute, Setting):
                    yield attribute

    @property
    def raw(self) -> Mapping[str, Any]:
        """The setting as the site wrote it (``{}`` when unset or not a dict)."""
        if self._fixed is not None:
            return self._fixed
        value = _READ.get(SETTING_NAME, _MISSING)
        if value is _MISSING:
            value = getattr(settings, SETTING_NAME, UNSET)
        if type(value) is dict:  # read on every write: the usual case before the ABC check
            return value
        return value if isinstance(value, Mapping) else UNSET
