"""Imports point one way: each layer of toolkit/ uses only the layers below it, with no circle.

Read from the source with ``ast`` (nothing is imported), so the test names the
file and line of each offending import. The layers, lowest first, are those of
docs/explanation/architecture.md.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "toolkit"

#: (module prefix, rank): a module may import modules of its own rank or lower.
LAYERS = (
    ("toolkit.errors", 0),
    ("toolkit.findings", 0),
    ("toolkit.layout", 0),
    ("toolkit.plumbing", 1),
    ("toolkit.workbook", 2),
    ("toolkit.money", 3),
    ("toolkit.evidence", 4),
    ("toolkit.planner", 5),
    ("toolkit.report", 6),
    ("toolkit.editing", 7),
    ("toolkit.reporting", 7),
    ("toolkit.runner", 8),
    ("toolkit.cluster", 9),
    ("toolkit.commands", 10),
    ("toolkit.cli", 11),
    ("toolkit.__main__", 11),
    ("toolkit", 0),  # the package's own __init__: the version
)
#: Third-party packages and the only layers allowed to import them.
ONLY_IN = {
    "torch": ("toolkit.runner",),
    "transformers": ("toolkit.runner",),
    "safetensors": ("toolkit.runner",),
    "huggingface_hub": ("toolkit.runner",),
    "openpyxl": ("toolkit.workbook",),
    "xlsxwriter": ("toolkit.workbook",),
    "python_calamine": ("toolkit.workbook",),
    "click": ("toolkit.commands", "toolkit.cli"),
    "rich": ("toolkit.commands",),
    "ray": ("toolkit.cluster",),
    "sacrebleu": ("toolkit.runner",),
}
HEAVY = ("torch", "transformers")


@dataclass(frozen=True)
class Import:
    """One import statement: who imports what, where, and whether inside a function."""

    module: str
    target: str
    line: int
    in_function: bool


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        anchor = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
        base = ".".join([*anchor, base] if base else anchor)
    # ``from toolkit.evidence import chain`` imports the module toolkit.evidence.chain.
    return [
        f"{base}.{alias.name}" if _is_module(f"{base}.{alias.name}") else base
        for alias in node.names
    ]


def _is_module(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _imports() -> list[Import]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node, in_function in _walk(tree, False):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _targets(node, module, path.name == "__init__.py"):
                    found.append(Import(module, target, node.lineno, in_function))
    return found


def _walk(node: ast.AST, in_function: bool):  # type: ignore[no-untyped-def]
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
            continue  # for the type checker only
        inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
        yield child, inside
        yield from _walk(child, inside)


def _rank(module: str) -> int:
    for prefix, rank in LAYERS:
        if module == prefix or module.startswith(prefix + "."):
            return rank
    raise AssertionError(
        f"{module} belongs to no layer: add it to LAYERS and to docs/explanation/architecture.md"
    )


def _own(imports: list[Import]) -> list[Import]:
    return [i for i in imports if i.target == "toolkit" or i.target.startswith("toolkit.")]


def _loads_torch(imports: list[Import]) -> set[str]:
    """Toolkit modules whose module-level imports reach torch or transformers."""
    top = [i for i in imports if not i.in_function]
    heavy = {i.module for i in top if i.target.split(".")[0] in HEAVY}
    while True:
        more = {i.module for i in _own(top) if i.target in heavy} - heavy
        if not more:
            return heavy
        heavy |= more


def test_every_import_points_down_or_sideways() -> None:
    upward = [
        f"{i.module} (line {i.line}) imports {i.target}"
        for i in _own(_imports())
        if _rank(i.target) > _rank(i.module)
    ]
    assert upward == []


def test_no_import_circle_inside_the_package() -> None:
    graph: dict[str, set[str]] = {}
    for i in _own(_imports()):
        if i.target != i.module:
            graph.setdefault(i.module, set()).add(i.target)
    circles = []
    state: dict[str, int] = {}  # 1 visiting, 2 done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                circles.append(" -> ".join([*path[path.index(nxt) :], nxt]))
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert circles == []


def test_third_party_packages_stay_in_their_layer() -> None:
    misplaced = [
        f"{i.module} (line {i.line}) imports {i.target}"
        for i in _imports()
        if (allowed := ONLY_IN.get(i.target.split(".")[0])) is not None
        and not any(i.module.startswith(prefix) for prefix in allowed)
    ]
    assert misplaced == []


def test_lazy_imports_of_own_modules_only_keep_torch_out() -> None:
    """Outside commands/, an import inside a function is allowed only for a module that loads
    torch or transformers (so that --help and validate never do)."""
    imports = _imports()
    heavy = _loads_torch(imports)
    lazy = [
        f"{i.module} (line {i.line}) imports {i.target} inside a function"
        for i in _own(imports)
        if i.in_function and not i.module.startswith("toolkit.commands") and i.target not in heavy
    ]
    assert lazy == []


def test_the_checks_above_can_fail() -> None:
    """The rank table knows an upward import when it sees one, and torch's reach."""
    assert _rank("toolkit.workbook.store") < _rank("toolkit.report.refresh")
    assert "toolkit.runner.attempt" in _loads_torch(_imports())
    assert "toolkit.runner.driver.campaign" not in _loads_torch(_imports())


def test_every_subpackage_is_in_the_wheel() -> None:
    """pyproject lists the packages explicitly (shipped data maps onto toolkit.shipped.*)."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    listed = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    folders = {_module_name(p.parent / "__init__.py") for p in PACKAGE.rglob("__init__.py")}
    assert folders <= set(listed)


#: The longest function toolkit/runner/ may hold (issue 37: the attempt was 181 lines).
RUNNER_FUNCTION_LINES = 80


def test_no_function_in_the_runner_is_longer_than_80_lines() -> None:
    long = []
    for path in sorted((PACKAGE / "runner").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > RUNNER_FUNCTION_LINES:
                    long.append(
                        f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines} lines)"
                    )
    assert long == []


def test_the_task_kinds_declare_every_measured_attempts_column_exactly_once() -> None:
    from toolkit import layout
    from toolkit.runner.tasks import columns

    declared = [*columns.EVERY_KIND, *(name for own in columns.OWN.values() for name in own)]
    measured = [c.name for c in layout.ATTEMPTS.columns if c.measurement]
    assert sorted(declared) == sorted(measured)
    assert len(declared) == len(set(declared))
    assert set(columns.OWN) == set(columns.ABSENT)


def test_the_tariff_rules_are_the_one_module_loaded_by_path_and_import_no_toolkit() -> None:
    """money/tariffs.py loads tariffs/calcul_forfaits.py by path (a standalone script too):
    the graph above cannot see that edge, so it must lead nowhere back into toolkit."""
    by_path = sorted(
        str(p.relative_to(ROOT))
        for p in PACKAGE.rglob("*.py")
        if "spec_from_file_location" in p.read_text(encoding="utf-8")
    )
    assert by_path == ["toolkit/money/tariffs.py"]
    rules = ast.parse((ROOT / "tariffs" / "calcul_forfaits.py").read_text(encoding="utf-8"))
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(rules)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    imported |= {
        (node.module or "").split(".")[0]
        for node in ast.walk(rules)
        if isinstance(node, ast.ImportFrom)
    }
    assert "toolkit" not in imported
