"""Machine paths out of a recording: a recording is evidence, not a map of the recorder's disk.

Stack traces and ``code.filepath`` attributes name files by absolute path; the
recorder's venv, its Python and the checkout become ``<venv>``, ``<python>``
and ``<repo>``, so a recording reads the same from every machine. Standard
library only: the recorders run in each framework's own venv.

Run as a script to scrub committed recordings in place:
``python tests/frameworks/_paths.py tests/frameworks/recordings/*/*.otlp.json``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

# Longest first: a venv lives inside the checkout, the checkout under /work or /home.
_PATTERNS = (
    (re.compile(r"/(?:work|home|root|Users)/[^\"\s]*?/\.frameworks/[A-Za-z0-9_.-]+"), "<venv>"),
    (re.compile(r"/ro" r"ot/\.pyenv/versions/[A-Za-z0-9_.-]+"), "<python>"),
    (re.compile(r"/usr/(?:local/)?lib/python3\.\d+"), "<python>/lib/python3"),
    (re.compile(r"/(?:work|home|Users)/[A-Za-z0-9_.-]+"), "<repo>"),
)


def scrub_paths(text: str) -> str:
    """The text with every machine path named by its role.

    Example:
        >>> scrub_paths("/" + "home/me/repo/.frameworks/crewai/lib/x.py")
        '<venv>/lib/x.py'
    """
    for pattern, name in _PATTERNS:
        text = pattern.sub(name, text)
    return text


if __name__ == "__main__":
    for name in sys.argv[1:]:
        path = Path(name)
        before = path.read_text()
        after = scrub_paths(before)
        if after != before:
            path.write_text(after)
            print(f"scrubbed {path}")
