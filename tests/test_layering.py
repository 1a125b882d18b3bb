"""Layers point down: the engine never reaches up into Jupyter or the notebook package, and
the notebook package uses the engine only through its one public face, ``mlx_notebook.engine``."""

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


NOTEBOOK = ENGINE.parent / "mlx_notebook"


def _absolute(path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = ["mlx_notebook", *path.relative_to(NOTEBOOK).parent.parts]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _is_engine_module(name: str) -> bool:
    return (ENGINE / name).is_dir() or (ENGINE / f"{name}.py").is_file()


def test_the_notebook_layer_imports_only_the_engines_public_face():
    offenders = []
    for path in sorted(NOTEBOOK.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                deep = [a.name for a in node.names if a.name.startswith("mlx_notebook.engine.")]
            elif isinstance(node, ast.ImportFrom):
                module = _absolute(path, node)
                if module.startswith("mlx_notebook.engine."):
                    deep = [module]
                elif module == "mlx_notebook.engine":  # names, not modules, from the face
                    deep = [f"{module}.{a.name}" for a in node.names if _is_engine_module(a.name)]
                else:
                    deep = []
            else:
                continue
            offenders += [f"{path.relative_to(NOTEBOOK.parent)}:{node.lineno} imports {m}" for m in deep]
    assert offenders == []


def test_the_request_path_reads_top_to_bottom_in_the_folders():
    names = {path.name for path in ENGINE.iterdir()}
    assert {"request", "models", "parsing"} <= names
    assert not {"scheduler.py", "model_store.py", "parsers", "responses.py"} & names
