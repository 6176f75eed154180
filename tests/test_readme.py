"""README's examples do what it says: the Python one prints every run, as the CLI does."""

from __future__ import annotations

import re
import subprocess
import sys

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
