"""The examples run without a model key and `tracekit tree` shows the seed's trees."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tracekit.events import RunEnd, decode_event

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
TRACEKIT = shutil.which("tracekit", path=str(Path(sys.executable).parent))


def _run(tmp_path: Path, script: str, *args: str) -> tuple[str, str, Path]:
    """Run an example, then `tracekit tree` on its trace; return both outputs."""
    out = tmp_path / f"{script}.jsonl"
    ran = subprocess.run(
        [sys.executable, str(EXAMPLES / f"{script}.py"), "--out", str(out), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr
    # it says where its trace went, and how to look at it
    assert ran.stderr.splitlines()[-1] == f"trace appended to {out}: tracekit tree {out}"
    assert TRACEKIT is not None
    shown = subprocess.run(
        [TRACEKIT, "tree", "--color", "never", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    assert shown.stderr == ""  # nothing odd: every enter has its exit
    return ran.stdout, re.sub(r", [0-9.]+(ms|s|m)\)", ")", shown.stdout), out


ESCALATION = """\
hand_over -> billing (ok)
  sort
  escalate -> {desk} (ok)
{steps}
  summarise
"""


@pytest.mark.parametrize(
    ("args", "desk", "steps"),
    [
        (["I was charged twice for order 10248"], "refunds", "    decide"),
        (["--send-to", "refunds", "I was charged twice"], "refunds", "    decide"),
        (["Send my invoice again"], "invoices", "    find_invoice\n    resend"),
    ],
)
def test_escalation_desk(tmp_path: Path, args: list[str], desk: str, steps: str) -> None:
    answer, tree, _ = _run(tmp_path, "escalation_desk", *args)
    assert tree == ESCALATION.format(desk=desk, steps=steps)
    assert answer.startswith("Billing: ")


def test_escalation_desk_refuses_a_desk_by_name(tmp_path: Path) -> None:
    answer, tree, _ = _run(tmp_path, "escalation_desk", "--send-to", "payments", "Move my card")
    assert tree == (
        "hand_over -> billing (ok)\n"
        "  sort\n"
        "  escalate -> payments (refused AGENT_NOT_ALLOWED)\n"
        "  apologise\n"
        "outcome degraded\n"
        "began in agent payments at depth 2 (AGENT_NOT_ALLOWED):"
        " \"billing may not call 'payments' (allowed: invoices, refunds)\"\n"
    )  # the tree, then why the run ended as it did
    assert "AGENT_NOT_ALLOWED" in answer


@pytest.mark.parametrize(
    ("question", "desk", "steps"),
    [
        ("Who are our largest customers?", "sql", ["write_query", "run_query", "say"]),
        ("Summarise the refund policy.", "documents", ["search", "say"]),
        ("What does this company do?", "general", ["say"]),
    ],
)
def test_agent_orchestrator(tmp_path: Path, question: str, desk: str, steps: list[str]) -> None:
    _, tree, _ = _run(tmp_path, "agent_orchestrator", question)
    inner = "".join(f"  {s}\n" for s in steps)
    assert tree == f"list_desks\ndecide\ndelegate -> {desk} (ok)\n{inner}reply\n"


def test_recursion_circle(tmp_path: Path) -> None:
    answer, tree, out = _run(tmp_path, "recursion_circle")
    circle = "orders -> billing -> orders"
    assert answer.startswith(f"refused: {circle} (AGENT_RECURSION")
    assert tree == (
        "check_order\n"
        f"ask_billing -> billing (error AGENT_RECURSION <- AGENT_RECURSION in orders: {circle})\n"
        "  check_payment\n"
        f"  confirm_order -> orders (refused AGENT_RECURSION: {circle})\n"
        "outcome failed:recursion: circle billing -> orders -> billing"
        " (wrong by construction: it will happen again)\n"
        f'refused in agent orders at depth 2 (AGENT_RECURSION): "{circle}"\n'
    )
    end = decode_event(out.read_bytes().splitlines()[-1])
    assert isinstance(end, RunEnd) and end.failure == "delegation"
    assert end.error is not None and end.error.chain == ["orders", "billing", "orders"]


def test_fanout_subagents(tmp_path: Path) -> None:
    answer, tree, _ = _run(tmp_path, "fanout_subagents")
    assert answer.strip() == "['prices: found', 'reviews: found']"
    assert tree == (
        "fan_out -> prices (subagent, ok)\n  search\n  report\n"
        "fan_out -> reviews (subagent, ok)\n  search\n  report\n"
        "fan_out -> stock (subagent, cancelled)\n  search (error)\n"
        "outline\n"
        "compare\n"
        "outcome degraded\n"
        "began in step search of agent stock at depth 1; the agent went on\n"
    )


def test_lovia_triage(tmp_path: Path) -> None:
    answer, tree, _ = _run(tmp_path, "lovia_triage")
    assert answer.strip() == "billing: You will get 49 EUR back."
    assert tree == (
        "transfer_to_billing -> billing (handoff, ok)\n"
        "  lookup_invoice\n"
        "  ask_refunds -> refunds (ok)\n"
    )


def test_lovia_triage_without_lovia_says_what_to_install() -> None:
    """No lovia: one line naming the extra, exit 1, no traceback."""
    hide = (
        "import runpy, sys; sys.modules['lovia'] = None;"
        f" sys.path.insert(0, {str(EXAMPLES)!r}); sys.argv = ['lovia_triage.py'];"
        f" runpy.run_path({str(EXAMPLES / 'lovia_triage.py')!r}, run_name='__main__')"
    )
    ran = subprocess.run([sys.executable, "-c", hide], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 1
    assert ran.stderr.count("\n") == 1 and "Traceback" not in ran.stderr, ran.stderr
    assert "pip install 'tracekit-agents[lovia]'" in ran.stderr
