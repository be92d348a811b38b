"""The packages import only downward (DESIGN.md), and so do the sub-packages of ``controller``:
``controller.store`` imports nothing else of ``controller``; nothing but ``controller.embedding`` (and
the packages above ``controller``) imports ``controller.embedding``."""
from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _imports(path: pathlib.Path) -> set[str]:
    """Modules imported at run time (imports under ``if TYPE_CHECKING:`` are for annotations only)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            node.body = []
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module)
    return out


def _modules(package: str) -> list[pathlib.Path]:
    return sorted((ROOT / package.replace(".", "/")).rglob("*.py"))


def test_store_imports_nothing_else_of_controller():
    bad = [f"{p.relative_to(ROOT)}: {m}" for p in _modules("controller.store") for m in sorted(_imports(p))
           if m.startswith("controller") and not m.startswith("controller.store")]
    assert bad == []


def test_only_embedding_and_higher_packages_import_embedding():
    lower = [p for p in _modules("controller") if "embedding" not in p.parts]
    lower += [p for pkg in ("events", "statemachines") for p in _modules(pkg)]
    bad = [f"{p.relative_to(ROOT)}: {m}" for p in lower for m in sorted(_imports(p))
           if m.startswith("controller.embedding")]
    assert bad == []


def test_no_import_circle_between_cluster_and_its_snapshots():
    cluster = _imports(ROOT / "controller/embedding/cluster.py")
    writer = _imports(ROOT / "controller/embedding/snapshot_state.py")
    assert "controller.embedding.cluster_snapshot" not in cluster
    assert "controller.embedding.cluster" not in writer
