"""README's examples do what it says: the Python one prints every run, as the CLI does."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

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
    one = run_cli("tree", str(ROOT / "sample_traces" / "odd_trace.jsonl"), "--run", "run-a")
    assert ran.stdout.endswith(one.stdout)
    trees = ran.stdout[: len(ran.stdout) - len(one.stdout)]
    assert cli.stdout.startswith(trees)  # the same trees; the command then says why
    assert cli.stdout[len(trees) :] == (
        '\nrun run-b: outcome failed:child\n  began in agent billing at depth 1 (AGENT_FAILED): "billing failed"\n'
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


# The lines README.md marks `not run:` (in their comment), by their command's first words: each
# needs what the suite's machine may not have (the network, a Spark server, a
# shared folder), runs until stopped, or is the suite's own setup.
NOT_RUN = [
    "make demo",
    "make test",
    "make notebook",
    "pip install opentelemetry-sdk",
    "tracekit fleet --lake lake/ --engine spark",
    "tracekit serve --db c1.duckdb",
    "tracekit simulate --events 5000000",
]


def _dollar_lines() -> list[str]:
    """Every ``$`` line of README.md's console blocks, in order."""
    blocks = re.findall(r"```console\n(.*?)```", README, flags=re.S)
    return [line[2:] for block in blocks for line in block.splitlines() if line.startswith("$ ")]


def _not_run(line: str) -> bool:
    """The line's comment says ``not run:`` and why."""
    return re.search(r"#.*\bnot run: \S", line) is not None


def test_the_readme_skips_only_the_lines_it_says_why() -> None:
    skipped = [line for line in _dollar_lines() if _not_run(line)]
    assert len(skipped) == len(NOT_RUN)
    for line, name in zip(skipped, NOT_RUN, strict=True):
        assert line.startswith(name), (line, name)
    assert not [line for line in README.splitlines() if line.startswith("```\n$ ")]
    # no placeholder a newcomer cannot run as written
    for word in ("traces/ ", "yesterday.jsonl", "run-9c21", "spans.otlp.jsonl", "my_agents.py"):
        assert word not in README, word


def _script(lines: list[str], rcs: Path, port: int) -> str:
    """The README's lines as one bash script: each line's exit code into ``rcs``.

    A ``tracekit serve ... &`` line gets a free port (the suite may run beside
    another collector) and is waited for until its sidecar says it listens.
    """
    out = ["source .venv/bin/activate", "trap 'kill $(jobs -p) 2>/dev/null' EXIT"]
    for n, line in enumerate(lines):
        if _not_run(line):
            continue
        serve = re.match(r"tracekit serve --db (\S+) &", line)
        if serve:
            line = line.replace(" &", f" --port {port} &", 1)
        out.append(line)
        out.append(f'echo "{n} $?" >> {rcs}')
        if serve:
            sidecar = f"{serve.group(1)}.server.json"
            out.append(f"for _ in $(seq 600); do [ -e {sidecar} ] && break; sleep 0.1; done")
    return "\n".join(out) + "\n"


@pytest.mark.slow
def test_every_readme_line_runs_after_the_demo_in_a_new_shell(tmp_path: Path) -> None:
    """``make demo`` (its script, in the suite's venv), then every ``$`` line in order: exit 0.

    The shell starts with a bare PATH and no profile, in a fresh copy of the
    working tree's files the README uses; nothing reaches the network.
    """
    import socket

    venv = Path(sys.executable).parent.parent
    work = tmp_path / "clone"
    work.mkdir()
    (work / ".venv").symlink_to(venv)
    for name in ("sample_traces", "examples"):
        (work / name).symlink_to(ROOT / name)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "NO_COLOR": "1"}
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    demo = subprocess.run(
        ["bash", "examples/demo.sh"], capture_output=True, text=True, cwd=work, env=env, timeout=900
    )
    assert demo.returncode == 0, demo.stderr[-3000:]
    assert (work / "demo.duckdb").exists() and (work / "demo" / "fleet.jsonl").exists()
    shown = demo.stdout.splitlines()
    assert "  tracekit tree 8ec86aaf08bad3fa --db demo.duckdb" in "\n".join(shown)
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    lines = _dollar_lines()
    rcs = tmp_path / "rcs"
    ran = subprocess.run(
        ["bash", "--noprofile", "--norc", "-c", _script(lines, rcs, port)],
        capture_output=True,
        text=True,
        cwd=work,
        env=env,
        timeout=1200,
    )
    assert "Traceback" not in ran.stderr, ran.stderr[-3000:]
    codes = dict(line.split() for line in rcs.read_text().splitlines())
    failed = {lines[int(n)]: rc for n, rc in codes.items() if rc != "0"}
    assert not failed, (failed, ran.stderr[-3000:])
    assert len(codes) == len(lines) - len(NOT_RUN)  # every line ran


def test_the_distribution_name_is_the_documented_one() -> None:
    """pyproject's name is ours on PyPI; the command and the import keep the name tracekit."""
    import importlib.metadata
    import tomllib

    from tracekit._util.extras import DISTRIBUTION

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION == "tracekit-agents"
    assert project["scripts"] == {"tracekit": "tracekit.cli:main"}
    assert f"pip install {DISTRIBUTION}" in README
    installs = [
        line
        for doc in [README, *(p.read_text() for p in (ROOT / "docs").glob("*.md"))]
        for line in re.findall(r"pip install '([^'\[]+)\[", doc)
    ]
    assert installs and set(installs) == {DISTRIBUTION}, installs
    entry = importlib.metadata.distribution(DISTRIBUTION).entry_points
    assert [e.value for e in entry if e.name == "tracekit"] == ["tracekit.cli:main"]


def test_jupyter_is_one_step() -> None:
    """The notebook extra brings JupyterLab; ``make notebook`` installs it and opens it."""
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    notebook = extras["optional-dependencies"]["notebook"]
    assert any(dep.startswith("jupyterlab") for dep in notebook), notebook
    dry = subprocess.run(
        ["make", "--no-print-directory", "-n", "-B", "notebook"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=30,
    )
    assert dry.returncode == 0, dry.stderr
    assert ".venv/bin/python -m pip install -q -e '.[notebook]'" in dry.stdout
    assert dry.stdout.rstrip().endswith(".venv/bin/jupyter lab notebooks/")
    assert "make notebook" in README and "'tracekit-agents[notebook]'" in README


def test_make_demo_brings_what_tracekit_serve_needs() -> None:
    """Every module the collector imports comes with tracekit itself, but gRPC (an extra)."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = {re.split(r"[<>=\[ ]", dep)[0] for dep in project["dependencies"]}
    served = set()
    for path in (ROOT / "tracekit" / "server").glob("*.py"):
        served |= set(re.findall(r"^\s*(?:import|from) (\w+)", path.read_text(), flags=re.M))
    needed = {
        "starlette": "starlette",
        "uvicorn": "uvicorn",
        "opentelemetry": "opentelemetry-proto",
    }
    assert {needed[m] for m in served & set(needed)} <= base, served
    assert "protobuf" in base
    assert project["optional-dependencies"]["serve"] == ["grpcio>=1.60"]
