"""Class: a context-size answer (the preflight, gate/reviewers/window.py) that is almost
the server's shape: every body either is the size a well-formed answer says, or blocks.

A size too large lets a prompt through that the server then cuts; so each body below is
generated from a well-formed one of each kind (llama.cpp ``/props``, vLLM ``/v1/models``,
Ollama ``/api/show``) by one change of a class: a BOM, bytes that are not UTF-8, a NUL,
trailing garbage, a duplicate key (same or another value), a number as a string, a float,
an exponent, a bool, a negative, a huge or 5,000-digit integer, a member of another
type, a key or model id that differs by case, width, a zero-width character or a
trailing space, a lone surrogate escaped in a key, the model listed twice, ``num_ctx``
twice, in upper case, with fullwidth digits, or on lines broken by CRLF, CR, U+2028 or
NEL. Over real sockets (the simulator's :class:`~gate.lab.sim.SimServer`), the server
named explicitly: the size of the well-formed body, or ``ContextUnknown`` (never another
error, never another size). Checked failing before the fix: vLLM's list naming the
model twice with two lengths gave the first length, and Ollama's ``num_ctx 4096`` ended by
CRLF followed by ``num_ctx 1000000`` gave 1,000,000 (the CRLF line was not read, the
other was: two sizes, the larger believed).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gate.errors import ContextUnknown
from gate.lab.sim import MODEL, ReviewerSimulator, SimServer
from gate.reviewers.window import context_of

SIZE = 4096


def _props(value: str = str(SIZE), key: str = "n_ctx", outer: str = "") -> str:
    return f'{{"default_generation_settings": {{"{key}": {value}}}{outer}}}'


def _models(value: str = str(SIZE), model: str = MODEL, more: str = "") -> str:
    card = f'{{"id": {json.dumps(model)}, "object": "model", "max_model_len": {value}}}'
    return f'{{"object": "list", "data": [{card}{more}]}}'


def _show(parameters: str = f"num_ctx {SIZE}", more: str = "") -> str:
    info = '"model_info": {"llama.context_length": 8192}'
    return f'{{"parameters": {json.dumps(parameters)}, {info}{more}}}'


WELL_FORMED = {"llama.cpp": _props(), "vllm": _models(), "ollama": _show()}

#: numbers a context size is not: each in every kind's place of the size
NOT_SIZES = ['"4096"', "4096.0", "4.096e3", "true", "null", "-4096", "0", "[4096]",
             '{"n": 4096}', "1" + "0" * 12, "9" * 5000]  # fmt: skip

#: bodies, by kind, that are not a well-formed answer (each one change of one class)
CHANGED: dict[str, list[bytes | str]] = {
    "llama.cpp": [
        *(_props(value) for value in NOT_SIZES),
        _props(outer=', "default_generation_settings": {"n_ctx": 1000000}'),
        _props(key='n_ctx": 4096, "n_ctx'),
        _props(key="N_CTX"),
        _props(key="\uff4e_\uff43\uff54\uff58"),
        _props(key="n_ctx\u200b"),
        _props(key="n_ctx\\ud800"),
        '{"default_generation_settings": [4096]}',
        '{"default_generation_settings": "n_ctx 4096"}',
    ],
    "vllm": [
        *(_models(value) for value in NOT_SIZES),
        _models(more=f', {{"id": "{MODEL}", "max_model_len": 1000000}}'),
        _models(model=MODEL.upper()),
        _models(model=MODEL + " "),
        _models(model="\uff53\uff49\uff4d-model"),
        _models(model="sim\u200b-model"),
        _models(model="sim-model\\ud800"),
        f'{{"object": "list", "data": {{"{MODEL}": 4096}}}}',
        _models()[:-1] + ', "data": []}',
    ],
    "ollama": [
        _show(f"num_ctx {SIZE}\nnum_ctx 1000000"),
        _show(f"num_ctx {SIZE}\r\nnum_ctx 1000000"),
        _show(f"num_ctx {SIZE}\rnum_ctx 1000000"),
        _show(f"num_ctx {SIZE}\u2028num_ctx 1000000"),
        _show(f"num_ctx {SIZE}\x85num_ctx 1000000"),
        _show("NUM_CTX 4096"),
        _show("num_ctx \uff14\uff10\uff19\uff16"),
        _show("num_ctx 4096.0"),
        _show("num_ctx 4e3"),
        _show("num_ctx 1234567890"),
        _show("num_ctx -4096"),
        _show("num_ctx\u200b 4096"),
        _show(f"num_ctx {SIZE}", more=', "parameters": "num_ctx 1000000"'),
        '{"parameters": ["num_ctx 4096"]}',
        '{"parameters": {"num_ctx": 4096}}',
    ],
}

#: changes that keep the body the server's (the size stands)
KEPT: dict[str, list[str]] = {
    "llama.cpp": [_props(outer=', "n_ctx": 1000000'), " \n" + _props() + "\r\n"],
    "vllm": [_models(more=', {"id": "other", "max_model_len": 1000000}')],
    "ollama": [_show(f"stop <eos>\nnum_ctx {SIZE}\ntemperature 0"), _show(f"num_ctx\t{SIZE}\t")],
}


def _wrap(body: str, wrapper: str) -> bytes:
    raw = body.encode("utf-8")
    return {
        "none": raw,
        "bom": b"\xef\xbb\xbf" + raw,
        "latin1": raw[:-1] + b"\xff" + raw[-1:],
        "nul": raw + b"\0",
        "trailing": raw + b" trailing",
        "twice": raw + raw,
    }[wrapper]


def _read(kind: str, body: bytes) -> int | None:
    """The size the preflight reads from ``body`` (the server named), None if it blocks."""
    with ReviewerSimulator("openai", server=SimServer(kind, body=body)) as sim:
        blocked: ContextUnknown | None = None
        try:
            served = context_of(sim.settings(context_window=kind))
        except ContextUnknown as err:
            blocked = err
    if blocked is not None:
        assert blocked.reason in ("config_context_window", "context_window_unreachable")
        assert "context_window" in blocked.message  # the fix is named
        return None
    assert served is not None, "a server named explicitly never gives no size"
    return served.tokens


@pytest.mark.parametrize("kind", sorted(CHANGED))
def test_each_change_of_a_class_blocks(kind: str) -> None:
    sizes = {body: _read(kind, body.encode() if isinstance(body, str) else body)
             for body in CHANGED[kind]}  # fmt: skip
    assert {body: size for body, size in sizes.items() if size is not None} == {}


@pytest.mark.parametrize("kind", sorted(KEPT))
def test_a_body_that_stays_the_servers_gives_its_size(kind: str) -> None:
    assert _read(kind, WELL_FORMED[kind].encode()) == SIZE
    assert [_read(kind, body.encode()) for body in KEPT[kind]] == [SIZE] * len(KEPT[kind])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(sorted(CHANGED)),
    wrapper=st.sampled_from(["bom", "latin1", "nul", "trailing", "twice"]),
    which=st.integers(min_value=0),
    changed=st.booleans(),
)
def test_any_wrapped_body_blocks(kind: str, wrapper: str, which: int, changed: bool) -> None:
    """The bytes around a body (a BOM, a byte that is not UTF-8, a NUL, garbage, the body
    twice), whether or not the body itself was changed: a block, never a size."""
    options = CHANGED[kind] if changed else [WELL_FORMED[kind]]
    body = options[which % len(options)]
    text = body if isinstance(body, str) else body.decode("utf-8", "replace")
    assert _read(kind, _wrap(text, wrapper)) is None
