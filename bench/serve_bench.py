"""The latency ``review-gate serve`` adds over calling the upstream directly, as a ratio.

One local upstream (the reviewer simulator, OpenAI streaming dialect, in this process) and
one ``review-gate serve`` in front of it (its own process, as it runs in production). The
same 20 KB prompt is asked, in alternating rounds, two ways, each by the gate's own
transport (``gate.reviewers.transport.call_once``):

* ``direct``: provider ``openai`` to the upstream (the floor: what the gate spends anyway);
* ``serve``: provider ``mc1`` to ``serve``, which asks the upstream, checks, seals, signs.

Prints, for each upstream pace (the time the simulator waits between two answer events: 0 is
an upstream that answers at once, so the ratio shows serve's whole cost; 10 ms is a fast
local model, 100 tokens a second), the median of each and their ratio. Goal: ratio <= 1.05
at a model's pace.

    python bench/serve_bench.py [--rounds 30] [--prompt-bytes 20000] [--paces 0,10]
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gate.lab.sim import ReviewerSimulator, SimResponse
from gate.reviewers.settings import ReviewerSettings
from gate.reviewers.transport import call_once

ANSWER = "A verdict of a realistic length. " * 18  # ~600 bytes, 25 events of 24 characters
START_TIMEOUT_S = 30.0


def _settings(provider: str, url: str, key: str | None) -> ReviewerSettings:
    return ReviewerSettings(
        provider=provider,
        model="bench",
        base_url=url,
        api_key=key,
        max_tokens=1000,
        connect_timeout=5.0,
        read_timeout=30.0,
        deadline=60.0,
    )


def _start_serve(key: Path, upstream: str, token: str) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "REVIEW_GATE_API_KEY": token, "NO_PROXY": "127.0.0.1"}
    command = [sys.executable, "-m", "gate", "serve", "--key", str(key), "--upstream", upstream]
    process = subprocess.Popen(
        [*command, "--port", "0", "--max-concurrent", "4"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert process.stderr is not None
    until = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < until:
        found = re.search(r"listening on (http://[^\s,]+)", process.stderr.readline())
        if found:
            return process, found.group(1)
    process.kill()
    raise SystemExit("serve did not start")


def _timed(settings: ReviewerSettings, system: str, user: str) -> float:
    started = time.perf_counter()
    reply = call_once(settings, system=system, user=user)
    elapsed = time.perf_counter() - started
    if not reply.complete:
        raise SystemExit(f"{settings.provider}: not complete: {reply.reason} {reply.detail}")
    return elapsed


def _pace(sim: ReviewerSimulator, serve_url: str, token: str, pace_ms: float, rounds: int,
          prompt_bytes: int) -> tuple[float, float]:  # fmt: skip
    system, user = "the contract", "x" * prompt_bytes
    direct = _settings("openai", sim.base_url, None)
    through = _settings("mc1", serve_url, token)
    # about one send an event (an event of this answer is ~200 bytes on the wire)
    answer = SimResponse(
        content=ANSWER, pause=pace_ms / 1000, segment_size=200 if pace_ms else None
    )
    times: dict[str, list[float]] = {"direct": [], "serve": []}
    for index in range(rounds + 2):  # two warm-up rounds, not counted
        order = (("direct", direct), ("serve", through))
        for name, settings in order if index % 2 else order[::-1]:
            sim.queue(answer)
            elapsed = _timed(settings, system, user)
            if index >= 2:
                times[name].append(elapsed)
    return statistics.median(times["direct"]), statistics.median(times["serve"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--prompt-bytes", type=int, default=20_000)
    parser.add_argument("--paces", default="0,10", help="ms between answer events, comma list")
    args = parser.parse_args()
    token = secrets.token_urlsafe(32)
    with tempfile.TemporaryDirectory() as folder, ReviewerSimulator("openai") as sim:
        key = Path(folder) / "bench.key"
        subprocess.run([sys.executable, "-m", "gate", "serve", "--new-key", str(key)],
                       capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
        process, url = _start_serve(key, sim.base_url, token)
        try:
            print(f"{args.prompt_bytes:,}-byte prompt, {len(ANSWER)}-byte answer, "
                  f"{args.rounds} rounds each, medians")  # fmt: skip
            for pace in (float(p) for p in args.paces.split(",")):
                direct, served = _pace(sim, url, token, pace, args.rounds, args.prompt_bytes)
                print(
                    f"  upstream pace {pace:g} ms/event: direct {direct * 1000:.1f} ms, "
                    f"through serve {served * 1000:.1f} ms (+{(served - direct) * 1000:.1f} ms), "
                    f"ratio {served / direct:.3f}"
                )
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)


if __name__ == "__main__":
    main()
