"""The lookups of a queryset (``core/queryset.py``): ``filter(name__startswith="api.",
labels__view="home")`` parsed into conditions, each tested on a catalogue member in Python, and
the narrowest ``ZRANGEBYLEX`` range of the catalogue a selection can be read from.

A row is a catalogue member split by :func:`~.labelling.split`: ``name`` is the metric's name
(a series' family name), ``labels__<label>`` one of a series' label values. A row without that
label (a plain metric, a ``__other__`` series) fails every lookup on it, so ``exclude()`` keeps
it, as a ``NULL`` column behaves in Django.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..labels.labelling import SEPARATOR, split
from ..validation import shown

#: The lookups a name or a label value accepts (Django's spelling; the ``i`` ones ignore case).
LOOKUPS = ("exact", "iexact", "in", "startswith", "istartswith", "contains", "icontains", "regex")
#: Longest regular expression a ``regex`` lookup accepts.
MAX_PATTERN = 1000
#: Most values an ``in`` lookup accepts.
MAX_IN = 10_000

Test = Callable[[str], bool]


@dataclass(frozen=True, slots=True)
class Condition:
    """One lookup: ``field`` is ``"name"`` or a label's name, ``value`` as given (checked)."""

    field: str
    lookup: str
    value: str | tuple[str, ...]
    test: Test


#: ``filter(a=1, b=2)`` is one group (every condition holds); ``exclude`` negates a group.
@dataclass(frozen=True, slots=True)
class Group:
    conditions: tuple[Condition, ...]
    negated: bool = False


def _text(value: object, what: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise TypeError(
            f"{what} must be a str (or an int), not {type(value).__name__}: {shown(value)}."
        )
    text = str(value)
    if SEPARATOR in text:
        raise ValueError(f"{what} must not contain the unit separator (\\x1f): {shown(text)}.")
    return text


def _test(lookup: str, value: object, what: str) -> tuple[str | tuple[str, ...], Test]:
    if lookup == "in":
        if isinstance(value, str | bytes) or not isinstance(value, Iterable):
            raise TypeError(f"{what}__in takes a list of values, not {shown(value)}.")
        values = tuple(_text(item, f"A value of {what}__in") for item in value)
        if len(values) > MAX_IN:
            raise ValueError(f"{what}__in takes at most {MAX_IN} values, not {len(values)}.")
        chosen = frozenset(values)
        return values, chosen.__contains__
    if lookup == "regex":
        if not isinstance(value, str):
            raise TypeError(f"{what}__regex takes a str, not {type(value).__name__}.")
        if len(value) > MAX_PATTERN:
            raise ValueError(f"{what}__regex takes at most {MAX_PATTERN} characters.")
        try:
            compiled = re.compile(value)
        except re.error as exc:
            raise ValueError(f"{what}__regex is not a regular expression: {exc}.") from None
        return value, lambda text: compiled.search(text) is not None
    text = _text(value, f"{what}__{lookup}")
    folded = text.casefold()
    tests: dict[str, Test] = {
        "exact": lambda item: item == text,
        "iexact": lambda item: item.casefold() == folded,
        "startswith": lambda item: item.startswith(text),
        "istartswith": lambda item: item.casefold().startswith(folded),
        "contains": lambda item: text in item,
        "icontains": lambda item: folded in item.casefold(),
    }
    return text, tests[lookup]


def parse(lookups: Mapping[str, object]) -> tuple[Condition, ...]:
    """``filter()``'s keyword arguments as conditions; a ``TypeError`` for an unknown field or
    lookup, a ``ValueError`` for a bad value."""
    conditions = []
    for key, value in lookups.items():
        parts = key.split("__")
        if parts[0] == "name" and len(parts) <= 2:
            field, lookup = "name", parts[1] if len(parts) == 2 else "exact"
        elif parts[0] == "labels" and 2 <= len(parts) <= 3 and parts[1]:
            field, lookup = parts[1], parts[2] if len(parts) == 3 else "exact"
            if field == "name":  # no label is called so: labelling.RESERVED_LABELS
                raise TypeError("labels__name is not a label lookup: no label may be 'name'.")
        else:
            raise TypeError(
                f"Unknown lookup {key!r}: filter on name (name=, name__<lookup>=) or a label "
                "(labels__<label>=, labels__<label>__<lookup>=)."
            )
        if lookup not in LOOKUPS:
            raise TypeError(f"Unknown lookup {lookup!r} in {key!r}; known: {', '.join(LOOKUPS)}.")
        named = key.removesuffix(f"__{lookup}")  # the messages add the lookup once
        checked, test = _test(lookup, value, named)
        conditions.append(Condition(field, lookup, checked, test))
    return tuple(conditions)


@dataclass(frozen=True, slots=True)
class LexRange:
    """Inclusive ``ZRANGEBYLEX`` bounds (``[...``; ``-``/``+`` for the ends)."""

    low: bytes
    high: bytes


EVERYTHING = LexRange(b"-", b"+")


def name_range(name: str) -> LexRange:
    """The metric ``name`` and its series (names hold no control character, so nothing else
    sorts between ``name`` and ``name\\x1f...``)."""
    encoded = name.encode()
    return LexRange(b"[" + encoded, b"[" + encoded + SEPARATOR.encode() + b"\xff")


def prefix_range(prefix: str) -> LexRange:
    """Every member starting with ``prefix`` (UTF-8 never holds byte 0xff)."""
    encoded = prefix.encode()
    return LexRange(b"[" + encoded, b"[" + encoded + b"\xff") if encoded else EVERYTHING


def ranges(groups: Sequence[Group]) -> list[LexRange]:
    """The catalogue ranges holding every row ``groups`` may select, in name order: the name
    lookup of a ``filter()`` that narrows most (exact, in, startswith), else everything."""
    best: list[LexRange] | None = None
    best_rank = 9
    for group in groups:
        if group.negated:
            continue
        for condition in group.conditions:
            if condition.field != "name":
                continue
            value = condition.value
            if condition.lookup == "exact" and isinstance(value, str) and best_rank > 0:
                best, best_rank = [name_range(value)], 0
            elif condition.lookup == "in" and isinstance(value, tuple) and best_rank > 1:
                best, best_rank = [name_range(v) for v in sorted(set(value))], 1
            elif condition.lookup == "startswith" and isinstance(value, str) and best_rank > 2:
                best, best_rank = [prefix_range(value)], 2
    return [EVERYTHING] if best is None else best


def exact_by_range(groups: Sequence[Group]) -> bool:
    """Whether :func:`ranges` holds exactly the rows selected: no lookup but one ``exact`` or
    ``startswith`` on the name (so counting and slicing need not read the members)."""
    conditions = [c for g in groups for c in g.conditions]
    if not conditions:
        return True
    if len(groups) != 1 or groups[0].negated or len(conditions) != 1:
        return False
    only = conditions[0]
    return only.field == "name" and only.lookup in ("exact", "startswith")


def selects(groups: Sequence[Group], member: str) -> bool:
    """Whether the catalogue ``member`` (or a declared metric's name) is a row of ``groups``;
    the member is split only if a lookup is on a label (the name is its start)."""
    name = member.partition(SEPARATOR)[0]
    labels: dict[str, str] | None = None
    for group in groups:
        found = True
        for condition in group.conditions:
            if condition.field == "name":
                found = condition.test(name)
            else:
                if labels is None:
                    labels = split(member).label_dict()
                value = labels.get(condition.field)
                found = value is not None and condition.test(value)
            if not found:
                break
        if found == group.negated:
            return False
    return True
