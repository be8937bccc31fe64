"""Class: the bytes of a changed file shown by ``context: files`` (``file_text`` in
gate/review/context.py), generated from the encodings and line endings a file can have.

A file is shown only as its exact text (the reviewer must see what the blob id names) or
named as left out, with why. Each file below is built from pieces of a class: LF, CRLF,
CR, U+2028/2029 and NEL line endings, a UTF-8 BOM, a NUL, bytes that are not UTF-8 (a
Latin-1 tail, a cut multi-byte character, an encoded surrogate ``ED A0 80``, an overlong
``C0 AF``), zero-width and fullwidth characters, lines shaped like the prompt's fences,
binding lines and read-word lines, and sizes around the limit (bounded). Each is the
very text (decoded strictly, nothing replaced or normalized) or left out as ``binary``
(a NUL), ``undecodable`` (not UTF-8) or ``too_large``; never an exception. A file that
carries a read word of the prompt beside its part's name is refused by the prompt
(tests/adversarial/test_forged_read_words.py).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gate.review.context import MAX_FILE_BYTES, LeftWhy, file_text

PIECES = [
    b"plain line\n", b"crlf line\r\n", b"cr line\r", "sep\u2028line\u2029".encode(),
    "nel\x85".encode(), b"\xef\xbb\xbf", "zero\u200bwidth\ufeff".encode(),
    "\uff46\uff55\uff4c\uff4c".encode(), b"````json\n", b"~~~~\n", b"```\n",
    b"diff_sha: " + b"0" * 64 + b"\n", b"policy_version: 1\n",
    b'"read": {"tail": "apple"}\n', b"\t \n",
]  # fmt: skip
BAD = [b"\0", b"\xff\xfe", b"\xe2\x82", b"\xed\xa0\x80", b"\xc0\xaf", b"caf\xe9"]


@settings(max_examples=200, deadline=None)
@given(
    pieces=st.lists(st.sampled_from(PIECES), max_size=30),
    bad=st.one_of(st.none(), st.sampled_from(BAD)),
    at=st.integers(min_value=0, max_value=30),
)
def test_a_file_is_its_exact_text_or_named_as_left_out(
    pieces: list[bytes], bad: bytes | None, at: int
) -> None:
    if bad is not None:
        pieces = [*pieces[:at], bad, *pieces[at:]]
    data = b"".join(pieces)
    shown = file_text("src/a.py", data)
    if b"\0" in data:
        assert shown.why is LeftWhy.BINARY
        return
    try:
        expected = data.decode("utf-8")
    except UnicodeDecodeError:
        assert shown.why is LeftWhy.UNDECODABLE
        assert "not UTF-8 at byte" in shown.detail
        return
    assert shown.why is None, shown
    assert shown.text == expected  # no BOM dropped, no line ending changed
    assert shown.text.encode("utf-8") == data


def test_sizes_around_the_limit() -> None:
    assert file_text("a", b"x" * MAX_FILE_BYTES).text == "x" * MAX_FILE_BYTES
    assert file_text("a", b"x" * (MAX_FILE_BYTES + 1)).why is LeftWhy.TOO_LARGE
    assert file_text("a", None, missing="gone").why is LeftWhy.UNAVAILABLE
