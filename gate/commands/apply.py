"""``review-gate apply``: apply an agent's write tool result only when it is provably whole."""

from __future__ import annotations

import argparse
import sys

NAME = "apply"
ORDER = 60
HELP = "apply an agent write tool result only when its length and SHA-256 prove it whole"
DESCRIPTION = """\
Apply one agent tool result (JSON) under --root:

  {"tool": "write_file", "path": ..., "content_length": N, "sha256": HEX,
   "encoding": "utf-8" | "base64", "content": ...,
   "stream_end_reason": "trailer" (optional), "apply_id": ... (optional)}
  {"tool": "delete_path", "path": ..., "apply_id": ... (optional)}

Length and SHA-256 are of the decoded bytes. A write lands (temp file, fsync,
rename, read back) only when both match and the stream ended by its trailer.
A short, cut or corrupt payload writes nothing, is recorded in
.apply/incomplete, and prints the hint lines an agent loop should inject.
While a path is listed in any marker above it, delete_path of it (by any
alias, or of a folder holding it) is refused, and so is deleting a folder that
holds .git or .apply at any depth. The marker lives at the top of the git work
tree holding the path (a nested work tree keeps its own), so its pre-commit
hook sees it; outside a work tree, in --root. A name over NAME_MAX or a path
over PATH_MAX is refused as path_too_long.

Output: exactly one log line on stderr,
  apply path=... promised=N written=M end=... incomplete=... digest_ok=...
        received=N outcome=... reason=...   (one line; wrapped here)
and on stdout the hint lines, then (unless ok) apply.detail=<the cause, one
line>; with --json, stdout is the whole record instead (detail included).

exit codes: 0 apply.ok, 1 apply.incomplete / apply.corrupt, 2 usage, 3 apply.refused"""

MAX_RESULT_BYTES = 512 * 1024 * 1024


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("result", metavar="RESULT", help="tool result JSON file, or - for stdin")
    parser.add_argument(
        "--root", default=".", help="folder every path is confined to (default: current folder)"
    )
    parser.add_argument("--json", action="store_true", help="print the whole record as JSON")


def run(args: argparse.Namespace) -> int:
    from gate.apply import Outcome, apply_tool_result
    from gate.commands._io import read_input, say, say_json

    raw = read_input(args.result, what="tool result", limit=MAX_RESULT_BYTES)
    result = apply_tool_result(raw, args.root)
    say(result.log_line(), err=True)
    if args.json:
        say_json(result.to_json(), indent=2)
    else:
        for line in result.hints():
            say(line)
        if result.outcome is not Outcome.OK:
            say(result.detail_line())
    sys.stdout.flush()
    return result.exit_code
