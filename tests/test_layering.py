"""The engine layer never reaches up into Jupyter or the notebook package."""

import ast
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[1] / "engine"
FORBIDDEN = ("IPython", "ipywidgets", "anywidget", "ipykernel", "traitlets", "mlx_notebook")


def _imported_modules(path: Path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module


def test_engine_imports_nothing_from_jupyter_or_the_notebook_layer():
    offenders = []
    for path in sorted(ENGINE.rglob("*.py")):
        for lineno, module in _imported_modules(path):
            top = module.split(".")[0]
            # mlx_notebook.engine.* is the engine itself under its installed name.
            if top in FORBIDDEN and not module.startswith("mlx_notebook.engine"):
                offenders.append(f"{path.relative_to(ENGINE.parent)}:{lineno} imports {module}")
    assert offenders == []


def test_the_check_sees_engine_modules():
    assert len(list(ENGINE.rglob("*.py"))) >= 5
