"""Settings of an ``archive_metrics`` run in a subprocess (``test_crash.py``): the test suite's,
with the archive database and the metrics' settings the test hands over in the environment."""

from __future__ import annotations

import json
import os

from tests.settings import *  # noqa: F403
from tests.settings import DATABASES

DATABASES["default"] = json.loads(os.environ["DRM_TEST_DATABASE"])
DATABASES.pop("postgres", None)
DJANGO_REDIS_METRICS = json.loads(os.environ["DRM_TEST_METRICS"])
