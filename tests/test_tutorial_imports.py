"""README command 1 (`pip install -e '.[lab]'`) installs everything the tutorials import.

The check reads pyproject.toml (not the installed metadata, which is only as new as the last
install), walks the requirements of `mlx-notebook[lab]` through the installed distributions'
metadata with extras and markers evaluated, and maps each import to the distributions that
provide it.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
from pathlib import Path

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager
from packaging.requirements import Requirement

tomllib = pytest.importorskip("tomllib") if sys.version_info >= (3, 11) else pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
TUTORIALS = sorted((ROOT / "notebooks").glob("0*.ipynb"))


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _tutorial_imports(path: Path) -> set[str]:
    """Top-level module names imported anywhere in a notebook's code cells."""
    transformer = TransformerManager()  # turns %magics and !shell lines into plain Python
    modules: set[str] = set()
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code":
            continue
        for node in ast.walk(ast.parse(transformer.transform_cell(cell.source))):
            if isinstance(node, ast.Import):
                modules.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split(".")[0])
    return modules


def _lab_install_distributions() -> set[str]:
    """Normalized names of every distribution `pip install mlx-notebook[lab]` installs here."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    root = [Requirement(text) for text in project["dependencies"]]
    root += [Requirement(text) for text in project["optional-dependencies"]["lab"]]
    found = {_normalized(project["name"])}
    pending = [requirement for requirement in root if requirement.marker is None or requirement.marker.evaluate()]
    while pending:
        requirement = pending.pop()
        name = _normalized(requirement.name)
        if name in found:
            continue
        found.add(name)
        try:
            texts = importlib.metadata.requires(requirement.name) or []
        except importlib.metadata.PackageNotFoundError:
            continue  # required but not installed here: it still counts as provided
        for text in texts:
            child = Requirement(text)
            extras = [""] + sorted(requirement.extras)
            if child.marker is None or any(child.marker.evaluate({"extra": extra}) for extra in extras):
                pending.append(child)
    return found


@pytest.mark.parametrize("tutorial", TUTORIALS, ids=[path.stem for path in TUTORIALS])
def test_every_tutorial_import_comes_with_the_lab_install(tutorial):
    installed = _lab_install_distributions()
    providers = importlib.metadata.packages_distributions()
    missing = sorted(
        module for module in _tutorial_imports(tutorial)
        if module not in sys.stdlib_module_names
        and not {_normalized(dist) for dist in providers.get(module, [])} & installed
    )
    assert not missing, f"{tutorial.name} imports {missing}, which `pip install -e '.[lab]'` does not install"


def test_the_tutorials_are_found_and_their_imports_read():
    assert len(TUTORIALS) >= 7  # 01..06 and the instruments; the notebooks' own test lists them by name
    assert {"pandas", "matplotlib", "mlx_notebook"} <= set().union(*map(_tutorial_imports, TUTORIALS))
