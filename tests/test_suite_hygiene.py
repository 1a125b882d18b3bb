"""The suite runs anywhere: no test reads a fixed path outside the repo and the model store."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# A literal absolute path handed to Path() or open(): such a test only runs on one machine
# (and a skipif on it hides that it never runs in CI).
_FIXED_PATH = re.compile(r"""\b(?:Path|open)\(\s*["']/(?:work|home|root|Users|mnt|opt|data|srv)/""")


def test_no_test_depends_on_a_fixed_path_outside_the_repo():
    offenders = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if _FIXED_PATH.search(line)
    ]
    assert offenders == []


def test_test_modules_have_unique_names():
    # The test folders are not packages: pytest imports each module by its basename, so two
    # test_x.py in different folders stop the whole collection ("import file mismatch").
    names: dict[str, list[str]] = {}
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        names.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert {name: paths for name, paths in names.items() if len(paths) > 1} == {}
