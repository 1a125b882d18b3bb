"""Maps the top-level engine/ folder onto the mlx_notebook.engine package.

pyproject.toml alone cannot rename found subpackages, so the list is computed here; every
other piece of metadata lives in pyproject.toml.
"""

from setuptools import find_packages, setup
from setuptools.dist import Distribution


class _DistributionWithEditableData(Distribution):
    """Lets `pip install -e .` install data-files (the kernelspec) as a wheel install does.

    setuptools' editable_wheel installs data only when the distribution answers ``has_data()``,
    a method no setuptools Distribution defines (they define ``has_data_files()``), so editable
    installs silently skipped share/jupyter/kernels/mlx-notebook.
    """

    def has_data(self) -> bool:
        return self.has_data_files()


engine_packages = [
    "mlx_notebook.engine" + name[len("engine"):] for name in find_packages(include=["engine", "engine.*"])
]
setup(
    distclass=_DistributionWithEditableData,
    packages=find_packages(include=["mlx_notebook", "mlx_notebook.*"]) + engine_packages,
    package_dir={"mlx_notebook": "mlx_notebook", "mlx_notebook.engine": "engine"},
)
