"""The forms :func:`gate.safe.redact.forms` writes a secret in: its HTML-escaped form."""

from __future__ import annotations

import html

from gate.safe.redact import forms


def test_a_secret_with_every_escaped_character_has_its_html_form() -> None:
    secret = "k&e<y>\"'0123456789"
    assert html.escape(secret) in forms(secret)
