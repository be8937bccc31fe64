"""Build a ``review-gate backtest --cases`` file from a local checkout of BugsInPy.

BugsInPy (https://github.com/soarsmu/BugsInPy) holds real bugs of Python projects, each
with its fix as a git diff (``projects/NAME/bugs/N/bug_patch.txt``). The fix reversed
reintroduces the bug: a change a reviewer should block. The fix itself is a change it
should allow. For every bug this writes both diffs next to the cases file and one line each:

    {"id": "ansible-1-bug", "label": "block", "diff": "diffs/ansible-1-bug.diff", ...}
    {"id": "ansible-1-fix", "label": "allow", "diff": "diffs/ansible-1-fix.diff", ...}

review-gate ships none of this data: clone BugsInPy yourself, then

    git clone --depth 1 https://github.com/soarsmu/BugsInPy
    python examples/bugsinpy_cases.py BugsInPy cases/bugsinpy.jsonl [--limit 50]
    review-gate backtest --cases cases/bugsinpy.jsonl --model gpt-4o-mini --max-cost 5

A reviewer sees only the diff, not the project at its base: a bug that needs more of the
file to see is a hard case for it, and the report's catch rate says how hard.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

HUNK = re.compile(rb"^@@ -(\d+(?:,\d+)?) \+(\d+(?:,\d+)?) @@(.*)$")
#: header lines whose old and new forms swap when a diff is reversed
SWAPS = (
    (b"new file mode", b"deleted file mode"),
    (b"rename from", b"rename to"),
    (b"copy from", b"copy to"),
    (b"old mode", b"new mode"),
)


def _flush(minus: list[bytes], plus: list[bytes], out: list[bytes]) -> None:
    out.extend(minus)
    out.extend(plus)
    minus.clear()
    plus.clear()


def _header(line: bytes) -> bytes:
    for old, new in SWAPS:
        if line.startswith(old):
            return new + line[len(old) :]
        if line.startswith(new):
            return old + line[len(new) :]
    if line.startswith(b"index ") and b".." in line:
        ids, _, mode = line[len(b"index ") :].partition(b" ")
        before, _, after = ids.partition(b"..")
        return b"index " + after + b".." + before + (b" " + mode if mode else b"")
    return line


def reverse(diff: bytes) -> bytes:
    """The diff that undoes ``diff``: sides, hunk ranges and +/- lines swapped, removed lines
    first in each change, as git writes them."""
    out: list[bytes] = []
    minus: list[bytes] = []
    plus: list[bytes] = []
    lines = diff.split(b"\n")
    index = 0
    while index < len(lines):
        line = lines[index]
        if (
            line.startswith(b"--- ")
            and index + 1 < len(lines)
            and lines[index + 1].startswith(b"+++ ")
        ):
            _flush(minus, plus, out)
            old, new = line[4:], lines[index + 1][4:]
            out += [b"--- " + _side(new, b"a/"), b"+++ " + _side(old, b"b/")]
            index += 2
            continue
        if (hunk := HUNK.match(line)) is not None:
            _flush(minus, plus, out)
            out.append(b"@@ -%s +%s @@%s" % (hunk.group(2), hunk.group(1), hunk.group(3)))
        elif line.startswith(b"+"):
            minus.append(b"-" + line[1:])
        elif line.startswith(b"-"):
            plus.append(b"+" + line[1:])
        elif line.startswith(b"\\") and (minus or plus):
            (plus if plus else minus).append(line)  # "\\ No newline" follows its line
        else:
            _flush(minus, plus, out)
            out.append(_header(line) if not line.startswith(b" ") else line)
        index += 1
    _flush(minus, plus, out)
    return b"\n".join(out)


def _side(path: bytes, prefix: bytes) -> bytes:
    """``a/x`` as ``b/x`` (and back); ``/dev/null`` stays."""
    if path == b"/dev/null":
        return path
    return prefix + path[2:] if path[:2] in (b"a/", b"b/") else path


def build(root: Path, out: Path, limit: int | None = None) -> int:
    """Write the cases file ``out`` (and its diffs) from the BugsInPy checkout ``root``."""
    patches = sorted((root / "projects").glob("*/bugs/*/bug_patch.txt"))[:limit]
    folder = out.parent / "diffs"
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for patch in patches:
        project, number = patch.parts[-4], patch.parts[-2]
        fix = patch.read_bytes()
        for kind, label, data in (("bug", "block", reverse(fix)), ("fix", "allow", fix)):
            name = f"{project}-{number}-{kind}"
            (folder / f"{name}.diff").write_bytes(data)
            source = f"BugsInPy {project} bug {number}: the fix" + (
                " reversed (reintroduces the bug)" if kind == "bug" else ""
            )
            lines.append(
                {"id": name, "label": label, "diff": f"diffs/{name}.diff", "source": source}
            )
    out.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return len(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description="BugsInPy -> review-gate backtest --cases")
    parser.add_argument("bugsinpy", type=Path, help="a local checkout of BugsInPy")
    parser.add_argument("out", type=Path, help="the cases file to write (JSON Lines)")
    parser.add_argument("--limit", type=int, help="the first N bugs only")
    args = parser.parse_args()
    count = build(args.bugsinpy, args.out, args.limit)
    print(f"wrote {count} cases to {args.out}")


if __name__ == "__main__":
    main()
