"""The JupyterLab extension ships prebuilt, and the prebuilt files are what its source builds.

``share/jupyter/labextensions/mlx-notebook`` is committed so that ``pip install`` needs no
Node; these tests build ``labextension/`` from source in a clean copy (``jlpm install
--immutable`` from the committed ``yarn.lock``, then ``jlpm build``) and require the same
bytes, and install the built wheel into a fresh venv where ``jupyter labextension list``
must show the extension enabled.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PREBUILT = ROOT / "share" / "jupyter" / "labextensions" / "mlx-notebook"
JLPM = shutil.which("jlpm", path=str(Path(sys.executable).parent)) or shutil.which("jlpm")


def _files(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def _source_copy(destination: Path) -> Path:
    """The extension's tracked sources (and the turn.css it imports), as a clean clone has them."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "labextension"],
                            cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    for name in [*listed, "mlx_notebook/display/turn.css"]:
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    return destination / "labextension"


def test_the_prebuilt_extension_declares_both_plugins():
    import json

    package = json.loads((PREBUILT / "package.json").read_text())
    assert package["name"] == "mlx-notebook"
    build = package["jupyterlab"]["_build"]
    assert {"extension", "mimeExtension", "style"} <= set(build)
    assert (PREBUILT / build["load"]).is_file()


@pytest.mark.slow
def test_the_prebuilt_extension_is_what_the_source_builds(tmp_path):
    if JLPM is None or shutil.which("node") is None:
        pytest.fail("Building the extension needs Node.js and jlpm (installed with jupyterlab): apt-get install nodejs")
    source = _source_copy(tmp_path)
    env = {**os.environ, "CI": "1", "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])}
    env.pop("LD_PRELOAD", None)  # the OpenBLAS preload makes node's threads fail to start
    for command in ([JLPM, "install", "--immutable"], [JLPM, "build"]):
        done = subprocess.run(command, cwd=source, env=env, capture_output=True, text=True)
        assert done.returncode == 0, f"{' '.join(command[1:])} failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    built = _files(tmp_path / "share" / "jupyter" / "labextensions" / "mlx-notebook")
    committed = _files(PREBUILT)
    assert sorted(built) == sorted(committed), "rebuild the extension: cd labextension && jlpm build"
    differing = [name for name in built if built[name] != committed[name]]
    assert not differing, f"{differing} differ from a build of the source: cd labextension && jlpm build"


@pytest.mark.slow
def test_the_built_wheel_installs_the_extension_enabled(built_wheel, tmp_path):
    wheel = built_wheel
    data = "mlx_notebook-0.1.0.data/data/share/jupyter/labextensions/mlx-notebook/"
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {data + name for name in _files(PREBUILT)} <= names

    # A fresh venv that borrows this one's packages (jupyterlab) but not its share/ folder.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", str(wheel)],
                   check=True, capture_output=True)
    assert (venv / "share" / "jupyter" / "labextensions" / "mlx-notebook" / "package.json").is_file()
    env = {**os.environ, "JUPYTER_DATA_DIR": str(tmp_path / "data"), "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
           "JUPYTER_PATH": "", "JUPYTER_PREFER_ENV_PATH": "1"}
    # The module, not `jupyter labextension`: that finds the subcommand on PATH, in this venv.
    listing = subprocess.run([str(python), "-m", "jupyterlab.labextensions", "list"],
                             capture_output=True, text=True, env=env)
    text = listing.stdout + listing.stderr
    section = text.split(str(venv / "share" / "jupyter" / "labextensions"), 1)
    assert len(section) == 2, text
    line = next(line for line in section[1].splitlines() if "mlx-notebook" in line)
    assert "enabled" in line and "OK" in line, text
