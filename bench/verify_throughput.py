"""MC1 verification throughput, streaming and whole-buffer, against plain hashlib.sha256.

Builds one large envelope (default 64 MiB of UTF-8 text: hex digits, or with
``--text mixed`` prose with accented letters and CJK), then in the same process
and in alternating rounds (so machine noise hits all alike):

  baseline  hashlib.sha256 over the body, fed in the same chunk size;
  verifier  gate.decide.envelope.StreamVerifier fed the whole envelope in chunks;
  whole     hashlib.sha256 of the whole envelope in one call, against
            gate.decide.envelope.verify of the same bytes (one buffer, content returned).

Prints the throughputs (best of N rounds), each ratio baseline-time / verifier-time
(goal: >= 0.9 for the streaming completeness check and for whole-buffer verify),
and the verifier's peak traced memory with and without keeping the body.
Usage: python bench/verify_throughput.py [--mib 64] [--text hex|mixed]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import threading
import time
import tracemalloc

from gate.decide.envelope import StreamVerifier, seal, verify


def chunks(data: bytes, size: int) -> list[bytes]:
    """Separate bytes objects, as a socket read delivers them."""
    return [data[i : i + size] for i in range(0, len(data), size)]


def time_hashlib(parts: list[bytes]) -> float:
    start = time.perf_counter()
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part)
    digest.hexdigest()
    return time.perf_counter() - start


def time_verifier(parts: list[bytes], limit: int, keep: bool) -> float:
    start = time.perf_counter()
    verifier = StreamVerifier(max_size=limit, keep_body=keep)
    for part in parts:
        verifier.feed(part)
    verifier.finish()
    return time.perf_counter() - start


def time_sha_whole(raw: bytes) -> float:
    start = time.perf_counter()
    hashlib.sha256(raw).hexdigest()
    return time.perf_counter() - start


def time_two_sha(raw: bytes) -> float:
    """Two hashes of ``raw`` at once, on two threads (hashlib drops the GIL).

    About the time of one when a second core is free, about twice that when
    it is not: then no overlap can bring whole-buffer verify (a hash and a
    copy that costs about as much) near one hash.
    """
    start = time.perf_counter()
    worker = threading.Thread(target=time_sha_whole, args=(raw,))
    worker.start()
    hashlib.sha256(raw).hexdigest()
    worker.join()
    return time.perf_counter() - start


def time_copy(raw: bytes) -> float:
    start = time.perf_counter()
    b"".join((memoryview(raw)[1:],))
    return time.perf_counter() - start


def time_verify_whole(raw: bytes, limit: int) -> float:
    start = time.perf_counter()
    verify(raw, max_size=limit)
    return time.perf_counter() - start


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=64, help="envelope body size in MiB")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds (best is kept)")
    parser.add_argument("--chunk-kib", type=int, default=64, help="feed size in KiB")
    parser.add_argument(
        "--text", choices=("hex", "mixed"), default="hex", help="content: hex digits or prose"
    )
    args = parser.parse_args()

    content = make_content(args.mib * 1024 * 1024, args.text)
    raw = seal(content)
    body = raw.split(b"\n", 1)[1]
    limit = len(body)
    raw_parts = chunks(raw, args.chunk_kib * 1024)
    body_parts = chunks(body, args.chunk_kib * 1024)
    mib = len(body) / (1024 * 1024)

    base: list[float] = []
    kept: list[float] = []
    lean: list[float] = []
    sha_whole: list[float] = []
    whole: list[float] = []
    two: list[float] = []
    copy: list[float] = []
    for _ in range(args.rounds):
        base.append(time_hashlib(body_parts))
        kept.append(time_verifier(raw_parts, limit, keep=True))
        lean.append(time_verifier(raw_parts, limit, keep=False))
        sha_whole.append(time_sha_whole(raw))
        whole.append(time_verify_whole(raw, limit))
        two.append(time_two_sha(raw))
        copy.append(time_copy(raw))
    b, k, s = min(base), min(kept), min(lean)
    hw, w = min(sha_whole), min(whole)
    print(
        f"envelope body: {mib:.1f} MiB of {args.text} text, chunks of {args.chunk_kib} KiB, "
        f"best of {args.rounds}"
    )
    print(f"hashlib.sha256 (baseline)                          {mib / b:8.1f} MiB/s")
    print(
        f"StreamVerifier completeness only (keep_body=False): {mib / s:8.1f} MiB/s"
        f"  ratio {b / s:.3f}"
    )
    print(
        f"StreamVerifier full, content kept + UTF-8 checked: {mib / k:8.1f} MiB/s"
        f"  ratio {b / k:.3f}"
    )
    print(f"hashlib.sha256 of the whole envelope (baseline)    {mib / hw:8.1f} MiB/s")
    print(
        f"verify() whole buffer, content + UTF-8 checked:    {mib / w:8.1f} MiB/s"
        f"  ratio {hw / w:.3f}"
    )
    print(
        f"one copy of the envelope (fresh pages), for scale: {mib / min(copy):8.1f} MiB/s"
        f"  ratio {hw / min(copy):.3f}"
    )
    print(
        f"two hashes on two threads / one hash (1.0: a core is free, 2.0: none):"
        f" {min(two) / hw:.2f}"
    )
    print(
        f"peak traced memory keep_body: {peak(raw_parts, limit, True) / 2**20:.1f} MiB"
        f" (bounded by max_size = {limit / 2**20:.1f} MiB)"
    )
    print(f"peak traced memory no body:   {peak(raw_parts, limit, False) / 2**10:.1f} KiB")
    goal = b / s >= 0.9
    print(
        f"goal: completeness ratio >= 0.9: {'met' if goal else 'NOT met'}; keeping the content "
        "adds one copy of the body (page faults dominate) and a UTF-8 check"
    )
    print(f"goal: whole-buffer verify ratio >= 0.9: {'met' if hw / w >= 0.9 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
