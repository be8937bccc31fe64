"""The floor under ``review-gate review``: the same requests, the answers read, bare httpx.

Sends each BODY_FILE (the exact request bodies the gate sent in one review, one per
chunk, saved by bench/review_bench.py) to an OpenAI-compatible BASE_URL, ``WORKERS`` at
a time (the gate's ``concurrency``), reads each event stream to its end and prints the
answers' text. No prompt, no checks: what any client must at least spend on the job.

    python bench/review_floor.py BASE_URL WORKERS BODY_FILE...
"""

import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

url = sys.argv[1].rstrip("/") + "/chat/completions"
workers, bodies = int(sys.argv[2]), [Path(name).read_bytes() for name in sys.argv[3:]]
headers = {"content-type": "application/json", "authorization": "Bearer bench-key"}


def answer(client: httpx.Client, body: bytes) -> str:
    text: list[str] = []
    with client.stream("POST", url, content=body, headers=headers) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if line.startswith("data: {"):
                for choice in json.loads(line[len("data: ") :]).get("choices", []):
                    text.append((choice.get("delta") or {}).get("content") or "")
    return "".join(text)


with (
    httpx.Client(timeout=httpx.Timeout(30.0)) as client,
    ThreadPoolExecutor(max_workers=max(1, min(workers, len(bodies)))) as pool,
):
    print("\n".join(pool.map(lambda body: answer(client, body), bodies)))
