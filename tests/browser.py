"""The Chromium that the browser tests drive (tests marked ``browser``), and what happens when
the machine has none: a visible skip naming the package to install, or a failure where the
browser is required (CI sets ``DRM_REQUIRE_BROWSER=1``, so a lost browser cannot pass unseen)."""

from __future__ import annotations

import os
from collections.abc import Mapping

import pytest

#: Debian's Chromium (``apt-get install chromium``), never a downloaded one.
CHROMIUM = "/usr/bin/chromium"
#: Set to 1, a missing Chromium fails the browser tests instead of skipping them.
REQUIRE_BROWSER = "DRM_REQUIRE_BROWSER"


def require_chromium(path: str, environ: Mapping[str, str] = os.environ) -> None:
    """Return if ``path`` is an executable; else skip the test, or fail it if required."""
    if os.path.isfile(path) and os.access(path, os.X_OK):
        return
    reason = f"no Chromium at {path}: apt-get install chromium"
    if environ.get(REQUIRE_BROWSER) == "1":
        pytest.fail(f"{reason} ({REQUIRE_BROWSER}=1: the browser tests must run)")
    pytest.skip(f"{reason} (or set {REQUIRE_BROWSER}=1 to make this a failure)")
