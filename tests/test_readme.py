"""README's examples do what it says: the Python one prints every run, as the CLI does."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests._tree_helpers import ROOT, run_cli

README = (ROOT / "README.md").read_text()


def _python_block(containing: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    return next(block for block in blocks if containing in block)


def test_the_python_tree_example_prints_every_run_as_the_cli_does() -> None:
    code = _python_block("describe_forest")
    ran = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert ran.returncode == 0, ran.stderr
    cli = run_cli("tree", str(ROOT / "sample_traces" / "odd_trace.jsonl"))
    assert cli.stdout.count("\nrun ") + cli.stdout.startswith("run ") >= 2  # several runs
    assert ran.stdout.startswith(cli.stdout)
    assert (
        ran.stdout[len(cli.stdout) :]
        == run_cli("tree", str(ROOT / "sample_traces" / "odd_trace.jsonl"), "--run", "run-a").stdout
    )


def test_every_tracekit_subcommand_the_readme_uses_exists() -> None:
    used = set(re.findall(r"^\$ tracekit (\w+)", README, flags=re.M))
    assert used, "README shows tracekit commands"
    for command in sorted(used):
        assert run_cli(command, "--help").returncode == 0, command


def _quick_start() -> tuple[list[str], str]:
    """The Quick start's commands (``$ ...``) and the output it shows after them."""
    section = README.split("## Quick start", 1)[1]
    block = re.search(r"```console\n(.*?)```", section, flags=re.S)
    assert block is not None
    lines = block.group(1).splitlines()
    commands = [line[2:] for line in lines if line.startswith("$ ")]
    shown = "\n".join(line for line in lines if not line.startswith("$ "))
    return commands, shown + "\n"


def test_the_quick_start_runs_as_written_in_a_new_shell(tmp_path: Path) -> None:
    """After the two commands, a new shell runs the README's lines and sees its tree.

    The venv is the one the suite runs in: ``.venv`` under ``make test``.
    The shell starts with a bare PATH (no venv on it) and no profile.
    """
    commands, shown = _quick_start()
    assert commands[0].startswith("source .venv/bin/activate")
    venv = Path(sys.executable).parent.parent
    work = tmp_path / "clone"
    work.mkdir()
    (work / ".venv").symlink_to(venv)  # the clone's .venv, wherever the suite's is
    (work / "sample_traces").symlink_to(ROOT / "sample_traces")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "NO_COLOR": "1"}
    if "PYTHONPATH" in os.environ:  # a worktree tested against a shared venv
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    ran = subprocess.run(
        ["bash", "--noprofile", "--norc", "-c", "\n".join(["set -e", *commands])],
        capture_output=True,
        text=True,
        cwd=work,
        env=env,
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == shown


def test_make_demo_installs_no_dev_extras() -> None:
    """``make demo`` needs tracekit alone; the dev extras are ``make test``'s."""
    dry = subprocess.run(
        ["make", "-n", "-B", "demo"], capture_output=True, text=True, cwd=ROOT, timeout=30
    )
    assert dry.returncode == 0, dry.stderr
    installs = [line for line in dry.stdout.splitlines() if "pip install" in line]
    assert installs == [".venv/bin/python -m pip install -q -e ."], installs
    full = subprocess.run(
        ["make", "-n", "-B", "test"], capture_output=True, text=True, cwd=ROOT, timeout=30
    )
    assert "-e '.[dev," in full.stdout
