"""The browser tests' guard: a missing Chromium is a skip naming the package to install, or a
failure when ``DRM_REQUIRE_BROWSER=1`` (as in CI); a present one lets them run."""

from __future__ import annotations

from pathlib import Path

import pytest

from .browser import REQUIRE_BROWSER, require_chromium


def test_a_missing_chromium_skips_naming_the_package_to_install(tmp_path: Path) -> None:
    missing = str(tmp_path / "chromium")
    with pytest.raises(pytest.skip.Exception, match="apt-get install chromium"):
        require_chromium(missing, environ={})
    with pytest.raises(pytest.skip.Exception):
        require_chromium(missing, environ={REQUIRE_BROWSER: "0"})


def test_a_missing_chromium_fails_when_the_browser_is_required(tmp_path: Path) -> None:
    missing = str(tmp_path / "chromium")
    with pytest.raises(pytest.fail.Exception, match="apt-get install chromium"):
        require_chromium(missing, environ={REQUIRE_BROWSER: "1"})


def test_a_file_that_cannot_run_is_no_chromium(tmp_path: Path) -> None:
    not_executable = tmp_path / "chromium"
    not_executable.write_text("#!/bin/sh\n")
    with pytest.raises(pytest.skip.Exception):
        require_chromium(str(not_executable), environ={})
    with pytest.raises(pytest.skip.Exception):
        require_chromium(str(tmp_path), environ={})  # a folder


def test_an_executable_chromium_lets_the_browser_tests_run(tmp_path: Path) -> None:
    chromium = tmp_path / "chromium"
    chromium.write_text("#!/bin/sh\n")
    chromium.chmod(0o755)
    require_chromium(str(chromium), environ={REQUIRE_BROWSER: "1"})


def test_the_suite_guards_every_test_marked_browser(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from . import browser, conftest

    monkeypatch.setattr(browser, "CHROMIUM", str(tmp_path / "chromium"))
    monkeypatch.delenv(REQUIRE_BROWSER, raising=False)
    conftest.pytest_runtest_setup(request.node)  # this test is not marked: it runs
    request.node.add_marker(pytest.mark.browser)
    with pytest.raises(pytest.skip.Exception, match="apt-get install chromium"):
        conftest.pytest_runtest_setup(request.node)
    monkeypatch.setenv(REQUIRE_BROWSER, "1")
    with pytest.raises(pytest.fail.Exception, match="apt-get install chromium"):
        conftest.pytest_runtest_setup(request.node)
