"""The tests mirror the package: a reader who opens ``django_redis_metrics/X/`` finds its tests
in ``tests/X/``, async ones included, and no folder of tests stands apart from what it tests."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
PACKAGE = TESTS.parent / "django_redis_metrics"
#: Tests folders named after no subpackage: the tests that go through a whole Django site
#: (middleware, decorators, the demo, a browser), whose subject spans several subpackages.
ACROSS_THE_PACKAGE = {"integration"}
#: Subpackages without tests of their own: Django's migrations are generated, not written.
UNTESTED = {"migrations"}


def code_subpackages(package: Path) -> set[str]:
    """The package's top-level subpackages that hold Python code (at any depth)."""
    return {
        folder.name
        for folder in package.iterdir()
        if (folder / "__init__.py").is_file()
        and any(path.stat().st_size for path in folder.rglob("*.py"))
        and folder.name not in UNTESTED
    }


def folders_of_tests(tests: Path) -> set[str]:
    return {folder.name for folder in tests.iterdir() if any(folder.glob("test_*.py"))}


def layout_problems(package: Path, tests: Path) -> list[str]:
    """What breaks the mirror between ``package`` and ``tests``, one line each."""
    subpackages = code_subpackages(package)
    folders = folders_of_tests(tests)
    problems = [f"{name}/ has no tests/{name}/" for name in sorted(subpackages - folders)]
    problems += [
        f"tests/{name}/ mirrors no subpackage"
        for name in sorted(folders - subpackages - ACROSS_THE_PACKAGE)
    ]
    for path in sorted(tests.rglob("test_*_aio.py")):
        kind = path.name.removeprefix("test_").removesuffix("_aio.py")
        if path.parent.name != kind:
            problems.append(f"{path.relative_to(tests)} is not in tests/{kind}/")
    return problems


def test_every_subpackage_has_its_tests_folder_and_every_folder_its_subpackage() -> None:
    assert {"admin", "sending", "counter", "core"} <= code_subpackages(PACKAGE)
    assert layout_problems(PACKAGE, TESTS) == []


def test_the_layout_check_names_what_breaks_the_mirror(tmp_path: Path) -> None:
    package, tests = tmp_path / "pkg", tmp_path / "tests"
    for folder in ["counter", "admin", "migrations"]:
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text('"""Code."""\n')
    (package / "static").mkdir()  # no __init__.py: not a subpackage
    for test in ["aio/test_counter_aio.py", "counter/test_counter.py", "integration/test_x.py"]:
        (tests / test).parent.mkdir(parents=True, exist_ok=True)
        (tests / test).write_text("")
    assert layout_problems(package, tests) == [
        "admin/ has no tests/admin/",
        "tests/aio/ mirrors no subpackage",
        "aio/test_counter_aio.py is not in tests/counter/",
    ]
