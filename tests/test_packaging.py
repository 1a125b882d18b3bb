"""The engine folder installs as mlx_notebook.engine, and the mlx-notebook kernelspec into
share/jupyter/kernels, both editable and from a built wheel."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_editable_install_maps_the_engine_folder():
    import mlx_notebook
    import mlx_notebook.engine
    import mlx_notebook.engine.models._store

    assert Path(mlx_notebook.engine.__file__).parent == ROOT / "engine"
    assert Path(mlx_notebook.__file__).parent == ROOT / "mlx_notebook"


@pytest.mark.slow
def test_built_wheel_holds_and_imports_both_packages(built_wheel, tmp_path):
    wheel = built_wheel
    names = set(zipfile.ZipFile(wheel).namelist())
    for expected in ["mlx_notebook/__init__.py", "mlx_notebook/engine/__init__.py", "mlx_notebook/engine/models/_store.py"]:
        assert expected in names
    assert not any(name.startswith("engine/") for name in names)
    # Wheel data: pip installs it into <prefix>/share/jupyter/kernels, where Jupyter looks.
    kernelspec = "mlx_notebook-0.1.0.data/data/share/jupyter/kernels/mlx-notebook/kernel.json"
    assert kernelspec in names and "mlx_notebook/kernel.py" in names
    server_config = "mlx_notebook-0.1.0.data/data/etc/jupyter/jupyter_server_config.d/mlx_notebook.json"
    assert server_config in names and "mlx_notebook/_server_extension.py" in names
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    # -I ignores the editable install, so the import can only come from the wheel's files.
    code = "import mlx_notebook.engine.models._store as m, mlx_notebook as n; print(m.__file__); print(n.__file__)"
    done = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(site)!r}); {code}"],
        capture_output=True, text=True, check=True,
    )
    engine_file, package_file = done.stdout.split()
    assert engine_file == str(site / "mlx_notebook" / "engine" / "models" / "_store.py")
    assert package_file == str(site / "mlx_notebook" / "__init__.py")


def test_the_server_extension_is_enabled_in_this_environment():
    done = subprocess.run([sys.executable, "-m", "jupyter", "server", "extension", "list"],
                          capture_output=True, text=True, check=True)
    listing = done.stdout + done.stderr
    assert "mlx_notebook._server_extension" in listing and "enabled" in listing
