"""Every command of README.md runs from a fresh clone with nothing beside it.

The README's ``sh`` blocks are run in order, each command with ``bash`` and exit status 0, in a copy of
the repository's tracked files (as a clone has them: no ``out/``, and no ``../shared`` beside the copy),
with this checkout's ``.venv`` linked in. Left out, and why:

- ``make demo`` / ``make test``: the set-up wrappers (CI runs the suite itself); ``make demo`` is
  ``.venv/bin/kcontroller demo --overwrite`` after the set-up, which is run in its place.
- lines that name a Spark cluster (``spark://``): they need one.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SH_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.S | re.M)
SKIP = {"make test": None, "make demo": ".venv/bin/kcontroller demo --overwrite"}


def readme_commands(text: str) -> list[str]:
    """The commands of the README's ``sh`` blocks, continuation lines joined, trailing comments removed."""
    commands = []
    for block in SH_BLOCK.findall(text):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            command = re.sub(r"\s+#.*$", "", line).strip()
            if command and not command.startswith("#"):
                commands.append(command)
    return commands


def test_the_readme_commands_are_found():
    commands = readme_commands((ROOT / "README.md").read_text(encoding="utf-8"))
    assert commands[:2] == ["make demo", "make test"]
    assert any(c.startswith(".venv/bin/kcontroller audit") for c in commands)
    assert not [c for c in commands if "../shared" in c]


def _fresh_copy(dest: Path) -> None:
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in tracked.decode().split("\0"):
        if not name or not (ROOT / name).is_file():
            continue
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, dest / name)
    # files of this change not committed yet are part of the README's clone too
    for name in ("README.md", "examples/reassign-orders.json"):
        shutil.copy2(ROOT / name, dest / name)
    os.symlink(ROOT / ".venv", dest / ".venv")


@pytest.mark.slow
def test_every_readme_command_runs_in_a_fresh_clone(tmp_path):
    if not (ROOT / ".venv" / "bin" / "kcontroller").exists():
        pytest.skip("no .venv/bin/kcontroller in this checkout (make setup creates it)")
    clone = tmp_path / "clone" / "kcontroller"
    clone.mkdir(parents=True)
    _fresh_copy(clone)
    assert not (clone.parent / "shared").exists()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "COV"))}
    for command in readme_commands((clone / "README.md").read_text(encoding="utf-8")):
        if command in SKIP:
            command = SKIP[command]
            if command is None:
                continue
        if "spark://" in command:
            continue
        done = subprocess.run(["bash", "-c", command], cwd=clone, env=env, capture_output=True, text=True,
                              timeout=900)
        assert done.returncode == 0, f"{command}\nexit {done.returncode}\n{done.stderr[-2000:]}"
        assert "Traceback" not in done.stderr, f"{command}\n{done.stderr[-2000:]}"


def test_no_example_points_outside_the_repository():
    for path in sorted((ROOT / "examples").rglob("*")):
        if path.is_file() and path.suffix in (".yaml", ".yml", ".json"):
            assert "../shared" not in path.read_text(encoding="utf-8"), path
