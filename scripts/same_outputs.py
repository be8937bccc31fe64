"""The gate's outputs at two git revisions, compared byte for byte.

A change meant to leave behaviour alone (issue 35: the standard library instead of the
gate's own start-up shortcuts) proves it here. Each revision is checked out into its own
temporary ``git worktree`` and run with this interpreter (its installed packages) and
``PYTHONPATH`` at that tree, against that revision's own reviewer simulator
(``review-gate demo --serve`` on 127.0.0.1, one fixed port for both revisions):

* ``review --json --certificate --statement --sarif --commit`` of the bundled sample
  diff and of the bench diff (``bench/review_bench.py``'s 0.9 MB, reviewed in chunks),
  each answered by the simulator's ``healthy``, ``fail``, ``cut`` and ``echo`` models:
  standard output and error, the exit code, the certificate, the in-toto statement and
  the SARIF log;
* ``demo --json``: its report and every file it writes (the cases' certificates, the
  sample and large diffs).

Every gate process starts under :data:`PRELUDE`, which holds still what the code
takes from the machine: the wall clock (``datetime.now`` answers one fixed moment, so a
certificate's ``created_at`` and every digest over it repeat) and the ports the demo's
simulator and fault proxies ask the system for (port 0 becomes the next port of a fixed
sequence). What is left to mask is named in :data:`VOLATILE` (the elapsed seconds of an
attempt or a run, the run's temporary folder; the certificate's digest, checked first
to be the digest of the certificate beside it); standard error, where the chunks of a
review report as their threads finish, is compared as its sorted lines. The inputs are
written once, from the newer tree, and given to both.

    python scripts/same_outputs.py OLD NEW      (exit 0: every output the same, 1: not)

A revision is anything ``git rev-parse`` reads (``49652ce``, ``main``, ``HEAD``), or
``.`` for this checkout as it is (uncommitted changes included).
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN_TIMEOUT_S = 300.0
SERVE_FOR_S = 900
SERVE_READY_S = 30.0
COMMIT = "0123456789abcdef0123456789abcdef01234567"
MODELS = ("healthy", "fail", "cut", "echo")
#: the environment every gate run gets (and nothing of the caller's but PATH and HOME)
KEY = "same-outputs-key-0123456789"

#: the first port :data:`PRELUDE` hands out for a bind to port 0
FIRST_PORT = 46100
#: run before the gate in every process: a fixed clock, and ports in a fixed sequence
PRELUDE = f"""\
import datetime, os, runpy, socket, sys
class _Fixed(datetime.datetime):
    @classmethod
    def now(cls, tz=None):
        return cls(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc).astimezone(tz)
datetime.datetime = _Fixed
_bind, _next = socket.socket.bind, [{FIRST_PORT}]
def _fixed_bind(self, address):
    if isinstance(address, tuple) and address[1] == 0 and self.family == socket.AF_INET:
        self.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        address, _next[0] = (address[0], _next[0]), _next[0] + 1
    return _bind(self, address)
socket.socket.bind = _fixed_bind
sys.argv[0] = "review-gate"
runpy.run_module("gate", run_name="__main__", alter_sys=True)
"""

#: what no revision can hold still, masked the same on both sides before comparing
VOLATILE: tuple[tuple[re.Pattern[bytes], bytes], ...] = (
    # how long an attempt, a first byte or a run took
    (re.compile(rb'("(?:elapsed_s|first_byte_s|seconds)": ?)[0-9.e-]+'), rb"\1<s>"),
    (re.compile(rb"\b[0-9]+\.[0-9]+ ?s\b"), b"<s>"),
    # the run's temporary folder
    (re.compile(rb"/tmp/rg-same-[^/]*/runs/(?:old|new)/"), b"<run>/"),
)


def masked(data: bytes) -> bytes:
    for pattern, replacement in VOLATILE:
        data = pattern.sub(replacement, data)
    return data


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def checkout(revision: str, parent: Path) -> Iterator[Path]:
    """The tree of ``revision`` in a temporary worktree (``.``: this checkout)."""
    if revision == ".":
        yield ROOT
        return
    where = parent / f"tree-{len(list(parent.iterdir()))}"
    git = ["git", "-C", str(ROOT)]
    subprocess.run(
        [*git, "worktree", "add", "--detach", "--quiet", str(where), revision], check=True
    )
    try:
        yield where
    finally:
        subprocess.run([*git, "worktree", "remove", "--force", str(where)], check=False)


def gate_env(tree: Path, cache: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(Path.home()),
        "PYTHONPATH": str(tree),
        "PYTHONPYCACHEPREFIX": str(cache),
        "OPENAI_API_KEY": KEY,
        "COLUMNS": "100",
        "LC_ALL": "C.UTF-8",
        "TZ": "UTC",
    }


def gate(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-c", PRELUDE, *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )


@contextmanager
def simulator(env: dict[str, str], cwd: Path, port: int) -> Iterator[str]:
    """The revision's own local reviewer (``demo --serve``) on ``port``, until closed."""
    command = [sys.executable, "-c", PRELUDE, "demo", "--serve", "--port", str(port)]
    server = subprocess.Popen(
        [*command, "--for", str(SERVE_FOR_S)],
        env=env,
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        until = time.monotonic() + SERVE_READY_S
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1.0).close()
                break
            except OSError:
                if time.monotonic() > until or server.poll() is not None:
                    raise SystemExit(f"the simulator did not listen on 127.0.0.1:{port}") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.terminate()
        server.wait(timeout=30)


def outputs(tree: Path, work: Path, inputs: dict[str, Path], port: int) -> dict[str, bytes]:
    """Every output of the gate at ``tree``, by name."""
    env = gate_env(tree, work / "pycache")
    found: dict[str, bytes] = {}
    with simulator(env, work, port) as base_url:
        for diff_name, diff in inputs.items():
            for model in MODELS:
                name = f"review-{diff_name}-{model}"
                out = work / name
                out.mkdir()
                done = gate(
                    [
                        "review", "--diff", str(diff), "--base-url", base_url,
                        "--model", model, "--json", "--commit", COMMIT,
                        "--certificate", "certificate.json",
                        "--statement", "statement.json",
                        "--sarif", "findings.sarif",
                    ],
                    env,
                    out,
                )  # fmt: skip
                found[f"{name}/exit"] = str(done.returncode).encode()
                found[f"{name}/stdout"] = done.stdout
                found[f"{name}/stderr"] = done.stderr.replace(str(diff).encode(), b"<diff>")
                for path in sorted(out.iterdir()):
                    found[f"{name}/{path.name}"] = path.read_bytes()
                seal_digest(found, name)
    demo = work / "demo"
    demo.mkdir()
    done = gate(["demo", "--json", "--out", "out"], env, demo)
    found["demo/exit"] = str(done.returncode).encode()
    found["demo/stdout"] = done.stdout
    found["demo/stderr"] = done.stderr
    for path in sorted((demo / "out").iterdir()):
        found[f"demo/out/{path.name}"] = path.read_bytes()
    return found


def seal_digest(found: dict[str, bytes], name: str) -> None:
    """Check that the review's output and statement name its certificate's digest, then
    write that digest as ``<certificate>``: the certificate holds the elapsed seconds of
    each attempt, so its digest cannot repeat, and the certificate itself is compared."""
    certificate = found.get(f"{name}/certificate.json")
    if certificate is None:
        return
    digest = hashlib.sha256(certificate).hexdigest().encode()
    for output in ("stdout", "statement.json"):
        key = f"{name}/{output}"
        if digest not in found.get(key, b""):
            raise SystemExit(f"{key} does not name its certificate's digest")
        found[key] = found[key].replace(digest, b"<certificate>")


def write_inputs(folder: Path) -> dict[str, Path]:
    """The sample diff and the bench diff, written once for both revisions."""
    sys.path.insert(0, str(ROOT / "bench"))
    from review_bench import DIFF_BYTES, make_diff

    sample, bench = folder / "sample.diff", folder / "bench.diff"
    sample.write_bytes((ROOT / "gate" / "data" / "sample.diff").read_bytes())
    bench.write_bytes(make_diff(DIFF_BYTES))
    return {"sample": sample, "bench": bench}


def compare(old: dict[str, bytes], new: dict[str, bytes]) -> list[str]:
    """One line per output, and a diff of each that differs after masking."""
    lines: list[str] = []
    for name in sorted(old.keys() | new.keys()):
        if name not in old or name not in new:
            lines.append(f"DIFFERS  {name}: only at {'the new' if name in new else 'the old'}")
            continue
        before, after = masked(old[name]), masked(new[name])
        if name.endswith("/stderr"):  # threads finish in any order
            before, after = (b"\n".join(sorted(data.split(b"\n"))) for data in (before, after))
        if before == after:
            lines.append(f"same     {name} ({len(after)} bytes)")
            continue
        lines.append(f"DIFFERS  {name}")
        shown = difflib.unified_diff(
            before.decode("utf-8", "replace").splitlines(),
            after.decode("utf-8", "replace").splitlines(),
            "old",
            "new",
            lineterm="",
            n=1,
        )
        lines += [f"    {line}" for line in list(shown)[:40]]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", help="a revision (git rev-parse), or . for this checkout")
    parser.add_argument("new", help="a revision (git rev-parse), or . for this checkout")
    args = parser.parse_args(argv)
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="rg-same-") as tmp:
        base = Path(tmp)
        trees, works = base / "trees", base / "runs"
        trees.mkdir()
        works.mkdir()
        inputs = write_inputs(base)
        results = []
        for label, revision in (("old", args.old), ("new", args.new)):
            work = works / label
            work.mkdir()
            with checkout(revision, trees) as tree:
                results.append(outputs(tree, work, inputs, port))
    lines = compare(*results)
    print("\n".join(lines))
    differing = sum(line.startswith("DIFFERS") for line in lines)
    print(f"{len(results[0])} outputs at {args.old}, {len(results[1])} at {args.new}: "
          f"{differing} differ after masking {len(VOLATILE)} volatile patterns")  # fmt: skip
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
