"""Maps the top-level engine/ folder onto the mlx_notebook.engine package.

pyproject.toml alone cannot rename found subpackages, so the list is computed here; every
other piece of metadata lives in pyproject.toml.
"""

from setuptools import find_packages, setup

engine_packages = [
    "mlx_notebook.engine" + name[len("engine"):] for name in find_packages(include=["engine", "engine.*"])
]
setup(
    packages=find_packages(include=["mlx_notebook", "mlx_notebook.*"]) + engine_packages,
    package_dir={"mlx_notebook": "mlx_notebook", "mlx_notebook.engine": "engine"},
)
