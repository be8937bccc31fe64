"""Class: reviewer text and file names that act, rather than read, in a SARIF log.

SARIF message strings are not plain bytes to a viewer: ``{0}`` pulls in an argument
(SARIF 2.1.0 §3.11.5), ``[text](target)`` is a link (§3.11.6), and the viewer shows
control and bidi characters as they are. A reviewer's reason, and a file name from the
pull request, must mean only themselves. Generated variants: reasons mixing SARIF's
special characters with controls, bidi overrides, zero-width characters, workflow
commands and a registered secret; file names with URI syntax (``:``, ``?``, ``#``,
``%``, spaces, a leading ``/``) and controls. Each must come out inert, and decode back
to exactly what the gate's safe-text rule makes of it.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

from hypothesis import given, settings
from hypothesis import strategies as st

from gate.export import sarif
from gate.findings import Anchor, Finding
from gate.safe import redact, untrusted
from tests.export_oracles import check_sarif

SECRET = "sk-live-0123456789abcdefABCDEF"
PIECES = st.sampled_from(
    ["{", "}", "{0}", "[", "]", "(", ")", "\\", "[x](https://e.invalid)", "::error::x", "##[",
     "\x1b[31m", "\u202e", "\u200b", "\r", "\n", "\t", SECRET, "a", " ", "é", "`"]
)  # fmt: skip
TEXT = st.lists(st.one_of(PIECES, st.text(max_size=4)), max_size=12).map("".join)


def sarif_unescape(text: str) -> str:
    """Undo SARIF's escapes as a viewer reads them (§3.11.5-6)."""
    out, i = [], 0
    while i < len(text):
        two = text[i : i + 2]
        if two in ("\\\\", "\\[", "\\]"):
            out.append(two[1])
            i += 2
        elif two in ("{{", "}}"):
            out.append(two[0])
            i += 2
        else:
            assert text[i] not in "[]{}", f"unescaped {text[i]!r} at {i} in {text!r}"
            assert text[i] != "\\", f"a lone backslash at {i} in {text!r}"
            out.append(text[i])
            i += 1
    return "".join(out)


@settings(max_examples=150, deadline=None)
@given(text=TEXT)
def test_a_reason_is_inert_and_decodes_to_its_safe_rendering(text: str) -> None:
    with redact.scope(SECRET):
        shown = sarif.inert(text)
        expected = untrusted.lines(text)
    assert sarif_unescape(shown) == expected
    assert SECRET not in shown
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f\u200b\u202e]", shown)


@settings(max_examples=60, deadline=None)
@given(text=TEXT, start=st.integers(1, 10_000), width=st.integers(0, 20))
def test_a_whole_log_of_hostile_findings_is_valid_sarif(text: str, start: int, width: int) -> None:
    findings = [
        Finding(reason=text, text=text, anchor=Anchor.ANCHORED, path="a.py", start=start,
                end=start + width),
        Finding(reason=text, text=text, anchor=Anchor.OUTSIDE, path=text or "b", start=1, end=1),
        Finding(reason=text, text=text, anchor=Anchor.GENERAL),
    ]  # fmt: skip
    with redact.scope(SECRET):
        log = sarif.build(findings, state="fail", reason="reviewer_fail", policy_version="1")
        data = sarif.dumps(log).decode("ascii")
    check_sarif(log)
    assert SECRET not in data
    notes = log["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    for item in [*log["runs"][0]["results"], *notes]:
        sarif_unescape(item["message"]["text"])


NAMES = st.lists(
    st.one_of(st.sampled_from(["/", ":", "?", "#", "%", " ", "%2e", "..", "\x00", "\u202e",
                               "http:", "a", "é"]), st.text(max_size=3)),
    min_size=1, max_size=10,
).map("".join)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(path=NAMES)
def test_a_file_name_is_a_relative_uri_that_decodes_to_itself(path: str) -> None:
    uri = sarif.uri_of(path)
    parts = urlsplit(uri)
    assert (parts.scheme, parts.netloc, parts.query, parts.fragment) == ("", "", "", "")
    assert not uri.startswith("/")
    assert re.fullmatch(r"[A-Za-z0-9\-._~/%]*", uri), uri
    assert unquote(uri, errors="surrogatepass") == path.lstrip("/")


def test_a_path_holding_a_secret_is_a_notification_with_the_secret_redacted() -> None:
    finding = Finding(
        reason="x", text="x", anchor=Anchor.ANCHORED, path=f"{SECRET}.py", start=1, end=1
    )
    with redact.scope(SECRET):
        log = sarif.build([finding], state="pass", reason="reviewer_pass", policy_version="1")
        data = sarif.dumps(log).decode("ascii")
    assert log["runs"][0]["results"] == []
    assert SECRET not in data
