"""MC1 verification throughput, streaming and whole-buffer, against plain hashlib.sha256.

Builds one large envelope (default 64 MiB of UTF-8 text: hex digits, or with
``--text mixed`` prose with accented letters and CJK), then in the same process
and in alternating rounds (so machine noise hits all alike):

  baseline  hashlib.sha256 over the body, fed in the same chunk size;
  verifier  gate.decide.envelope.StreamVerifier fed the whole envelope in chunks;
  whole     hashlib.sha256 of the whole envelope in one call, against
            gate.decide.envelope.verify of the same bytes (one buffer, the content
            returned in place) and verify_text (the content as str: one decode);
  floors    the same work done bare with the standard library (a hash over a
            memoryview, bytes.isascii(), a UTF-8 decode, a copy), so a ratio
            can be read against what this machine allows.

Prints the throughputs (best of N rounds), each ratio baseline-time / verifier-time
(goal: >= 0.9 for the streaming completeness check and for whole-buffer verify),
each floor's ratio beside it, and the verifier's peak traced memory with and
without keeping the body.
With ``--clock cpu`` each row is timed in this process's CPU time (user and
system, page faults included) instead of wall time: on a shared machine other
processes then inflate neither side of a ratio.
Usage: python bench/verify_throughput.py [--mib 64] [--text hex|mixed] [--clock wall|cpu]
"""

from __future__ import annotations

import argparse
import codecs
import hashlib
import os
import time
import tracemalloc
from collections.abc import Callable

from gate.decide.envelope import UTF8_SLICE, StreamVerifier, seal, verify, verify_text

#: The clock every row is timed with (``--clock``): wall time, or this process's CPU time.
CLOCK: list[Callable[[], float]] = [time.perf_counter]


def chunks(data: bytes, size: int) -> list[bytes]:
    """Separate bytes objects, as a socket read delivers them."""
    return [data[i : i + size] for i in range(0, len(data), size)]


def time_hashlib(parts: list[bytes]) -> float:
    start = CLOCK[0]()
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part)
    digest.hexdigest()
    return CLOCK[0]() - start


def time_verifier(parts: list[bytes], limit: int, keep: bool) -> float:
    start = CLOCK[0]()
    verifier = StreamVerifier(max_size=limit, keep_body=keep)
    for part in parts:
        verifier.feed(part)
    verifier.finish()
    return CLOCK[0]() - start


def time_sha_whole(raw: bytes) -> float:
    start = CLOCK[0]()
    hashlib.sha256(raw).hexdigest()
    return CLOCK[0]() - start


def time_copy(raw: bytes) -> float:
    start = CLOCK[0]()
    b"".join((memoryview(raw)[1:],))
    return CLOCK[0]() - start


def time_floor_check(raw: bytes) -> float:
    """Bare: SHA-256 over a memoryview of the body, isascii(), and (only if not
    ASCII) a UTF-8 decode in the slices verify() uses. No copy."""
    start = CLOCK[0]()
    view = memoryview(raw)
    body = view[raw.index(b"\n") + 1 :]
    hashlib.sha256(body).hexdigest()
    if not raw.isascii():
        content, at = body[:-5], 0
        while at < len(content):
            end = at + UTF8_SLICE
            at += codecs.utf_8_decode(content[at:end], "strict", end >= len(content))[1]
    return CLOCK[0]() - start


def time_floor_text(raw: bytes) -> float:
    """Bare: SHA-256 over a memoryview of the body and one decode of the content."""
    start = CLOCK[0]()
    view = memoryview(raw)
    body = view[raw.index(b"\n") + 1 :]
    hashlib.sha256(body).hexdigest()
    str(body[:-5], "utf-8")
    return CLOCK[0]() - start


def time_floor_stream(parts: list[bytes]) -> float:
    """Bare: what keeping a streamed body costs at least: each part hashed and
    scanned for ASCII (a UTF-8 decode of a part that is not), then one join."""
    start = CLOCK[0]()
    digest, utf8 = hashlib.sha256(), codecs.getincrementaldecoder("utf-8")()
    for part in parts:
        digest.update(part)
        if not part.isascii():
            view = memoryview(part)
            for at in range(0, len(view), UTF8_SLICE):
                utf8.decode(view[at : at + UTF8_SLICE])
    digest.hexdigest()
    b"".join(parts)
    return CLOCK[0]() - start


def time_verify_text(raw: bytes, limit: int) -> float:
    start = CLOCK[0]()
    verify_text(raw, max_size=limit)
    return CLOCK[0]() - start


def time_verify_whole(raw: bytes, limit: int) -> float:
    start = CLOCK[0]()
    verify(raw, max_size=limit)
    return CLOCK[0]() - start


#: A line of UTF-8 prose: ASCII, two-byte (accents), three-byte (dash, CJK) sequences.
MIXED_LINE = "Grüße, naïve café — 漢字とかな, plain ASCII words in between.\n".encode()


def make_content(size: int, text: str) -> bytes:
    if text == "hex":
        return os.urandom(size // 2 + 1).hex().encode()[:size]
    whole = MIXED_LINE * (size // len(MIXED_LINE) + 1)
    return whole[:size].decode("utf-8", errors="ignore").encode()


def peak(parts: list[bytes], limit: int, keep: bool) -> int:
    tracemalloc.start()
    time_verifier(parts, limit, keep)
    _, top = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return top


def measure(args: argparse.Namespace) -> dict[str, float]:
    """Best time of each row over alternating rounds, and the body's size in MiB."""
    content = make_content(args.mib * 1024 * 1024, args.text)
    raw = seal(content)
    body = raw.split(b"\n", 1)[1]
    limit = len(body)
    raw_parts = chunks(raw, args.chunk_kib * 1024)
    body_parts = chunks(body, args.chunk_kib * 1024)
    rows: dict[str, list[float]] = {}
    steps: dict[str, Callable[[], float]] = {
        "base": lambda: time_hashlib(body_parts),
        "kept": lambda: time_verifier(raw_parts, limit, keep=True),
        "lean": lambda: time_verifier(raw_parts, limit, keep=False),
        "floor_stream": lambda: time_floor_stream(body_parts),
        "sha_whole": lambda: time_sha_whole(raw),
        "whole": lambda: time_verify_whole(raw, limit),
        "floor_check": lambda: time_floor_check(raw),
        "text": lambda: time_verify_text(raw, limit),
        "floor_text": lambda: time_floor_text(raw),
        "copy": lambda: time_copy(raw),
    }
    for _ in range(args.rounds):
        for name, step in steps.items():
            rows.setdefault(name, []).append(step())
    best = {name: min(times) for name, times in rows.items()}
    best["mib"] = len(body) / (1024 * 1024)
    best["peak_kept"] = peak(raw_parts, limit, True)
    best["peak_lean"] = peak(raw_parts, limit, False)
    best["limit"] = limit
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=64, help="envelope body size in MiB")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds (best is kept)")
    parser.add_argument("--chunk-kib", type=int, default=64, help="feed size in KiB")
    parser.add_argument(
        "--text", choices=("hex", "mixed"), default="hex", help="content: hex digits or prose"
    )
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="time rows by wall clock, or by this process's CPU time (steadier when shared)",
    )
    args = parser.parse_args()
    CLOCK[0] = time.process_time if args.clock == "cpu" else time.perf_counter
    t = measure(args)
    mib, b, hw = t["mib"], t["base"], t["sha_whole"]

    def row(label: str, seconds: float, baseline: float) -> None:
        print(f"{label:52s}{mib / seconds:8.1f} MiB/s  ratio {baseline / seconds:.3f}")

    print(
        f"envelope body: {mib:.1f} MiB of {args.text} text, chunks of {args.chunk_kib} KiB, "
        f"best of {args.rounds}, {args.clock} clock"
    )
    print(f"{'hashlib.sha256 (baseline)':52s}{mib / b:8.1f} MiB/s")
    row("StreamVerifier completeness only (keep_body=False):", t["lean"], b)
    row("StreamVerifier full, content kept + UTF-8 checked:", t["kept"], b)
    row("  floor: per part hash, isascii [+UTF-8]; one join:", t["floor_stream"], b)
    print(f"{'hashlib.sha256 of the whole envelope (baseline)':52s}{mib / hw:8.1f} MiB/s")
    row("verify() whole buffer, content in place, checked:", t["whole"], hw)
    row("  floor: bare sha256(view) + isascii() [+ UTF-8]:", t["floor_check"], hw)
    row("verify_text() whole buffer, content as one str:", t["text"], hw)
    row("  floor: bare sha256(view) + one str(view) decode:", t["floor_text"], hw)
    row("one copy of the envelope (fresh pages), for scale:", t["copy"], hw)
    print(
        f"peak traced memory keep_body: {t['peak_kept'] / 2**20:.1f} MiB"
        f" (bounded by max_size = {t['limit'] / 2**20:.1f} MiB)"
    )
    print(f"peak traced memory no body:   {t['peak_lean'] / 2**10:.1f} KiB")
    print(
        f"goal: completeness ratio >= 0.9: {'met' if b / t['lean'] >= 0.9 else 'NOT met'}; "
        "keeping the content adds one copy of the body (page faults dominate) and a UTF-8 check"
    )
    whole = hw / t["whole"]
    print(
        f"goal: whole-buffer verify ratio >= 0.9: {'met' if whole >= 0.9 else 'NOT met'} "
        f"({whole:.3f}; this machine's floor for the same work: {hw / t['floor_check']:.3f})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
