"""The archive's tests run once per database: SQLite ("default") and PostgreSQL ("postgres"), from
any folder (a plugin of tests/conftest.py).


``archive_db`` is the alias a test archives to (``ARCHIVE_DATABASE``); the PostgreSQL run skips,
saying why, where no server answers (``tests/settings.py``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.conf import settings

#: Every alias the archive's tests may touch: request them with
#: ``@pytest.mark.django_db(databases=ARCHIVE_DATABASES)``.
ARCHIVE_DATABASES = ["default", "postgres"] if "postgres" in settings.DATABASES else ["default"]


@pytest.fixture(params=["default", "postgres"], ids=["sqlite", "postgresql"])
def archive_db(request: pytest.FixtureRequest) -> Iterator[str]:
    """The database alias this test archives to, once per database."""
    alias: str = request.param
    if alias not in settings.DATABASES:
        pytest.skip(
            "no PostgreSQL server answers at "
            f"{settings.POSTGRES_HOST}:{settings.POSTGRES_PORT} (or psycopg is missing): "
            "set DRM_POSTGRES_HOST / DRM_POSTGRES_PORT to run the archive's tests on it"
        )
    yield alias
