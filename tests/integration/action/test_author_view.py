"""The pictures of what the author sees are what the action writes today (issue 34, finding 5).

``scripts/author_view.py`` runs the real action against the fake GitHub for a pass, a fail
with findings and a block not about the code, and renders the status, the sticky comment
and the job summary with cmarkgfm into ``docs/images/author-view-*.html`` (and, with
``--png``, pictures of them). This test runs it again and compares the rendered HTML with
the committed pages (values that differ on every run, digests over a time or a port, are
masked on both sides): a change to what the action reports fails here until the pages and
pictures are regenerated (``python -m scripts.author_view --png``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts.author_view import CASES, OUT, comparable, pages, render_markdown

ROOT = Path(__file__).resolve().parents[3]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def fresh() -> dict[str, str]:
    return pages()


def test_the_committed_pages_are_what_the_action_writes_now(fresh: dict[str, str]) -> None:
    committed = {p.name: p.read_text("utf-8") for p in OUT.glob("author-view-*.html")}
    assert sorted(committed) == sorted(fresh)
    for name, text in fresh.items():
        assert comparable(committed[name]) == comparable(text), (
            f"docs/images/{name} is stale: run python -m scripts.author_view --png"
        )


def test_each_page_has_its_picture() -> None:
    for case in CASES:
        for suffix in (".png", "-top.png"):  # the whole page; the merge box and comment
            picture = OUT / f"author-view-{case.name}{suffix}"
            assert picture.read_bytes()[:8] == PNG_SIGNATURE, picture


def test_the_pages_show_each_surface_of_each_case(fresh: dict[str, str]) -> None:
    expected = {
        "pass": ("Successful check", "review-gate: pass", "reviewer_pass"),
        "fail": ("Failing check", "review-gate: fail", "(annotated)"),
        "unavailable": ("Errored check", "not about the code", "quota_exhausted"),
    }
    for name, words in expected.items():
        text = fresh[f"author-view-{name}.html"]
        for word in words:
            assert word in text, (name, word)
        # GitHub drops HTML comments: the sticky marker and the history block stay hidden
        assert "review-gate:history" not in text
        assert "review-gate:sticky" not in text


def test_rendering_is_githubs() -> None:
    # a comment keeps its line breaks, a summary does not; raw HTML comments are dropped
    assert render_markdown("a\nb", comment=True) == "<p>a<br />\nb</p>\n"
    assert render_markdown("a\nb") == "<p>a\nb</p>\n"
    assert render_markdown("x <!-- hidden -->") == "<p>x </p>\n"
    assert "<table>" in render_markdown("| a |\n|---|\n| 1 |\n")


@pytest.mark.parametrize("doc", ["README.md", "docs/action.md"])
def test_the_readme_and_the_action_page_show_the_pictures(doc: str) -> None:
    text = (ROOT / doc).read_text("utf-8")
    for case in CASES:
        assert f"images/author-view-{case.name}.png)" in text, (doc, case.name)
    if doc == "README.md":  # the part the author sees first, inline
        for case in CASES:
            assert f"images/author-view-{case.name}-top.png)" in text, case.name
