"""The forms :func:`gate.safe.redact.forms` writes a secret in, against their oracles.

``HTML_ESCAPES`` stands in for :func:`html.escape` (which loads the html package's
entity table at start-up); the standard library's function is the oracle here, over
any text and over the characters it escapes.
"""

from __future__ import annotations

import html

from hypothesis import given
from hypothesis import strategies as st

from gate.safe.redact import HTML_ESCAPES, forms


@given(st.text())
def test_the_table_escapes_as_html_escape_does(text: str) -> None:
    assert text.translate(HTML_ESCAPES) == html.escape(text)


@given(st.text(alphabet="&<>\"'ab/=+", min_size=1))
def test_the_table_on_text_made_of_what_it_escapes(text: str) -> None:
    assert text.translate(HTML_ESCAPES) == html.escape(text)


def test_a_secret_with_every_escaped_character_has_its_html_form() -> None:
    secret = "k&e<y>\"'0123456789"
    assert html.escape(secret) in forms(secret)
