"""The gate's own SSE reader, diff splitter, strict JSON loader and atomic write, each
against the library that does the same job (issue 35: keep a hand-written part only
where it still holds against the library).

In the same process, best of ``--rounds`` (CPU time of this process), on inputs built
here:

* **SSE**: 4 MiB of an OpenAI-style event stream fed in 4 KiB chunks, through
  :class:`gate.reviewers.sse.SSEParser` and through httpx-sse's decoder
  (``httpx_sse._decoders.SSEDecoder``, the lines split as ``httpx_sse.iter_sse`` has
  httpx split them: text decoded with replacement, then ``splitlines``);
* **diff**: bench/review_bench.py's diff of ``--diff-mib`` MiB split into its file
  sections by :func:`gate.diff.split_diff` and parsed by ``unidiff.PatchSet``;
* **JSON**: a 4 MiB provider frame list read by :func:`gate.safe.strictjson.loads` and
  by ``json.loads`` with the same duplicate-key and constant hooks, without the depth
  scan and the UTF-8 check (what the standard library gives with hooks alone);
* **atomic write**: ``--files`` writes of 64 KiB by :func:`gate.safe.atomic.atomic_write`
  and by ``atomicwrites.atomic_write`` (which neither reads the file back nor keeps a
  mode).

A library that is not installed is reported as such (none is a dependency of the gate):

    pip install httpx-sse unidiff atomicwrites   # into a scratch environment
    python bench/libraries.py [--rounds 5] [--diff-mib 8] [--files 200]
"""

from __future__ import annotations

import argparse
import codecs
import importlib.util
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from review_bench import make_diff

from gate.diff import _split_diff, split_diff
from gate.errors import GateError
from gate.reviewers.sse import SSEParser
from gate.safe import atomic, strictjson

MIB = 1024 * 1024


def best(fn: Callable[[], object], rounds: int) -> float:
    """The least CPU seconds ``fn`` took over ``rounds`` calls."""
    times = []
    for _ in range(rounds):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def sse_stream(size: int) -> bytes:
    frames = []
    total, n = 0, 0
    while total < size:
        delta = json.dumps({"choices": [{"delta": {"content": f"token {n} of the answer "}}]})
        frame = f"data: {delta}\n\n".encode()
        frames.append(frame)
        total += len(frame)
        n += 1
    return b"".join(frames) + b"data: [DONE]\n\n"


def chunks(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def gate_sse(parts: list[bytes]) -> int:
    parser = SSEParser()
    return sum(len(parser.feed(part)) for part in parts)


def library_sse(parts: list[bytes]) -> int:
    """httpx-sse's ``EventSource.iter_sse`` minus the socket: httpx's text decoding
    (UTF-8, errors replaced), then httpx-sse's line and event decoders."""
    decoders = importlib.import_module("httpx_sse._decoders")
    text = codecs.getincrementaldecoder("utf-8")(errors="replace")
    lines, events = decoders.SSELineDecoder(), decoders.SSEDecoder()
    count = 0
    for part in parts:
        for line in lines.decode(text.decode(part)):
            if events.decode(line.rstrip("\n")) is not None:
                count += 1
    return count


def json_hooks(text: bytes) -> Any:
    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                raise ValueError(f"duplicate key {key}")
            out[key] = value
        return out

    def constant(name: str) -> Any:
        raise ValueError(name)

    return json.loads(text, object_pairs_hook=pairs, parse_constant=constant)


def json_document(size: int) -> bytes:
    frame = {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"content": "x" * 40}}]}
    one = json.dumps(frame)
    return ("[" + ",".join([one] * (size // (len(one) + 1))) + "]").encode()


def has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def row(name: str, gate_s: float, library: str, library_s: float | None) -> None:
    if library_s is None:
        print(f"{name:13} gate {gate_s * 1e3:8.1f} ms   {library}: not installed")
        return
    ratio = gate_s / library_s
    print(f"{name:13} gate {gate_s * 1e3:8.1f} ms   {library} {library_s * 1e3:8.1f} ms   "
          f"gate/library {ratio:.2f}")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--diff-mib", type=int, default=8)
    parser.add_argument("--files", type=int, default=200)
    args = parser.parse_args(argv)

    parts = chunks(sse_stream(4 * MIB), 4096)
    assert gate_sse(parts) == (library_sse(parts) if has("httpx_sse") else gate_sse(parts))
    row(
        "SSE 4 MiB",
        best(lambda: gate_sse(parts), args.rounds),
        "httpx-sse",
        best(lambda: library_sse(parts), args.rounds) if has("httpx_sse") else None,
    )

    diff = make_diff(args.diff_mib * MIB)
    library_diff = None
    if has("unidiff"):
        unidiff = importlib.import_module("unidiff")
        text = diff.decode("utf-8")
        assert len(unidiff.PatchSet(text)) == len(split_diff(diff))
        library_diff = best(lambda: unidiff.PatchSet(text), args.rounds)
    gate_diff = best(lambda: _split_diff.__wrapped__(diff), args.rounds)  # unremembered
    row(f"diff {args.diff_mib} MiB", gate_diff, "unidiff", library_diff)

    document = json_document(4 * MIB)
    assert strictjson.loads(document, what="bench", error=GateError) == json_hooks(document)
    row(
        "JSON 4 MiB",
        best(lambda: strictjson.loads(document, what="bench", error=GateError), args.rounds),
        "json.loads+hooks",
        best(lambda: json_hooks(document), args.rounds),
    )

    payload = b"x" * 65536
    with tempfile.TemporaryDirectory(prefix="rg-lib-") as tmp:
        folder = Path(tmp)

        def gate_writes() -> None:
            for n in range(args.files):
                atomic.atomic_write(folder / f"gate-{n}", payload)

        def library_writes() -> None:
            atomic_write = importlib.import_module("atomicwrites").atomic_write
            for n in range(args.files):
                with atomic_write(folder / f"lib-{n}", mode="wb", overwrite=True) as handle:
                    handle.write(payload)

        row(
            f"{args.files} writes",
            best(gate_writes, args.rounds),
            "atomicwrites",
            best(library_writes, args.rounds) if has("atomicwrites") else None,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
