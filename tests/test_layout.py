"""The package's layout keeps its promises: no import cycle (lazy imports included), and no
module longer than a reader can hold in mind."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "django_redis_metrics"
NAME = PACKAGE.name
#: The longest module we accept; past it, split the module by concern.
MAX_LINES = 400


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {
        module_name(path): path for path in PACKAGE.rglob("*.py") if "migrations" not in path.parts
    }


def is_type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imported_modules(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that ``name`` imports, at any depth of its code (function-level
    imports count: they close a cycle at run time), ``if TYPE_CHECKING:`` blocks excepted."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    pending: list[ast.AST] = [ast.parse(path.read_text("utf-8"))]
    while pending:
        node = pending.pop()
        if is_type_checking_block(node):
            continue
        pending.extend(ast.iter_child_nodes(node))
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            stem = node.module or ""
            root = f"{base}.{stem}".strip(".") if node.level else stem
            targets = [f"{root}.{alias.name}" for alias in node.names] + [root]
        for target in targets:
            # "from .x import y": y is a module or a name in x; keep what is a module.
            while target and target not in known:
                target = target.rpartition(".")[0]
            # A module's own packages are imported before it: not an edge of a cycle.
            if target.startswith(NAME) and not f"{name}.".startswith(f"{target}."):
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    known = modules()
    names = set(known)
    return {name: imported_modules(name, path, names) for name, path in known.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of the graph as a list of modules, or None (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(graph):
        if start in state:
            continue
        path = [start]
        iterators = [iter(sorted(graph[start]))]
        state[start] = 1
        while iterators:
            following = next(iterators[-1], None)
            if following is None:
                state[path.pop()] = 2
                iterators.pop()
            elif state.get(following) == 1:
                return [*path[path.index(following) :], following]
            elif following not in state:
                state[following] = 1
                path.append(following)
                iterators.append(iter(sorted(graph.get(following, ()))))
    return None


def test_the_package_has_no_import_cycle() -> None:
    graph = import_graph()
    assert len(graph) > 30  # the scan found the package's modules
    assert "django_redis_metrics.core.connection" in graph["django_redis_metrics.core.batch"]
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])


def test_the_cycle_finder_finds_a_cycle_through_a_lazy_import(tmp_path: Path) -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    source = tmp_path / "lazy.py"
    source.write_text("def f():\n    from .core import keys\n")
    found = imported_modules(
        f"{NAME}.lazy", source, {f"{NAME}.core", f"{NAME}.core.keys", f"{NAME}.lazy"}
    )
    assert found == {f"{NAME}.core.keys", f"{NAME}.core"}


def test_the_core_depends_on_no_model_nor_on_django_integration() -> None:
    graph = import_graph()
    core = {name for name in graph if name.startswith(f"{NAME}.core")}
    outside = {target for name in core for target in graph[name]} - core
    assert outside <= {f"{NAME}.conf", f"{NAME}.exceptions"}, outside


@pytest.mark.parametrize("name", sorted(modules()))
def test_every_module_stays_short(name: str) -> None:
    lines = len(modules()[name].read_text("utf-8").splitlines())
    assert lines <= MAX_LINES, f"{name} has {lines} lines; split it by concern"


def test_one_permission_rule_for_the_admin_and_the_exposition() -> None:
    """Who may see metrics is decided in one function, imported by every page that asks."""
    graph = import_graph()
    rule = f"{NAME}.permissions"
    for user in (f"{NAME}.admin.options", f"{NAME}.admin.common", f"{NAME}.exposition.views"):
        assert rule in graph[user], user
    assert f"{NAME}.admin.common" not in graph[f"{NAME}.exposition.views"]


#: Modules that talk to Redis themselves although they live outside ``core/``: the throwaway
#: servers of tests and benchmarks.
REDIS_CLIENT_ALLOWED = {
    f"{NAME}.testing.{module}" for module in ("server", "cluster", "sentinel", "tls")
}
#: The modules of redis-py that hold clients (its ``exceptions`` may be imported anywhere).
REDIS_CLIENT_MODULES = ("redis", "redis.asyncio", "redis.cluster")


def redis_imports(path: Path) -> set[str]:
    """The redis-py modules ``path`` imports, at any depth of its code."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module)
    return {name for name in found if name == "redis" or name.startswith("redis.")}


def test_no_module_outside_the_core_imports_a_redis_client() -> None:
    """Outside ``core/`` every exchange with Redis is a generator of steps run by a driver
    (``core/drive.py``), so nothing there needs a client of its own."""
    offenders = {}
    for name, path in modules().items():
        if name.startswith(f"{NAME}.core") or name in REDIS_CLIENT_ALLOWED:
            continue
        clients = {
            imported
            for imported in redis_imports(path)
            if imported in REDIS_CLIENT_MODULES
            or imported.startswith("redis.asyncio.")
            or imported.startswith("redis.cluster")
        }
        if clients:
            offenders[name] = clients
    assert not offenders, offenders


def test_the_async_side_is_no_mirror_of_the_sync_one() -> None:
    """One transport: the async driver runs the same steps; no async copy of ``run_calls``,
    of its pipelining or of the script call remains, nor any follow-up callback pair
    (``core/aio.py`` keeps only the async clients)."""
    known = modules()
    mirror = ("arun_calls", "_apipelined", "ascript", "_arun_step", "aafter", "_alisted")
    for name, path in known.items():
        tree = ast.parse(path.read_text("utf-8"))
        defined = {
            node.name
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        }
        words = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
        words |= {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
        words |= {
            kw.arg for node in ast.walk(tree) for kw in getattr(node, "keywords", []) if kw.arg
        }
        assert not (defined | words) & set(mirror), (name, (defined | words) & set(mirror))
