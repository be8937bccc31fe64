"""Small input/output helpers shared by the sub-commands.

:func:`say` and :func:`say_json` are how a command prints text: every line
redacted (:mod:`gate.safe.redact`) and rendered safe (:func:`gate.safe.untrusted.lines`:
no control or bidi character, no workflow command), because what a command
prints holds the reviewer's words, a provider's error text or file names.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

from gate.errors import UsageError
from gate.safe import redact, untrusted

#: one writer at a time: a review in chunks reports each attempt from its worker thread
_SAY = threading.Lock()


def say(text: str = "", *, err: bool = False) -> None:
    """Print ``text`` to standard output (or error): redacted, escaped, neutral, and whole:
    the line and its end are one write under a lock (``print`` writes them apart, so two
    chunks' workers could run their lines together)."""
    stream = sys.stderr if err else sys.stdout
    line = untrusted.lines(text) + "\n"
    with _SAY:
        stream.write(line)
        if err:
            stream.flush()


def say_json(value: Any, *, indent: int | None = None) -> None:
    """Print a JSON document to standard output, every string redacted.

    ``ensure_ascii`` escapes every control, bidi and non-ASCII character; ``##[``
    (a workflow command anywhere in a line) is written ``#\\u0023[``, still the
    same JSON string.
    """
    text = json.dumps(redact.redact_value(value), indent=indent, sort_keys=True)
    print(text.replace("##[", "#\\u0023["))


def read_input(
    name: str, *, what: str = "input", limit: int | None = None, truncate: bool = False
) -> bytes:
    """Read a file, or standard input for ``-``; a missing file is a usage error.

    Past ``limit`` bytes: a usage error, or with ``truncate`` the first
    ``limit + 1`` bytes (for a verifier that must judge, not refuse, an oversize input).
    """
    if name == "-":
        data = sys.stdin.buffer.read() if limit is None else sys.stdin.buffer.read(limit + 1)
    else:
        try:
            with Path(name).open("rb") as handle:
                data = handle.read() if limit is None else handle.read(limit + 1)
        except FileNotFoundError as err:
            raise UsageError(f"{what} file {name!r} does not exist") from err
        except IsADirectoryError as err:
            raise UsageError(f"{what} {name!r} is a directory, not a file") from err
        except OSError as err:
            raise UsageError(f"cannot read {what} {name!r}: {err.strerror}") from err
    if limit is not None and len(data) > limit and not truncate:
        raise UsageError(f"{what} {name!r} is larger than {limit} bytes")
    return data


#: the most of a --public-key file read (a PEM Ed25519 public key is 113 bytes)
MAX_KEY_BYTES = 64 * 1024


def read_public_key(name: str) -> bytes:
    """The PEM text of ``--public-key FILE`` (parsed by the caller); a missing, unreadable
    or oversized file is a usage error naming the option."""
    return read_input(name, what="--public-key", limit=MAX_KEY_BYTES)


def write_output(name: str | None, data: bytes) -> None:
    """Write bytes to a file (atomically) or to standard output for None/``-``."""
    if name is None or name == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    from gate.safe.atomic import atomic_write

    atomic_write(name, data)


def check_output_path(option: str, name: str | None) -> None:
    """Refuse an output path that cannot be written, before any work is done.

    Every command that writes a file calls this first, so an unwritable path is a
    usage error (exit 2) everywhere, never a blocking error found after the work.
    ``-`` (standard output) and None (not asked for) are always fine.
    """
    if name is None or name == "-":
        return
    path = Path(name)
    folder = path.parent
    problem = None
    if path.is_dir():
        problem = "is a directory; name a file in it"
    elif not folder.is_dir():
        problem = f"cannot be written: the folder {str(folder)!r} does not exist"
    elif not os.access(folder, os.W_OK | os.X_OK):
        problem = f"cannot be written: no permission to write in {str(folder)!r}"
    if problem is not None:
        raise UsageError(f"{option} {name!r} {problem}", reason="bad_output_path")
