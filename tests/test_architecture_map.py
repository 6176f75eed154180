"""docs/architecture.md's folder map names every module of the package, under its package."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "tracekit"


def _entries() -> dict[str, str]:
    """Each top-level entry of the map (``store/``, ``events.py``) and its text, nested lines too."""
    doc = (ROOT / "docs" / "architecture.md").read_text()
    block = doc.split("```\ntracekit/\n", 1)[1].split("```", 1)[0]
    entries: dict[str, str] = {}
    name = ""
    for line in block.splitlines():
        head = re.match(r"^  (\S+)", line)
        if head:
            name = head.group(1)
        entries[name] = entries.get(name, "") + line + "\n"
    return entries


def test_every_module_is_on_the_map() -> None:
    entries = _entries()
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).parts
        if len(parts) == 1:
            if path.name not in entries:
                missing.append(path.name)
            continue
        text = entries.get(parts[0] + "/", "")
        for folder in parts[1:-1]:  # a sub-package is named on its own line
            if not re.search(rf"^\s+{re.escape(folder)}/", text, flags=re.M):
                missing.append("/".join(parts[:-1]) + "/")
        if path.stem != "__init__" and not re.search(rf"\b{re.escape(path.stem)}\b", text):
            missing.append("/".join(parts))
    assert not missing, f"not on the map in docs/architecture.md: {sorted(set(missing))}"
