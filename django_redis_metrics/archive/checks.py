"""System checks of the archive's settings against the kinds it archives. Ids are stable
(``checks.py``).

=========================  ==========================================================
django_redis_metrics.W070  an ARCHIVE_PRECISIONS entry is not among a kind's precisions
django_redis_metrics.W071  Redis forgets an archived precision's slices too soon for passes
=========================  ==========================================================
"""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Warning

from ..cleanup import PASS_INTERVAL
from ..conf import conf
from ..core.retention import validate_precisions, validate_samples

ID = "django_redis_metrics.{}"
#: The settings of the kinds archived in slices: (what, precisions setting, samples setting).
SLICED = (
    ("counters and gauges", "COUNTER_PRECISIONS", "COUNTER_SAMPLES"),
    ("statistics", "STATISTIC_PRECISIONS", "STATISTIC_SAMPLES"),
)
#: Passes that must fit, at ``clean_metrics --loop``'s interval, between the close of a slice
#: and the moment Redis forgets it (one may fail: Redis or the database away).
PASSES_IN_TIME = 2


def check_archive_precisions(**kwargs: Any) -> list[CheckMessage]:
    """W070 and W071 (settings that fail their own checks are left to those)."""
    try:
        archived = tuple(conf.ARCHIVE_PRECISIONS)
        kinds = [
            (what, validate_precisions(conf.get(p)), validate_samples(conf.get(s)))
            for what, p, s in SLICED
        ]
    except (TypeError, ValueError):
        return []
    found: list[CheckMessage] = []
    for what, precisions, samples in kinds:
        for precision in archived:
            if precision not in precisions:
                found.append(
                    Warning(
                        f"ARCHIVE_PRECISIONS holds {precision} s, which {what} do not keep "
                        f"({', '.join(map(str, precisions))}): their {precision} s history is "
                        "never archived.",
                        hint="Archive one of the kind's precisions, or add this one to it.",
                        id=ID.format("W070"),
                    )
                )
                continue
            window = (samples - 1) * precision
            if window < PASSES_IN_TIME * PASS_INTERVAL:
                found.append(
                    Warning(
                        f"{what.capitalize()} keep {samples} slices of {precision} s: Redis "
                        f"forgets a slice about {window} s after it closes, less than "
                        f"{PASSES_IN_TIME} archive passes of clean_metrics --loop "
                        f"({PASS_INTERVAL} s apart): slices may be lost to the archive.",
                        hint="Keep more samples, or archive a coarser precision "
                        "(docs/history.md, 'How often to run a pass').",
                        id=ID.format("W071"),
                    )
                )
    return found
