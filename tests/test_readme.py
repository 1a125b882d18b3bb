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


def test_ci_runs_every_tutorial_in_the_venv_of_readme_command_1():
    ci = (ROOT / ".ci" / "run").read_text()
    command_1, command_2 = ci.index(".venv/bin/pip install -q -e '.[lab]'"), ci.index("'.[test]'")
    tutorials = ci.index("for notebook in notebooks/0*.ipynb")
    assert command_1 < tutorials < command_2  # before the test extra adds anything
    assert '.venv/bin/jupyter execute "$notebook"' in ci
