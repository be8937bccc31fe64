"""Untrusted text made safe for a terminal or a log line.

The model's reasons, a provider's error text, GitHub's text (labels, logins,
API messages) and file names from a diff are written by someone else. Printed
raw, a reason holding ``\\n::error::...`` becomes a workflow command when the
gate runs in a GitHub Actions step, ``##[...]`` is one anywhere in a line (the
runner's legacy form, ``ActionCommand.TryParse``), ``\\x1b[...`` drives the
terminal, ``\\r`` overwrites what was printed, and a bidi override reorders
what is shown. :func:`line` and :func:`lines` are the one way such text is
printed:

- secrets are redacted first (:func:`gate.safe.redact.redact`);
- every control character (C0, DEL, C1), format character (bidi overrides and
  isolates, zero-width characters, BOM), line or paragraph separator and lone
  surrogate is shown as its Python escape (``\\x1b``, ``\\u202e``), so nothing
  invisible reaches the screen and nothing can start a new line (:func:`line`
  escapes ``\\n`` too; :func:`lines` keeps it as the only line break);
- a line whose first non-blank characters are ``::`` starts with ``\\x3a:``
  instead (the runner trims leading whitespace before it looks for ``::``),
  and ``##[`` becomes ``#\\x23[`` wherever it is.

Escaping is idempotent: text that went through once is unchanged by a second pass.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Sequence

from gate.safe.redact import redact

#: Unicode categories never printed as themselves: controls, format characters
#: (bidi, zero-width, BOM), surrogates, line and paragraph separators.
UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_LEGACY_COMMAND = "##["


def escape(ch: str) -> str:
    """One character as its Python escape (``\\x1b``, ``\\u202e``, ``\\U000e0001``)."""
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def unsafe(ch: str) -> bool:
    return unicodedata.category(ch) in UNSAFE_CATEGORIES


def visible(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every unsafe character escaped (``\\n`` kept when asked)."""
    if text.isprintable():  # the common case, at C speed
        return text
    return "".join(
        escape(ch) if unsafe(ch) and not (keep_newlines and ch == "\n") else ch for ch in text
    )


def _no_legacy_command(text: str) -> str:
    return text.replace(_LEGACY_COMMAND, "#\\x23[")


def neutral(line: str) -> str:
    """One line (no line break in it) that no GitHub Actions runner reads as a command."""
    line = _no_legacy_command(line)
    body = line.lstrip()
    if body.startswith("::"):
        line = line[: len(line) - len(body)] + "\\x3a" + body[1:]
    return line


def line(text: str) -> str:
    """Untrusted text as one safe line: redacted, escaped (line breaks too), neutral."""
    return neutral(visible(redact(text)))


def lines(text: str) -> str:
    """Untrusted text as safe lines: like :func:`line`, but ``\\n`` stays a line break."""
    shown = visible(redact(text), keep_newlines=True)
    return "\n".join(neutral(part) for part in shown.split("\n"))


def own_line(text: str) -> str:
    """A log line the gate built itself (a workflow command, or its own words) around
    pieces that already went through :func:`line`: redacted and escaped as a whole, no
    ``##[`` anywhere, but a leading ``::`` is kept (it is the gate's own command)."""
    return _no_legacy_command(visible(redact(text)))


def remove_all(pattern: re.Pattern[str], text: str) -> str:
    """``text`` with every match of ``pattern`` removed until none is left.

    One pass is not enough when the matches can nest: removing the inner match of
    ``<!-- x A<!-- x B -->C -->`` leaves ``<!-- x AC -->``, a match built from the text
    around it. Each pass shortens the text, so the loop ends (at most ``len(text)``
    passes; in practice one or two).
    """
    return remove_every((pattern,), text)


def remove_every(patterns: Sequence[re.Pattern[str]], text: str) -> str:
    """``text`` with every match of every pattern removed, all kinds in each pass, until a
    whole pass removes nothing: removing one kind can join the text around it into a block
    of another kind (a carry block inside a history block), so no kind is ever done alone.
    Each pass that changes anything shortens the text, so the loop ends."""
    while True:
        shorter = text
        for pattern in patterns:
            shorter = pattern.sub("", shorter)
        if shorter == text:
            return text
        text = shorter


_MD_PUNCTUATION = frozenset(string.punctuation)
_MD_ENTITY = {"<": "&lt;", "&": "&amp;"}
_NO_LINK = "\u200b"  # after @ and #: no mention, no issue reference


def md(text: str) -> str:
    """Text that came from outside (reviewer, GitHub, file names, a merge's subject) made
    inert in Markdown (a comment, a job summary, the backtest's report).

    Redacted, whitespace collapsed to single spaces, unsafe characters shown as
    escapes (:func:`visible`), then every ASCII punctuation character escaped, so the
    text renders as exactly itself.
    """
    clean = visible(" ".join(redact(text).split()))
    out = []
    for index, ch in enumerate(clean):
        if ch in _MD_ENTITY:
            out.append(_MD_ENTITY[ch])
        elif ch in _MD_PUNCTUATION:
            out.append("\\" + ch)
            if ch in "@#" or (ch == "-" and clean[index - 2 : index].lower() == "gh"):
                out.append(_NO_LINK)  # GH-123 is GitHub's other spelling of #123
        else:
            out.append(ch)
    return "".join(out)
