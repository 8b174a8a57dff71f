"""Print one of the README's set-up commands, so that CI runs it exactly as written.

The README's block "Set-up and the two commands" holds each command under a comment line
(``# main job: ...``, ``# test suite``); ``python .ci/readme_command.py "main job"`` prints the
command line under the comment that starts with the given words, and exits 1 if there is none.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def command(label: str, text: str | None = None) -> str:
    """The line under the README's ``# <label>...`` comment in a bash block."""
    text = README.read_text() if text is None else text
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        lines = block.splitlines()
        for i, line in enumerate(lines[:-1]):
            if line.startswith("# ") and line[2:].startswith(label):
                return lines[i + 1].strip()
    raise SystemExit(f"README.md has no command under a '# {label}' comment")


if __name__ == "__main__":
    print(command(sys.argv[1]))
