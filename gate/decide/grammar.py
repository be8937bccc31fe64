"""The output contract as a grammar, for servers that constrain what a model may write.

A small self-hosted model rarely follows the verdict contract in words alone: it
writes two fences, forgets a member or misspells ``diff_sha``, and each of those is a
block that is not about the code. llama.cpp's server (and llama-cpp-python's) take a
GBNF grammar with a request (``grammar``), vLLM takes one in ``structured_outputs``;
with it, every token the model may emit keeps the answer inside the contract's shape:

    ```json
    {"verdict": "pass", "reasons": ["..."], "confidence": 0.9, "read": {"system": "<a word>",
     "head": "<a word>", "middle": "<a word>", "tail": "<a word>"}, "diff_sha": "<sent>",
     "policy_version": "<sent>"}
    ```

The grammar writes ``diff_sha`` and ``policy_version`` in as literals, from the
binding the prompt carries: a model cannot copy them wrong, and an answer to another
question cannot carry them. What the model still chooses is the verdict, the
reasons and the confidence, which is the review, and the ``read`` words
(:mod:`gate.decide.readback`): the grammar gives their shape only (four words of the
vocabulary, any four), never the words the prompt holds, or a model that never saw a
part of the prompt would be made to repeat its word, and the evidence would be void.

The grammar changes nothing the gate checks. The answer goes through the same
envelope, fence, strict JSON, shape and binding checks as any other (a server that
ignores the grammar gets the same blocks as before). A grammar is a request to the
server, not evidence: it only lowers the blocks that are not about the code.

Reasons are bounded (at most :data:`MAX_REASONS`, each at most :data:`REASON_CHARS`
characters, starting with a printable ASCII mark; no control character, line
separator, quote, backslash or backtick), so a constrained answer
stays small and a token budget is not spent on one string.
"""

from __future__ import annotations

import json

from gate.decide.decision import Binding
from gate.decide.readback import PARTS, WORDS

#: At most this many reasons in a constrained answer.
MAX_REASONS = 4
#: At most this many characters in each constrained reason.
REASON_CHARS = 200


def literal(text: str) -> str:
    """``text`` as a GBNF string literal: quotes, backslashes and anything outside
    printable ASCII escaped (``\\xHH``, ``\\uHHHH``, ``\\UHHHHHHHH``)."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char in '"\\':
            out.append("\\" + char)
        elif 0x20 <= code < 0x7F:
            out.append(char)
        elif code <= 0xFF:
            out.append(f"\\x{code:02X}")
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04X}")
        else:
            out.append(f"\\U{code:08X}")
    out.append('"')
    return "".join(out)


def _read_pieces() -> list[str]:
    """The literal text around the four read words: ``, "read": {"system": "``, then
    ``", "head": "`` and so on, then ``"}``."""
    keys = [f"{json.dumps(part)}: " + '"' for part in PARTS]
    return [', "read": {' + keys[0], *('", ' + key for key in keys[1:]), '"}']


def verdict_grammar(binding: Binding) -> str:
    """The GBNF grammar of an answer that is one verdict bound to ``binding``.

    The member order is fixed (the contract allows any order; one order is enough).
    """
    tail = (
        f', "diff_sha": {json.dumps(binding.diff_sha)}'
        f', "policy_version": {json.dumps(binding.policy_version, ensure_ascii=False)}'
        "}\n```"
    )
    more_reasons = f'(", " reason){{0,{MAX_REASONS - 1}}}'
    return "\n".join(
        [
            "root ::= "
            + literal('```json\n{"verdict": "')
            + " verdict "
            + literal('", "reasons": [')
            + f" reason {more_reasons} "
            + literal('], "confidence": ')
            + " confidence "
            + " "
            + " word ".join(literal(piece) for piece in _read_pieces())
            + " "
            + literal(tail),
            'verdict ::= "pass" | "fail"',
            f'reason ::= "\\"" lead char{{0,{REASON_CHARS - 1}}} "\\""',
            # a reason starts with a printable ASCII mark, so it draws ink (never blank)
            "lead ::= [!#-\\x5B\\x5D-~]",
            # then no control character (C0, DEL, C1), line or paragraph separator, quote,
            # backslash or backtick: a JSON string with no escapes that breaks no line
            'char ::= [^"\\\\`\\x00-\\x1F\\x7F-\\x9F\\u2028\\u2029]',
            'confidence ::= "0." [0-9] [0-9]? | "1.0"',
            # the shape of a read word, never the prompt's own (module docstring)
            "word ::= " + " | ".join(literal(word) for word in WORDS),
        ]
    )
