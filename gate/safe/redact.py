"""Secrets: checked where they enter, redacted at every sink, in every form.

Two halves.

**At input** (:func:`checked_key`): an API key or token is stripped of
surrounding whitespace (a pasted secret often ends with a line break) and
refused, with a :class:`~gate.errors.ConfigError` naming where it came from
(the environment variable, the action input), when it holds a control
character, a space or a non-ASCII character. The message never shows the value.

**At output** (:func:`redact`, :func:`redact_bytes`, :func:`redact_value`): the
secrets in use are registered (:func:`remember`, :func:`scope`), and every sink
passes its text through here before anything is cut or escaped: terminal
lines, ``--json``, the certificate, the raw ``.response`` file, the commit
status, the job summary, the sticky comment, step outputs, annotations. A
secret is found in each form it can take on the way out (:func:`forms`): as
is, ``repr``-escaped, JSON-escaped, HTML-escaped, URL-encoded (``quote`` and
``quote_plus``, upper- and lower-case hex), base64 (standard and URL-safe
alphabets, at each of the three byte phases it can have inside a larger
base64 text, without the boundary characters that depend on its neighbours),
a hex dump (either case) and UTF-16 (little- and big-endian: an error body in
UTF-16 read as UTF-8 shows an ASCII key with a NUL beside every character).
Any run of :data:`WINDOW` or more consecutive characters of any form is
replaced by :data:`MARK`, so a secret cut short by a truncation elsewhere, or
echoed in part, is found too.

Finding runs: every run of at least ``WINDOW`` characters of a form contains
one whole *aligned block* (the form's characters ``[6m, 6m+6)``), so the text
is searched only for those blocks (one regular expression), each hit is checked
against the form's ``WINDOW``-character windows around it, and a window that
belongs to a form is extended along it as far as the text agrees.
"""

from __future__ import annotations

import base64
import html
import json
import re
import threading
import unicodedata
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote, quote_plus

from gate.errors import ConfigError

#: Values (and forms) shorter than this are never matched: they would match by chance.
#: The same bound as the log masks (:func:`gate.action.report.mask_commands`).
MIN_SECRET = 4
#: A run of this many consecutive characters of a secret's form is redacted.
WINDOW = 12
#: What a redacted run is replaced with.
MARK = "[redacted]"

_BLOCK = WINDOW // 2
# runs of whitespace and control characters split a registered value into pieces
_SEPARATORS = re.compile(r"[\s\x00-\x1f\x7f-\x9f]+")
_PERCENT = re.compile(r"%[0-9A-F]{2}")


# --- at input ----------------------------------------------------------------------


def key_problem(value: str) -> str | None:
    """Why ``value`` cannot be sent as a key (a phrase that never shows it), or None."""
    for index, ch in enumerate(value, start=1):
        where = f"at character {index} of {len(value)}"
        if unicodedata.category(ch) == "Cc":
            return f"a control character (U+{ord(ch):04X}) {where}"
        if ch.isspace():
            return f"whitespace {where}"
        if not ch.isascii():
            return f"a non-ASCII character {where}"
    return None


def checked_key(value: str | None, *, source: str) -> str | None:
    """The key from ``source`` with surrounding whitespace stripped; None when empty.

    Raises :class:`ConfigError` (``config_bad_secret``) naming ``source`` when what
    is left holds a control character, whitespace or a non-ASCII character (a key
    is printable ASCII), never showing the value.
    """
    if value is None:
        return None
    key = value.strip()
    if not key:
        return None
    problem = key_problem(key)
    if problem is not None:
        raise ConfigError(
            f"{source} is not a usable key: it holds {problem}; fix: store the secret "
            "again with the key alone (printable ASCII, no spaces or line breaks; the value "
            "is not shown)",
            reason="config_bad_secret",
        )
    return key


def first_key(*sources: tuple[str | None, str]) -> str | None:
    """The first non-empty key of ``(value, source)`` pairs, checked (:func:`checked_key`)."""
    for value, source in sources:
        key = checked_key(value, source=source)
        if key is not None:
            return key
    return None


# --- the forms of a secret -----------------------------------------------------------


def _utf8(text: str) -> bytes:
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def _utf16(text: str, codec: str) -> str:
    return text.encode(codec, "surrogatepass").decode("latin-1")


def _base64_cores(raw: bytes) -> list[str]:
    """The base64 characters of ``raw`` at each byte phase inside a larger base64 text.

    At phase ``p`` the secret starts ``p`` bytes into a 3-byte group; only the
    characters whose six bits all come from the secret are kept.
    """
    cores = []
    bits = 8 * len(raw)
    for phase in range(3):
        text = base64.b64encode(b"\0" * phase + raw).decode("ascii").rstrip("=")
        first = -(-8 * phase // 6)
        last = (8 * phase + bits) // 6
        core = text[first:last]
        cores += [core, core.replace("+", "-").replace("/", "_")]
    return cores


def forms(secret: str) -> tuple[str, ...]:
    """Every form ``secret`` can take in text written out (see the module docstring)."""
    raw = _utf8(secret)
    found = [
        secret,
        repr(secret)[1:-1],
        repr(raw)[2:-1],
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        html.escape(secret),
    ]
    found += [form.replace("/", "\\/") for form in found[3:5]]
    for safe in ("", "/"):
        for encoded in (quote(raw, safe=safe), quote_plus(raw, safe=safe)):
            found += [encoded, _PERCENT.sub(lambda m: m.group(0).lower(), encoded)]
    found += _base64_cores(raw)
    # hex dumps, and UTF-16 (a body in another encoding, read as UTF-8 or bytes: every
    # character of an ASCII key followed or preceded by NUL), as one character per byte
    found += [raw.hex(), raw.hex().upper()]
    found += [_utf16(secret, "utf-16-le"), _utf16(secret, "utf-16-be")]
    seen: dict[str, None] = {}
    for form in found:
        if form:
            seen.setdefault(form, None)
    return tuple(seen)


# --- finding and replacing -----------------------------------------------------------


def _agree_right(text: str, at: int, form: str, offset: int) -> int:
    """How many characters ``text[at:]`` and ``form[offset:]`` share (binary search on slices)."""
    low, high = 0, min(len(text) - at, len(form) - offset)
    while low < high:
        mid = (low + high + 1) // 2
        if text[at : at + mid] == form[offset : offset + mid]:
            low = mid
        else:
            high = mid - 1
    return low


def _agree_left(text: str, at: int, form: str, offset: int) -> int:
    """How many characters ``text[:at]`` and ``form[:offset]`` share at their ends."""
    low, high = 0, min(at, offset)
    while low < high:
        mid = (low + high + 1) // 2
        if text[at - mid : at] == form[offset - mid : offset]:
            low = mid
        else:
            high = mid - 1
    return low


class _Matcher:
    """Finds every run of ``WINDOW`` or more characters of any of the forms.

    One regular expression finds the next aligned block (see the module
    docstring); the windows around it that belong to a form are extended left and
    right along that form, and the search resumes near the end of the longest run,
    so a text made of secrets costs one step per run, not one per character.
    """

    def __init__(self, all_forms: Iterable[str]) -> None:
        # each window -> the form and offset it occurs at with the most of the form after it
        self.where: dict[str, tuple[str, int]] = {}
        blocks: set[str] = set()
        self.whole: set[str] = set()  # forms shorter than a window: matched whole
        for form in all_forms:
            if len(form) < MIN_SECRET:
                continue
            if len(form) < WINDOW:
                self.whole.add(form)
                continue
            for i in range(len(form) - WINDOW + 1):
                window = form[i : i + WINDOW]
                known = self.where.get(window)
                if known is None or len(known[0]) - known[1] < len(form) - i:
                    self.where[window] = (form, i)
            blocks.update(form[i : i + _BLOCK] for i in range(0, len(form) - _BLOCK + 1, _BLOCK))
        ordered = sorted(blocks)
        self.blocks = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    def spans(self, text: str) -> list[tuple[int, int]]:
        found: list[tuple[int, int]] = []
        pos = 0
        while self.blocks is not None:
            hit = self.blocks.search(text, pos)
            if hit is None:
                break
            at = hit.start()
            reach = at + 1
            inside = -1  # starts before this lie inside the run just found
            for start in range(max(0, at - _BLOCK + 1), at + 1):
                if start < inside:
                    continue
                known = self.where.get(text[start : start + WINDOW])
                if known is None:
                    continue
                # one alignment is enough: every window of a run is checked or covered, and
                # a run that goes on past this one is found from where the search resumes
                form, offset = known
                first = start - _agree_left(text, start, form, offset)
                last = start + _agree_right(text, start, form, offset)
                found.append((first, last))
                inside = last - WINDOW + 1
                reach = max(reach, inside)
            pos = reach
        for form in self.whole:
            at = text.find(form)
            while at != -1:
                found.append((at, at + len(form)))
                at = text.find(form, at + 1)
        return found


def _replace(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each union of overlapping spans replaced by one :data:`MARK`."""
    merged: list[list[int]] = []
    for first, last in sorted(spans):
        if merged and first <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], last)
        else:
            merged.append([first, last])
    out: list[str] = []
    done = 0
    for first, last in merged:
        out += [text[done:first], MARK]
        done = last
    out.append(text[done:])
    return "".join(out)


class Redactor:
    """Redaction for one set of secrets (values under :data:`MIN_SECRET` are ignored)."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self.secrets = tuple(secrets)
        all_forms = [form for secret in self.secrets for form in forms(secret)]
        self._text = _Matcher(all_forms)
        # bytes are matched as latin-1 text: one character per byte
        self._bytes = _Matcher({_utf8(form).decode("latin-1") for form in all_forms})

    def __bool__(self) -> bool:
        return bool(self.secrets)

    def text(self, text: str) -> str:
        return _replace(text, self._text.spans(text)) if self.secrets else text

    def found(self, text: str) -> bool:
        return bool(self.secrets) and bool(self._text.spans(text))

    def data(self, data: bytes) -> bytes:
        if not self.secrets:
            return data
        text = data.decode("latin-1")
        return _replace(text, self._bytes.spans(text)).encode("latin-1")

    def value(self, value: Any, *, path: str = "$", changed: list[str] | None = None) -> Any:
        """A copy of a JSON-like value with every string (and key) redacted.

        ``changed`` collects the JSON paths of the strings that were altered.
        """
        if isinstance(value, str):
            clean = self.text(value)
            if clean != value and changed is not None:
                changed.append(path)
            return clean
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for key, item in value.items():
                name = self.text(str(key))
                out[name] = self.value(item, path=f"{path}.{name}", changed=changed)
            return out
        if isinstance(value, list | tuple):
            return [
                self.value(item, path=f"{path}[{index}]", changed=changed)
                for index, item in enumerate(value)
            ]
        return value


def pieces(value: str | None) -> list[str]:
    """The parts of ``value`` worth registering: split at whitespace and control characters."""
    if not value:
        return []
    return [part for part in _SEPARATORS.split(value) if len(part) >= MIN_SECRET]


# --- the secrets of this run ----------------------------------------------------------

_LOCK = threading.Lock()
_REGISTERED: list[str] = []
_CACHE: list[Redactor] = []


def remember(*values: str | None) -> None:
    """Register secrets for every sink of this run (the current :func:`scope`)."""
    with _LOCK:
        for value in values:
            for part in pieces(value):
                if part not in _REGISTERED:
                    _REGISTERED.append(part)
                    _CACHE.clear()


@contextmanager
def scope(*values: str | None) -> Iterator[None]:
    """Register ``values`` (and whatever :func:`remember` adds) until the block ends."""
    with _LOCK:
        saved = list(_REGISTERED)
    remember(*values)
    try:
        yield
    finally:
        with _LOCK:
            _REGISTERED[:] = saved
            _CACHE.clear()


def active(*extra: str | None) -> Redactor:
    """The redactor for the registered secrets plus ``extra``."""
    more = [part for value in extra for part in pieces(value)]
    with _LOCK:
        if not _CACHE:
            _CACHE.append(Redactor(_REGISTERED))
        current = _CACHE[0]
    if not more or all(part in current.secrets for part in more):
        return current
    return Redactor([*current.secrets, *(p for p in more if p not in current.secrets)])


def redact(text: str, *extra: str | None) -> str:
    """``text`` with every registered secret (and ``extra``), in every form, replaced."""
    return active(*extra).text(text)


def redact_bytes(data: bytes, *extra: str | None) -> bytes:
    """:func:`redact` for bytes (a secret's UTF-8 forms, matched byte for byte)."""
    return active(*extra).data(data)


def redact_value(value: Any, *extra: str | None, changed: list[str] | None = None) -> Any:
    """:func:`redact` for every string of a JSON-like value."""
    return active(*extra).value(value, changed=changed)
