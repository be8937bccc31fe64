"""Class: frame precedence. An error frame wins, whatever else the frame says.

Cause: each SSE dialect judged error frames in its own way, after other checks.
The OpenAI dialect tested for the ``[DONE]`` marker before the event name, so
``event: error`` with ``data: [DONE]`` ended the stream cleanly; the SSE parser
dropped every event without a ``data:`` line (the WHATWG rule), so
``event: error`` and a blank line never reached a dialect, before or after the
end marker; the Anthropic dialect dispatched an unnamed event as ``message`` and
accepted it for any ``type``, although the official SDK skips such events; and
provider JSON was read last-wins, so ``"finish_reason":"length",
"finish_reason":"stop"`` read as a clean stop.

Fix: one precedence rule, :func:`gate.reviewers.stream.frame_error`, applied
by :meth:`~gate.reviewers.stream.SSEStream.take` to every event before any
dialect logic: an event named ``error`` (any case, any data or none) or whose
data carries a non-null ``error`` (or a ``type``/``object`` of ``"error"``,
read leniently when the JSON is not strict) is an error frame. The SSE parser
dispatches named events without data; event data is parsed once with the
verdict's strict loader (duplicate keys refused); Anthropic events must be
named. Two false blocks went with it: ``"error": null`` is no error (the SDKs
ignore it) and ``data: [DONE]`` with trailing spaces or tabs is the end marker
(the SDK ends at any data starting with ``[DONE]``). Both are safe because the
rule above still runs first and the marker is only one piece of evidence: the
finish reason must be a stop, nothing may follow the marker, and the whole
body must arrive. The official OpenAI and Anthropic SDKs are the oracle: the
gate seals exactly the text the SDK shows, or nothing.

Every variant goes through a real socket (:class:`gate.lab.sim.ReviewerSimulator`)
and the whole transport (:func:`gate.reviewers.review`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import anthropic
import openai
import pytest

from gate.decide.attempt import Attempt, ReviewOutcome
from gate.decide.envelope import verify_text
from gate.lab.sim import MODEL, ReviewerSimulator, SimResponse, render_events
from gate.reviewers.transport import review

pytestmark = pytest.mark.timeout(120)

SSE_DIALECTS = ("openai", "anthropic", "gemini", "openai-responses", "azure-openai", "vertex")
CONTENT = "Reviewed: fine."
PIECE = 8  # characters per content event: two content events

ERROR_OBJECT = {
    "openai": {"error": {"message": "boom", "type": "server_error", "param": None, "code": None}},
    "anthropic": {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    "gemini": {"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}},
    "openai-responses": {"error": {"message": "boom", "type": "server_error", "code": None}},
    "azure-openai": {"error": {"message": "boom", "type": "server_error", "param": None}},
    "vertex": {"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}},
}
#: The event that says "stop" in each dialect, and the finish key with its "length" value.
STOP_KIND = {
    "openai": ('"finish_reason":"stop"', "finish_reason", "length"),
    "anthropic": ('"type":"message_delta"', "stop_reason", "max_tokens"),
    "gemini": ('"finishReason":"STOP"', "finishReason", "MAX_TOKENS"),
    "openai-responses": ('"type":"response.completed"', "status", "incomplete"),
    "azure-openai": ('"finish_reason":"stop"', "finish_reason", "length"),
    "vertex": ('"finishReason":"STOP"', "finishReason", "MAX_TOKENS"),
}
EXTRAS: tuple[tuple[str, ...], ...] = (
    (),
    ("id: 7",),
    ("retry: 1000",),
    ("id: 9", "retry: 5", ": keep-alive"),
)
EOLS = ("\n", "\r\n", "\r")


# --- building streams ------------------------------------------------------------


@dataclass(frozen=True)
class Ev:
    """One SSE event as it goes on the wire: name and data may each be absent."""

    name: str | None
    data: str | None
    extra: tuple[str, ...] = ()


def healthy(dialect: str) -> list[Ev]:
    """The simulator's healthy answer for ``dialect``, as events."""
    out = []
    for raw in render_events(dialect, CONTENT, SimResponse(piece_size=PIECE)):
        name = data = None
        for line in raw.decode().replace("\r\n", "\n").split("\n"):
            if line.startswith("event: "):
                name = line[len("event: ") :]
            elif line.startswith("data: "):
                data = line[len("data: ") :]
        out.append(Ev(name, data))
    return out


def encode(events: list[Ev], eol: str = "\n") -> bytes:
    out = []
    for ev in events:
        lines = list(ev.extra)
        if ev.name is not None:
            lines.append(f"event: {ev.name}")
        if ev.data is not None:
            lines.extend(f"data: {line}" for line in ev.data.split("\n"))
        out.append(eol.join(lines) + eol + eol)
    return "".join(out).encode()


def run_bodies(dialect: str, bodies: list[bytes], chunk_size: int | None = None) -> list[Attempt]:
    """One attempt per body, through one simulator; the outcomes, in order."""
    outcomes: list[ReviewOutcome] = []
    with ReviewerSimulator(dialect) as sim:
        for body in bodies:
            sim.queue(SimResponse(body=body, chunk_size=chunk_size))
            outcomes.append(review(sim.settings(attempts=1), system="S", user="U"))
    attempts = []
    for outcome, body in zip(outcomes, bodies, strict=True):
        attempt = outcome.last
        assert attempt is not None
        assert outcome.raw == body  # the record keeps every byte, whatever was judged
        if attempt.complete:
            assert outcome.envelope is not None
        else:
            assert outcome.envelope is None
        attempts.append(attempt)
    return attempts


def sealed_texts(dialect: str, bodies: list[bytes]) -> list[str | None]:
    """The text the gate seals for each body, or None where it seals nothing."""
    texts: list[str | None] = []
    with ReviewerSimulator(dialect) as sim:
        for body in bodies:
            sim.queue(SimResponse(body=body))
            envelope = review(sim.settings(attempts=1), system="S", user="U").envelope
            texts.append(verify_text(envelope) if envelope is not None else None)
    return texts


# --- the official SDKs, as the oracle ----------------------------------------------


def sdk_texts(dialect: str, bodies: list[bytes]) -> list[str | Exception]:
    """The text the official SDK shows for each body, or the error it raises."""
    out: list[str | Exception] = []
    messages: Any = [{"role": "user", "content": "U"}]
    with ReviewerSimulator(dialect) as sim:
        oa = openai.OpenAI(base_url=sim.base_url, api_key="k", max_retries=0, timeout=10)
        an = anthropic.Anthropic(base_url=sim.base_url, api_key="k", max_retries=0, timeout=10)
        for body in bodies:
            sim.queue(SimResponse(body=body))
            try:
                if dialect == "openai":
                    chunks = oa.chat.completions.create(model=MODEL, messages=messages, stream=True)
                    text = "".join(c.delta.content or "" for ch in chunks for c in ch.choices)
                else:
                    events = an.messages.create(
                        model=MODEL, max_tokens=64, messages=messages, stream=True
                    )
                    text = "".join(
                        e.delta.text
                        for e in events
                        if e.type == "content_block_delta" and e.delta.type == "text_delta"
                    )
            except (openai.APIError, anthropic.APIError) as err:
                out.append(err)
            else:
                out.append(text)
    return out


# --- 1. an error frame wins ---------------------------------------------------------


def error_shapes(dialect: str) -> list[tuple[str, Ev]]:
    """Every way a frame can be an error frame, each saying something else as well."""
    error = ERROR_OBJECT[dialect]
    err = json.dumps(error)
    stop = next(e.data for e in healthy(dialect) if e.data and STOP_KIND[dialect][0] in e.data)
    assert stop is not None
    stop_obj = json.loads(stop)
    # the name an error object rides under: none for OpenAI and Gemini, a real one for Anthropic
    natural = "message_delta" if dialect == "anthropic" else None
    inner = json.dumps(error["error"])
    return [
        ("named-no-data", Ev("error", None)),
        ("named-empty-data", Ev("error", "")),
        ("named-done", Ev("error", "[DONE]")),
        ("named-done-space", Ev("error", "[DONE] ")),
        ("named-provider-json", Ev("error", err)),
        ("named-plain-text", Ev("error", "upstream overloaded")),
        ("named-says-stop", Ev("error", stop)),
        ("named-null-error", Ev("error", '{"error": null}')),
        ("named-capitalised", Ev("Error", err)),
        ("named-upper-no-data", Ev("ERROR", None)),
        ("object", Ev(natural, err)),
        ("object-in-a-stop-frame", Ev(natural, json.dumps({**stop_obj, "error": error["error"]}))),
        ("object-string", Ev(natural, '{"error": "boom"}')),
        ("object-vllm", Ev(natural, '{"object": "error", "message": "boom", "code": 400}')),
        ("object-type-error", Ev(natural, '{"type": "error", "error": ' + inner + "}")),
        ("object-duplicate-null-first", Ev(natural, '{"error": null, "error": ' + inner + "}")),
        ("object-duplicate-null-last", Ev(natural, '{"error": ' + inner + ', "error": null}')),
        ("object-duplicate-in-stop", Ev(natural, f'{stop[:-1]},"error":{inner},"error":null}}')),
    ]


def error_variants() -> Iterator[Any]:
    for dialect in SSE_DIALECTS:
        events = healthy(dialect)
        end = len(events) - 1  # [DONE], message_stop, or Gemini's chunk with finishReason
        positions = {"first": 0, "after-content": 2, "mid": end // 2, "before-end": end}
        positions["after-end"] = end + 1
        for s, (label, frame) in enumerate(error_shapes(dialect)):
            for p, (where, index) in enumerate(positions.items()):
                variant = replace(frame, extra=EXTRAS[(s + p) % len(EXTRAS)])
                stream = [*events[:index], variant, *events[index:]]
                body = encode(stream, EOLS[(s + 2 * p) % len(EOLS)])
                yield pytest.param(dialect, body, id=f"{dialect}-{label}-{where}")


ERROR_VARIANTS = list(error_variants())


@pytest.mark.parametrize("dialect", SSE_DIALECTS)
def test_an_error_frame_wins_whatever_else_the_frame_or_the_stream_says(dialect: str) -> None:
    params = [p for p in ERROR_VARIANTS if p.values[0] == dialect]
    bodies = [p.values[1] for p in params]
    for chunk_size in (None, 5):  # whole events per chunk, and events split across chunks
        attempts = run_bodies(dialect, bodies, chunk_size)
        wrong = [
            (p.id, a.reason, a.detail)
            for p, a in zip(params, attempts, strict=True)
            if a.complete or a.reason != "error_frame"
        ]
        assert wrong == [], f"{len(wrong)} of {len(params)} variants: {wrong[:5]}"


def test_the_variants_cover_every_dialect_shape_and_position() -> None:
    assert len(ERROR_VARIANTS) == len(SSE_DIALECTS) * 18 * 5
    assert len({p.id for p in ERROR_VARIANTS}) == len(ERROR_VARIANTS)


def test_the_anthropic_sdk_also_raises_on_every_named_error_frame() -> None:
    """The oracle agrees where it has an opinion: ``event: error`` is an error to the SDK."""
    bodies = [
        p.values[1]
        for p in ERROR_VARIANTS
        if p.values[0] == "anthropic" and b"event: error" in p.values[1]
    ]
    assert len(bodies) == 8 * 5  # the shapes named exactly "error"
    seen = sdk_texts("anthropic", bodies)
    assert [type(x).__name__ for x in seen if not isinstance(x, anthropic.APIError)] == []


# --- 2. duplicate keys, in every position -------------------------------------------


def _dump(value: Any, path: tuple[Any, ...], target: tuple[Any, ...], dup: tuple[str, str]) -> str:
    """JSON text of ``value`` with one extra ``"key": value`` text in the object at ``target``."""
    if isinstance(value, dict):
        items = []
        for key, item in value.items():
            text = f"{json.dumps(key)}:{_dump(item, (*path, key), target, dup)}"
            if path == target and key == dup[0]:
                items.append(dup[1].replace("{}", text))
            else:
                items.append(text)
        return "{" + ",".join(items) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_dump(v, (*path, i), target, dup) for i, v in enumerate(value)) + "]"
    return json.dumps(value, ensure_ascii=False)


def _keys(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], str]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield path, key
            yield from _keys(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _keys(item, (*path, index))


def duplicate_variants(dialect: str) -> Iterator[tuple[str, bytes]]:
    """Every key of every event, duplicated: a decoy before it (last-wins would hide the
    decoy) and the same value after it (a harmless-looking repeat)."""
    events = healthy(dialect)
    _, finish_key, length = STOP_KIND[dialect]
    for index, ev in enumerate(events):
        if ev.data is None or not ev.data.startswith("{"):
            continue
        obj = json.loads(ev.data)
        for path, key in _keys(obj):
            decoy = json.dumps(length if key == finish_key else "decoy")
            place = "/".join(map(str, (*path, key)))
            for how, pattern in (("decoy-first", f'"{key}":{decoy},{{}}'), ("repeat", "{},{}")):
                data = _dump(obj, (), path, (key, pattern))
                stream = [*events[:index], replace(ev, data=data), *events[index + 1 :]]
                yield f"{dialect}-event{index}-{place}-{how}", encode(stream)


@pytest.mark.parametrize("dialect", SSE_DIALECTS)
def test_a_duplicate_key_anywhere_in_any_event_is_a_malformed_event(dialect: str) -> None:
    variants = list(duplicate_variants(dialect))
    assert len(variants) >= 40
    attempts = run_bodies(dialect, [body for _, body in variants])
    wrong = [
        (label, a.reason)
        for (label, _), a in zip(variants, attempts, strict=True)
        if a.complete or a.reason != "malformed_event"
    ]
    assert wrong == [], f"{len(wrong)} of {len(variants)}: {wrong[:8]}"


def test_the_classic_duplicate_finish_reason_is_among_the_variants() -> None:
    labels = [label for label, _ in duplicate_variants("openai")]
    assert "openai-event3-choices/0/finish_reason-decoy-first" in labels
    body = dict(duplicate_variants("openai"))["openai-event3-choices/0/finish_reason-decoy-first"]
    assert b'"finish_reason":"length","finish_reason":"stop"' in body


# --- 3. Anthropic events must be named ----------------------------------------------


def unnamed_variants() -> Iterator[tuple[str, bytes, bool]]:
    """Each Anthropic event with its name taken away: no line, an empty one, a spaced one.

    The flag says whether the event carried text (the SDK then shows less text).
    """
    events = healthy("anthropic")
    for index, ev in enumerate(events):
        carries_text = ev.name == "content_block_delta"
        stripped = {
            "no-event-line": replace(ev, name=None),
            "empty-name": replace(ev, name=""),
        }
        for how, bare in stripped.items():
            stream = [*events[:index], bare, *events[index + 1 :]]
            yield f"{ev.name}-{how}", encode(stream), carries_text
        spaced = encode(events[:index]) + b"event: \n" + encode([replace(ev, name=None)])
        yield f"{ev.name}-space-only", spaced + encode(events[index + 1 :]), carries_text


def test_an_unnamed_anthropic_event_is_refused() -> None:
    variants = list(unnamed_variants())
    attempts = run_bodies("anthropic", [body for _, body, _ in variants])
    wrong = [
        (label, a.reason)
        for (label, _, _), a in zip(variants, attempts, strict=True)
        if a.complete or a.reason != "malformed_event"
    ]
    assert wrong == [], wrong
    assert len(variants) == 3 * len(healthy("anthropic"))


def test_the_anthropic_sdk_would_show_less_text_for_an_unnamed_text_event() -> None:
    """Why refusing is right: the SDK skips the event, so sealing it would seal unseen text."""
    variants = list(unnamed_variants())
    bodies = [encode(healthy("anthropic")), *(body for _, body, _ in variants)]
    shown = sdk_texts("anthropic", bodies)
    assert shown[0] == CONTENT
    for (label, _, carries_text), text in zip(variants, shown[1:], strict=True):
        if carries_text:
            assert isinstance(text, str), label
            assert text != CONTENT, label
    assert sealed_texts("anthropic", bodies[1:]) == [None] * len(variants)


# --- 4. the two false blocks: accepted, exactly as the SDKs accept them ---------------


def null_error_variants(dialect: str) -> Iterator[tuple[str, bytes]]:
    """``"error": null`` first or last in one event, or in every event."""
    events = healthy(dialect)
    json_events = [i for i, e in enumerate(events) if e.data and e.data.startswith("{")]

    def with_null(ev: Ev, first: bool) -> Ev:
        assert ev.data is not None
        body = ev.data[1:-1]
        data = '{"error":null,' + body + "}" if first else "{" + body + ',"error":null}'
        return replace(ev, data=data)

    for first in (True, False):
        where = "first" if first else "last"
        every = [with_null(e, first) if i in json_events else e for i, e in enumerate(events)]
        yield f"{dialect}-every-event-{where}", encode(every)
        for index in (json_events[0], json_events[-1]):
            one = [with_null(e, first) if i == index else e for i, e in enumerate(events)]
            yield f"{dialect}-event{index}-{where}", encode(one)


DONE_SUFFIXES = (" ", "  ", "\t", " \t ", "\t\t")


def done_variants() -> Iterator[tuple[str, bytes]]:
    events = healthy("openai")
    assert events[-1].data == "[DONE]"
    for suffix in DONE_SUFFIXES:
        stream = [*events[:-1], Ev(None, "[DONE]" + suffix)]
        yield f"done{suffix!r}", encode(stream)


@pytest.mark.parametrize("dialect", SSE_DIALECTS)
def test_a_null_error_is_not_an_error_frame(dialect: str) -> None:
    variants = list(null_error_variants(dialect))
    attempts = run_bodies(dialect, [body for _, body in variants])
    wrong = [
        (label, a.reason, a.detail)
        for (label, _), a in zip(variants, attempts, strict=True)
        if not a.complete
    ]
    assert wrong == []
    assert sealed_texts(dialect, [body for _, body in variants]) == [CONTENT] * len(variants)


def test_done_with_trailing_whitespace_is_the_end_marker() -> None:
    variants = list(done_variants())
    attempts = run_bodies("openai", [body for _, body in variants])
    assert [(label, a.reason) for (label, _), a in zip(variants, attempts, strict=True)] == [
        (label, "") for label, _ in variants
    ]


@pytest.mark.parametrize(
    "data",
    ["[DONE]x", " [DONE]", "[DONE]\u00a0", "[done]", "[DONE] [DONE]"],
    ids=["suffix", "leading-space", "nbsp", "lower-case", "twice"],
)
def test_only_trailing_spaces_and_tabs_are_forgiven(data: str) -> None:
    events = healthy("openai")
    (attempt,) = run_bodies("openai", [encode([*events[:-1], Ev(None, data)])])
    assert not attempt.complete
    assert attempt.reason == "malformed_event"


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
def test_the_official_sdk_accepts_what_the_gate_now_accepts_and_shows_the_same_text(
    dialect: str,
) -> None:
    """Oracle: each accepted variant is one the official SDK reads to the same text."""
    accepted = [*null_error_variants(dialect), *(done_variants() if dialect == "openai" else [])]
    bodies = [body for _, body in accepted]
    expected = [(label, CONTENT) for label, _ in accepted]
    shown = sdk_texts(dialect, bodies)
    assert [(label, text) for (label, _), text in zip(accepted, shown, strict=True)] == expected
    sealed = sealed_texts(dialect, bodies)
    assert [(label, text) for (label, _), text in zip(accepted, sealed, strict=True)] == expected
