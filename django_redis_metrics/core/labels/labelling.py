"""Labelled metrics: one metric, many series, each named by its label values.

A metric declared with ``labels=("view", "status")`` writes nothing under its own name: each
``metric.labels(view="home", status="2xx")`` is a *series*, a metric of the same kind whose
name is the metric's name followed by its labels, each after a unit separator (``\\x1f``)::

    hits\\x1fview=home\\x1fstatus=2xx

Metric names may not hold control characters, nor may label values, so a series name never
equals a metric's name nor another series' name, and ``name=value`` pairs split without
ambiguity (label names are identifiers: no ``=`` in them). Every series is listed in its
kind's catalogue under that name: the series of ``hits`` are the catalogue's members from
``hits\\x1f`` up to ``hits\\x1f\\xff``, one ``ZRANGEBYLEX`` away, and each has its own keys,
so its hash tag (and its Redis Cluster slot) is its own: one busy metric spreads over the slots.

Cardinality is bounded: a metric keeps at most ``max_series`` series. A label set not yet
listed is *admitted* before its first write by one script on the catalogue (atomic, so racing
writers never admit more); once the metric is full, its writes go to the series
``hits\\x1f__other__``, and the refusal is counted in that series' meta hash and logged once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..validation import shown

#: Separates a metric's name from each of its labels in a series name.
SEPARATOR = "\x1f"
#: The series that takes a full metric's writes of label sets it could not admit.
OTHER = "__other__"
#: Longest label value accepted (a longer one is refused: values are meant to be few).
MAX_VALUE_LENGTH = 100
#: Most labels one metric may declare.
MAX_LABELS = 8
#: Label names no metric may declare: querysets filter a metric's own name with ``name=``.
RESERVED_LABELS = ("name",)
#: The meta hash field of the ``__other__`` series counting the label sets sent there.
OVERFLOW_FIELD = "overflow"

_LABEL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def validate_label_names(labels: object, what: str) -> tuple[str, ...]:
    """The declared ``labels`` of ``what`` (a metric), as a tuple of identifiers."""
    if isinstance(labels, str | bytes) or not isinstance(labels, Iterable):
        raise TypeError(f"labels of {what} must be a tuple of label names, not {shown(labels)}.")
    names = tuple(labels)
    for name in names:
        if not isinstance(name, str) or not _LABEL_NAME.match(name):
            raise ValueError(
                f"Label names of {what} must be identifiers (letters, digits, '_'), not "
                f"{shown(name)}."
            )
        if name.startswith("__") or name in RESERVED_LABELS:
            raise ValueError(
                f"Label names starting with '__' and {', '.join(map(repr, RESERVED_LABELS))} are "
                f"reserved: {name!r} ({what})."
            )
    if len(set(names)) != len(names):
        raise ValueError(f"Labels of {what} are declared twice: {names!r}.")
    if len(names) > MAX_LABELS:
        raise ValueError(f"{what} declares {len(names)} labels; at most {MAX_LABELS} are allowed.")
    return names


def label_value(value: object, label: str) -> str:
    """A label's value as stored: a non-empty ``str`` or an ``int`` (as text), without control
    characters or braces, at most ``MAX_VALUE_LENGTH`` characters."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise TypeError(
            f"The value of label {label!r} must be a str or an int, not "
            f"{type(value).__name__}: {shown(value)}."
        )
    text = str(value)
    if not text or len(text) > MAX_VALUE_LENGTH:
        raise ValueError(
            f"The value of label {label!r} must be 1 to {MAX_VALUE_LENGTH} characters long, "
            f"not {len(text)}: {shown(text)}."
        )
    if text == OTHER:
        raise ValueError(f"{OTHER!r} is reserved for the series past a metric's max_series.")
    for char in text:
        if char in "{}" or ord(char) < 0x20 or 0x7F <= ord(char) < 0xA0:
            raise ValueError(
                f"The value of label {label!r} must not contain braces or control characters: "
                f"{shown(text)}."
            )
    return text


def label_values(
    declared: Sequence[str], given: Mapping[str, object], what: str
) -> tuple[tuple[str, str], ...]:
    """``given`` checked against the ``declared`` labels of ``what``: every one required, no
    other; the ``(label, value)`` pairs in declaration order."""
    if not declared:
        raise TypeError(f"{what} declares no labels: declare them with labels=(...).")
    missing = [name for name in declared if name not in given]
    unknown = sorted(name for name in given if name not in declared)
    if missing or unknown:
        parts = [
            f"missing {missing!r}" if missing else "",
            f"unknown {unknown!r}" if unknown else "",
        ]
        raise ValueError(
            f"{what} is labelled by {tuple(declared)!r}: {', '.join(p for p in parts if p)}."
        )
    return tuple((name, label_value(given[name], name)) for name in declared)


def series_name(name: str, pairs: Iterable[tuple[str, str]]) -> str:
    """The name of the series of metric ``name`` with these ``(label, value)`` pairs."""
    return name + "".join(f"{SEPARATOR}{label}={value}" for label, value in pairs)


def other_name(name: str) -> str:
    """The series taking the writes of ``name``'s label sets past its ``max_series``."""
    return f"{name}{SEPARATOR}{OTHER}"


@dataclass(frozen=True, slots=True)
class SeriesName:
    """A catalogue member split: the metric's ``name`` and the series' ``labels`` (empty for
    the metric's own name; ``other`` for its ``__other__`` series)."""

    name: str
    labels: tuple[tuple[str, str], ...] = ()
    other: bool = False

    @property
    def is_series(self) -> bool:
        return bool(self.labels) or self.other

    def label_dict(self) -> dict[str, str]:
        return dict(self.labels)


def split(member: str) -> SeriesName:
    """A catalogue member as its metric's name and its labels."""
    name, _, rest = member.partition(SEPARATOR)
    if not rest:
        return SeriesName(name)
    if rest == OTHER:
        return SeriesName(name, other=True)
    pairs = []
    for part in rest.split(SEPARATOR):
        label, _, value = part.partition("=")
        pairs.append((label, value))
    return SeriesName(name, tuple(pairs))


def series_range(name: str) -> tuple[bytes, bytes]:
    """``ZRANGEBYLEX`` bounds of every series of metric ``name`` (its ``__other__`` too): the
    members after ``name`` and the separator, up to byte 0xff (which UTF-8 never holds)."""
    start = f"{name}{SEPARATOR}".encode()
    return b"[" + start, b"[" + start + b"\xff"
