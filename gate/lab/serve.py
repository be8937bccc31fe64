"""``review-gate demo --serve``: the demo's local reviewer, kept up for ``review`` to try.

One :class:`~gate.lab.sim.ReviewerSimulator` on 127.0.0.1 speaking the OpenAI streaming
dialect (what ``review``'s default provider sends), answering each request by the model
it names (:data:`MODELS`): a bound pass, the connection cut mid-answer, a bound fail,
or an example verdict echoed before the real one. Any other model is refused with a 404
that lists these. No key is needed and nothing leaves the machine. Its front door is
``review-gate serve``'s (:mod:`gate.serve.door`): a web page cannot drive it (``Host``,
``Origin``), and a body over the same limit is refused before it is read.

:func:`serve` writes the demo's sample diff beside the certificates folder (so the
printed command works as printed), reports the base URL and the command, and waits
until ``stop`` is set, ``seconds`` pass, or Ctrl-C (:class:`KeyboardInterrupt`).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gate.decide.readback import words_in
from gate.errors import GateError, UsageError
from gate.lab.demo import SAMPLE, answer, load_sample, request_text
from gate.lab.sim import ReviewerSimulator, SimResponse
from gate.review.prompt import binding_in
from gate.safe.atomic import atomic_write
from gate.serve.config import MAX_BODY_BYTES
from gate.serve.door import Door

#: model name -> (what the reviewer does, the demo answer mode, where the wire is cut)
MODELS: dict[str, tuple[str, str, int | None]] = {
    "healthy": ("answers a bound pass verdict", "pass", None),
    "cut": ("cuts the connection mid-answer (every try)", "pass", 400),
    "fail": ("answers a bound fail verdict", "fail", None),
    "echo": ("echoes an example verdict before the real one", "echo", None),
}
#: the longest ``--for`` accepted (a day): every wait is bounded
MAX_SECONDS = 86_400.0


def choose(body: dict[str, Any]) -> SimResponse:
    """The answer to one request, by the model it names."""
    model = body.get("model")
    if not isinstance(model, str) or model not in MODELS:
        shown = json.dumps(model)[:60]
        message = (
            f"unknown model {shown}: the demo reviewer serves {', '.join(MODELS)} "
            "(pass --model healthy, for instance)"
        )
        error = {"error": {"message": message, "type": "invalid_request_error"}}
        return SimResponse(status=404, error_body=json.dumps(error))
    _, mode, cut = MODELS[model]
    text = request_text(body)
    binding = binding_in(text)
    if binding is None:
        return SimResponse(content="The prompt carried no diff_sha; I cannot give a verdict.")
    return SimResponse(content=answer(mode, binding, words_in(text)), cut_after=cut)


def lines(base_url: str, sample: Path) -> list[str]:
    """What ``--serve`` prints: the base URL, the models, the command to try."""
    width = max(len(name) for name in MODELS)
    return [
        f"a local reviewer speaking the OpenAI streaming dialect at {base_url}",
        "it answers by the model each request names:",
        *(f"  {name.ljust(width)}  {what}" for name, (what, _, _) in MODELS.items()),
        "",
        "try (no API key needed; the sample diff is written there):",
        f"  review-gate review --diff {sample} --base-url {base_url} --model healthy",
        "then --model cut, fail or echo. Ctrl-C stops the reviewer.",
    ]


def serve(
    out: Path,
    *,
    port: int = 0,
    seconds: float | None = None,
    stop: threading.Event | None = None,
    report: Callable[[str], None] = print,
) -> str:
    """Serve until ``stop`` is set, ``seconds`` pass, or Ctrl-C; the base URL it served.

    UsageError when ``out`` cannot be written or ``port`` cannot be bound.
    """
    if seconds is not None and not 0 < seconds <= MAX_SECONDS:
        raise UsageError(f"--for must be within (0, {MAX_SECONDS:g}] seconds, got {seconds:g}")
    sample = out / SAMPLE
    try:
        out.mkdir(parents=True, exist_ok=True)
        atomic_write(sample, load_sample())
    except (GateError, OSError) as err:
        raise UsageError(f"cannot write {sample}: {err}") from err
    stop = stop or threading.Event()
    front_door = Door.of(MAX_BODY_BYTES)  # what review-gate serve refuses, refused here too
    sim = ReviewerSimulator(
        "openai", chooser=choose, port=port, record=False, front_door=front_door
    )
    try:
        sim.start()
    except OSError as err:
        raise UsageError(f"cannot listen on 127.0.0.1:{port}: {err.strerror}") from err
    try:
        report("\n".join(lines(sim.base_url, sample)))
        until = time.monotonic() + (seconds if seconds is not None else MAX_SECONDS)
        while not stop.wait(min(0.2, max(0.0, until - time.monotonic()))):
            if time.monotonic() >= until:
                break
    finally:
        sim.stop()
    return sim.base_url
