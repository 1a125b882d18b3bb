"""CI runs exactly the README's two set-up commands."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ci_runs_the_two_readme_commands_verbatim():
    readme = (ROOT / "README.md").read_text()
    setup = readme.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.+?)\n```", setup)
    assert len(commands) == 2
    ci = (ROOT / ".ci" / "run").read_text()
    install, open_quickstart = commands[0].rsplit(" && ", 1)
    # JupyterLab waits for a person; CI runs the same notebook headless instead.
    assert install in ci
    assert open_quickstart == ".venv/bin/jupyter lab notebooks/01-quickstart.ipynb"
    assert ".venv/bin/jupyter execute notebooks/01-quickstart.ipynb" in ci
    assert commands[1] in ci
