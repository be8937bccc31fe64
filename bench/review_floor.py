"""The floor under ``review-gate review``: the same request, the answer read, bare httpx.

Sends BODY_FILE (the exact request body the gate sent, saved by bench/review_bench.py)
to an OpenAI-compatible BASE_URL, reads the event stream to its end and prints the
answer's text. No prompt, no checks: what any client must at least spend.

    python bench/review_floor.py BASE_URL BODY_FILE
"""

import json
import sys
from pathlib import Path

import httpx

url, body = sys.argv[1].rstrip("/") + "/chat/completions", Path(sys.argv[2]).read_bytes()
headers = {"content-type": "application/json", "authorization": "Bearer bench-key"}
text: list[str] = []
with (
    httpx.Client(timeout=httpx.Timeout(30.0)) as client,
    client.stream("POST", url, content=body, headers=headers) as response,
):
    response.raise_for_status()
    for line in response.iter_lines():
        if line.startswith("data: {"):
            for choice in json.loads(line[len("data: ") :]).get("choices", []):
                text.append((choice.get("delta") or {}).get("content") or "")
print("".join(text))
