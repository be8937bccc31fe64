"""What a pull request's author sees, as pictures: regenerate docs/images/author-view-*.

Three runs of the real action (:func:`gate.action.run.run_action`), each against the fake
GitHub (``tests/fakes/github.py``, every request checked against GitHub's OpenAPI
description) and a local reviewer on 127.0.0.1 (:class:`gate.lab.sim.ReviewerSimulator`):

- ``pass``: the reviewer passes the change;
- ``fail``: the reviewer rejects it with two findings on lines of the diff;
- ``unavailable``: the provider answers its quota stop, a block not about the code.

From each run it takes what the author sees: the commit status as the pull request's
checks list shows it (context, state, description), the sticky comment the gate wrote, and
the job summary (the run's summary page, which the check run's details link opens). The
Markdown is rendered by cmarkgfm (GitHub's own renderer) into one HTML page styled like a
pull request page, written as ``docs/images/author-view-<case>.html``; ``--png`` also
captures each page with headless Chromium (Debian's ``chromium``) beside it: ``.png``, the
whole page, and ``-top.png``, the merge box and the sticky comment (what the README shows).

    python -m scripts.author_view [--out docs/images] [--png] [--chromium PATH]

A test (``tests/integration/action/test_author_view.py``) renders the pages again and
fails when the committed HTML differs from what the code writes now: after changing what
the action reports, run this script with ``--png`` and commit the pages and pictures.
Needs ``npm ci --prefix tests/node`` (the fake GitHub's OpenAPI description).
"""

from __future__ import annotations

import argparse
import contextlib
import html
import io
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cmarkgfm  # type: ignore[import-untyped]
from cmarkgfm.cmark import Options  # type: ignore[import-untyped]

from gate.action.run import run_action
from gate.decide.decision import Binding
from gate.lab.demo import verdict_block
from gate.lab.sim import ReviewerSimulator, SimResponse, extract_prompt, quota_response
from gate.review.prompt import binding_in
from tests.fakes.events import pull_request_event
from tests.fakes.github import FakeGitHub

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "images"
REPOSITORY = "octo-org/hello-world"
NUMBER = 7
HEAD = "c0ffee" + "1" * 34
BASE = "ba5e" + "2" * 36
RUN_ID = "4242"
SERVER = "https://github.com"
#: the width of the captured page, in CSS pixels (the height is each page's own)
WIDTH = 900
#: Chromium's own bound on one capture, seconds
CAPTURE_TIMEOUT_S = 60
DIFF = b"""diff --git a/billing/invoice.py b/billing/invoice.py
index 83db48f..bf269f4 100644
--- a/billing/invoice.py
+++ b/billing/invoice.py
@@ -1,3 +1,5 @@
 def invoice_total(items, tax_rate):
-    subtotal = sum(i.price * i.qty for i in items)
-    return subtotal * (1 + tax_rate)
+    if tax_rate < 0:
+        raise ValueError("negative tax rate")
+    subtotal = round(sum(i.price * i.qty for i in items), 2)
+    return round(subtotal * (1 + tax_rate), 2)
"""
#: GitHub renders raw HTML, then its sanitizer keeps an allow-list (``details`` and
#: ``summary`` among them) and drops comments (the sticky marker, the history block)
CMARK_OPTIONS = Options.CMARK_OPT_UNSAFE
#: in an issue or pull request comment a line break is a line break (not in a summary)
COMMENT_OPTIONS = CMARK_OPTIONS | Options.CMARK_OPT_HARDBREAKS
_HTML_COMMENT = re.compile(r"<!--.*?-->\n?", re.DOTALL)
#: what differs from one run to the next: digests over a creation time or over the local
#: reviewer's port (the certificate, the config, the question tag ``[q:...]``)
_RUN_SPECIFIC = re.compile(r"\b[0-9a-f]{16,64}\b")


@dataclass(frozen=True)
class Case:
    name: str
    title: str  # what the picture shows, in the page's heading
    answer: Callable[[dict[str, Any]], SimResponse]


def _verdict(verdict: str, reasons: list[str], confidence: float) -> Callable[..., SimResponse]:
    def answer(request: dict[str, Any]) -> SimResponse:
        _, user = extract_prompt("openai", request)
        binding = binding_in(user) or Binding("", "")
        return SimResponse(
            content="Review:\n\n" + verdict_block(binding, verdict, reasons, confidence)
        )

    return answer


CASES = (
    Case(
        "pass",
        "a pass",
        _verdict(
            "pass",
            [
                "invoice_total now refuses a negative tax rate before computing anything",
                "rounding to the cent happens once on the subtotal and once on the total",
            ],
            0.92,
        ),
    ),
    Case(
        "fail",
        "a fail with findings",
        _verdict(
            "fail",
            [
                "billing/invoice.py:4: rounding the subtotal before tax changes totals "
                "by up to half a cent per line; round once, at the end",
                "billing/invoice.py:2-3: a ValueError here reaches the caller unhandled; "
                "the API layer turns it into a 500",
            ],
            0.88,
        ),
    ),
    Case("unavailable", "a block not about the code", lambda _r: quota_response("openai")),
)


@dataclass(frozen=True)
class Seen:
    """What the author sees after one run."""

    context: str
    state: str  # the commit status's state
    description: str
    comment: str  # the sticky comment's Markdown
    summary: str  # the job summary's Markdown


def run_case(case: Case, folder: Path) -> Seen:
    """One run of the action for ``case``; what it posted and wrote."""
    with (
        FakeGitHub(REPOSITORY) as github,
        ReviewerSimulator("openai", chooser=case.answer) as reviewer,
    ):
        github.add_pull(NUMBER, head_sha=HEAD, base_sha=BASE, diff=DIFF)
        event = folder / "event.json"
        payload = pull_request_event(
            "opened", repository=REPOSITORY, number=NUMBER, head_sha=HEAD, base_sha=BASE
        )
        event.write_text(json.dumps(payload), "utf-8")
        summary, output = folder / "summary.md", folder / "output.txt"
        summary.write_text("", "utf-8")
        output.write_text("", "utf-8")
        env = {
            "GITHUB_EVENT_NAME": "pull_request",
            "GITHUB_EVENT_PATH": str(event),
            "GITHUB_REPOSITORY": REPOSITORY,
            "GITHUB_API_URL": github.api_url,
            "GITHUB_SERVER_URL": SERVER,
            "GITHUB_RUN_ID": RUN_ID,
            "RUNNER_TEMP": str(folder),
            "GITHUB_WORKSPACE": str(folder),
            "GITHUB_OUTPUT": str(output),
            "GITHUB_STEP_SUMMARY": str(summary),
            "INPUT_TOKEN": github.token,
            "INPUT_PROVIDER": "openai",
            "INPUT_MODEL": "gpt-4o-mini",
            "INPUT_BASE-URL": reviewer.base_url,
            "INPUT_API-KEY": "sk-author-view-0123456789",
            "INPUT_ATTEMPTS": "1",
            "INPUT_CERTIFICATE-DIR": "review-gate-certificate",
        }
        # the certificate folder is relative to the workspace, as in a workflow
        with contextlib.chdir(folder):
            run_action(env, out=io.StringIO(), sleep=lambda _s: None, throttle=False)
        if github.violations:
            raise SystemExit(f"{case.name}: the fake GitHub saw {github.violations[:3]}")
        status = github.status_list(HEAD)[-1]
        [comment] = github.comments.get(NUMBER, [])
        return Seen(
            context=str(status["context"]),
            state=str(status["state"]),
            description=str(status["description"]),
            comment=str(comment["body"]),
            summary=summary.read_text("utf-8"),
        )


def seen_all(cases: tuple[Case, ...] = CASES) -> dict[str, Seen]:
    with tempfile.TemporaryDirectory(prefix="author-view-") as tmp:
        seen = {}
        for case in cases:
            folder = Path(tmp) / case.name
            folder.mkdir()
            seen[case.name] = run_case(case, folder)
        return seen


# --- the page ------------------------------------------------------------------------

_STATE_ICON = {"success": ("✓", "ok"), "failure": ("✕", "bad"), "error": ("!", "bad")}
_STATE_WORD = {"success": "Successful", "failure": "Failing", "error": "Errored"}

CSS = """
body { margin: 0; background: #fff; color: #1f2328; font: 14px/1.5 -apple-system,
  "Segoe UI", "Noto Sans", "Liberation Sans", "DejaVu Sans", Helvetica, Arial, sans-serif,
  "Noto Color Emoji"; }
main { width: 860px; padding: 16px 20px 24px; }
h1.case { font-size: 20px; font-weight: 400; margin: 0 0 12px; }
h1.case span { color: #59636e; }
.box { border: 1px solid #d0d7de; border-radius: 6px; margin: 0 0 16px; overflow: hidden; }
.box > header { background: #f6f8fa; border-bottom: 1px solid #d0d7de; padding: 8px 16px;
  color: #59636e; }
.box > header b { color: #1f2328; }
.box > .body { padding: 12px 16px; }
.check { display: flex; align-items: center; gap: 8px; padding: 10px 16px; }
.check .icon { width: 18px; height: 18px; border-radius: 50%; color: #fff; font-size: 12px;
  font-weight: 700; display: inline-flex; align-items: center; justify-content: center; }
.check .icon.ok { background: #1a7f37; } .check .icon.bad { background: #d1242f; }
.check .desc { color: #59636e; overflow: hidden; text-overflow: ellipsis; white-space: nowrap;
  flex: 1; }
.check .badge { border: 1px solid #d0d7de; border-radius: 2em; padding: 0 7px; font-size: 12px;
  color: #59636e; }
.check a { color: #0969da; text-decoration: none; }
.markdown h2 { font-size: 1.5em; border-bottom: 1px solid #d1d9e0; padding-bottom: .3em;
  margin: 8px 0 16px; }
.markdown h3 { font-size: 1.25em; margin: 20px 0 12px; }
.markdown h3:first-child { margin-top: 4px; }
.markdown p, .markdown ul, .markdown table, .markdown details { margin: 0 0 12px; }
.markdown code { background: rgba(129,139,152,.15); border-radius: 6px; padding: .2em .4em;
  font: 85% ui-monospace, "DejaVu Sans Mono", "Liberation Mono", monospace; }
.markdown table { border-collapse: collapse; display: block; overflow: auto; }
.markdown th, .markdown td { border: 1px solid #d1d9e0; padding: 6px 13px; }
.markdown tr:nth-child(2n) { background: #f6f8fa; }
.markdown a { color: #0969da; text-decoration: none; }
.markdown blockquote { color: #59636e; border-left: .25em solid #d1d9e0; margin: 0 0 12px;
  padding: 0 1em; }
"""


def render_markdown(text: str, *, comment: bool = False) -> str:
    """``text`` as GitHub shows it: cmark-gfm with its extensions, HTML comments dropped;
    a ``comment`` (an issue or pull request comment) with its line breaks kept."""
    options = COMMENT_OPTIONS if comment else CMARK_OPTIONS
    rendered = cmarkgfm.github_flavored_markdown_to_html(text, options=options)
    return _HTML_COMMENT.sub("", rendered)


def page(case: Case, seen: Seen) -> str:
    """The HTML page for one case: the checks list row, the sticky comment, the summary."""
    icon, tone = _STATE_ICON[seen.state]
    e = html.escape
    return f"""<!DOCTYPE html>
<html lang="en">
<!-- generated by scripts/author_view.py from the action's output; do not edit -->
<head>
<meta charset="utf-8">
<title>review-gate: what the author sees, {e(case.title)}</title>
<style>{CSS}</style>
</head>
<body>
<main>
<h1 class="case">What the author sees: <span>{e(case.title)}</span></h1>
<section class="box">
<header><b>{e(_STATE_WORD[seen.state])} check</b> · the merge box of pull request #{NUMBER}</header>
<div class="check"><span class="icon {tone}">{icon}</span><b>{e(seen.context)}</b>
<span class="desc">— {e(seen.description)}</span><span class="badge">Required</span>
<a href="#summary">Details</a></div>
</section>
<section class="box" id="comment">
<header><b>github-actions</b> bot commented
(the sticky comment, edited in place on each run)</header>
<div class="body markdown">
{render_markdown(seen.comment, comment=True)}</div>
</section>
<section class="box" id="summary">
<header><b>review-gate</b> summary (the run's page, where Details leads)</header>
<div class="body markdown">
{render_markdown(seen.summary)}</div>
</section>
</main>
</body>
</html>
"""


def pages(cases: tuple[Case, ...] = CASES) -> dict[str, str]:
    """Each case's page, by file name."""
    seen = seen_all(cases)
    return {f"author-view-{case.name}.html": page(case, seen[case.name]) for case in cases}


def comparable(text: str) -> str:
    """A page with the values that differ from run to run replaced (for the test)."""
    return _RUN_SPECIFIC.sub("<hex>", text)


# --- the pictures ----------------------------------------------------------------------

#: Debian's Chromium, headless; a fresh profile and no network beyond the file itself
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
    "--hide-scrollbars",
)
#: reports, in the page's title, its whole height and where the sticky comment ends
_HEIGHT_PROBE = (
    "<script>document.addEventListener('DOMContentLoaded', () => {"
    "const c = document.getElementById('comment').getBoundingClientRect();"
    "document.title = 'height=' + document.documentElement.scrollHeight"
    " + ';top=' + Math.ceil(c.bottom + 16);});</script>"
)


def _chromium(binary: str, args: list[str], profile: Path) -> str:
    done = subprocess.run(
        [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=CAPTURE_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"chromium failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


def capture(binary: str, source: Path, whole: Path, top: Path) -> None:
    """``source`` as two PNGs ``WIDTH`` pixels wide: ``whole`` (the page) and ``top`` (the
    merge box and the sticky comment, what the author sees first)."""
    with tempfile.TemporaryDirectory(prefix="author-view-chromium-") as tmp:
        profile = Path(tmp) / "profile"
        probe = Path(tmp) / "probe.html"
        probe.write_text(source.read_text("utf-8").replace("</head>", _HEIGHT_PROBE + "</head>"))
        dom = _chromium(binary, ["--dump-dom", probe.as_uri()], profile)
        found = re.search(r"<title>height=(\d+);top=(\d+)</title>", dom)
        if found is None:
            raise SystemExit(f"chromium did not report the height of {source}")
        for target, height in ((whole, found.group(1)), (top, found.group(2))):
            shot = Path(tmp) / "shot.png"
            size = f"--window-size={WIDTH},{height}"
            _chromium(binary, [size, f"--screenshot={shot}", source.as_uri()], profile)
            shutil.copyfile(shot, target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help="folder (default docs/images)")
    parser.add_argument("--png", action="store_true", help="also capture each page as PNG")
    parser.add_argument("--chromium", default="chromium", help="Chromium binary")
    args = parser.parse_args(argv)
    binary = shutil.which(args.chromium) if args.png else None
    if args.png and binary is None:
        raise SystemExit(f"{args.chromium} not found: apt-get install -y chromium")
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in pages().items():
        target = args.out / name
        target.write_text(text, "utf-8")
        print(f"wrote {target}")
        if binary is not None:
            whole = target.with_suffix(".png")
            top = target.with_name(target.stem + "-top.png")
            capture(binary, target, whole, top)
            print(f"wrote {whole} and {top}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
