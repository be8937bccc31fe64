"""Redaction cost on the largest body a reviewer may send, against a plain ``str.find``.

Builds ``--mib`` MiB (default 4, the default ``max_response_bytes``) of each text and
times, best of ``--rounds``, in the same process:

  baseline  ``bytes.find`` of the whole key (what an exact-match redaction costs);
  redact    :func:`gate.safe.redact.redact_bytes` (every form, every 12-character run).

Texts: an ordinary SSE answer (no key), the key repeated (a hostile provider that
knows it), and weak periodic keys against themselves (the most alignments).
Usage: python bench/redact_bench.py [--mib 4] [--rounds 3]
"""

from __future__ import annotations

import argparse
import base64
import os
import time
from collections.abc import Callable
from functools import partial

from gate.safe import redact


def best(rounds: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    size = args.mib << 20
    key = "sk-proj-" + base64.b64encode(os.urandom(36)).decode()
    chunk = b'data: {"choices":[{"delta":{"content":"the change looks fine"}}]}\n\n'
    cases = [
        ("ordinary SSE, no key", key, (chunk * (size // len(chunk) + 1))[:size]),
        ("the key repeated", key, ((key + " ").encode() * (size // len(key) + 1))[:size]),
        ("weak key 'a'*40, text of a", "a" * 40, b"a" * size),
        ("weak key 'ab'*20, text of ab", "ab" * 20, b"ab" * (size // 2)),
    ]
    print(f"{args.mib} MiB per text, best of {args.rounds}")
    for name, secret, data in cases:
        needle = secret.encode()
        with redact.scope(secret):
            redact.redact_bytes(b"warm up the cache")
            plain = best(args.rounds, partial(data.find, needle))
            full = best(args.rounds, partial(redact.redact_bytes, data))
        print(f"{name:30} find {plain * 1000:8.1f} ms   redact {full * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
