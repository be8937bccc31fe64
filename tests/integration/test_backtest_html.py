"""The backtest's HTML report opened in headless Chromium (Debian's ``chromium``): the chart
renders (a screenshot of a non-empty size) and the DOM names every config, with no network.

Chromium is installed by .ci/run; on a developer's machine without it the test skips,
unless CI=true, where a missing browser fails."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from gate import cli
from gate.lab.scripted import Scripted
from gate.lab.sim import MODEL, ReviewerSimulator
from tests.integration.test_backtest_cli import KEY, write_cases

TIMEOUT_S = 120
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--no-first-run")  # fmt: skip


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is not installed (apt-get install -y chromium)")
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    return found


def browse(tmp_path: Path, page: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    profile = tmp_path / "profile"
    profile.mkdir(exist_ok=True)
    return subprocess.run(
        [chromium(), *FLAGS, f"--user-data-dir={profile}", *args, page.as_uri()],
        capture_output=True,
        timeout=TIMEOUT_S,
        check=True,
        cwd=tmp_path,
    )


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_the_html_report_renders_its_chart_in_chromium(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    modes = [("lowconf", "allow")] * 2 + [("pass", "allow"), ("fail", "block")]
    cases = write_cases(tmp_path / "cases", modes)
    out = tmp_path / "out"
    with ReviewerSimulator("openai", chooser=Scripted()) as sim:
        code = cli.main(["backtest", "--cases", str(cases), "--provider", "openai",
                         "--base-url", sim.base_url, "--model", MODEL, "--out", str(out),
                         "--min-confidence", "0.4", "--min-confidence", "0.8"])  # fmt: skip
    assert code == 0
    page = out / "report.html"
    html = page.read_text()
    assert "<script" not in html
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    shot = tmp_path / "shot.png"
    browse(tmp_path, page, f"--screenshot={shot}", "--window-size=1000,900")
    width, height = png_size(shot.read_bytes())
    assert width > 0
    assert height > 0
    assert shot.stat().st_size > 5_000  # a page with a chart, not a blank one
    dom = browse(tmp_path, page, "--dump-dom").stdout.decode("utf-8")
    assert "<svg" in dom
    assert 'href="certificates/min-confidence_0.8-' in dom  # each answer links its certificate
    for name in ("min-confidence=0.4", "min-confidence=0.8"):
        assert name in dom
    report = json.loads((out / "report.json").read_text())
    assert [c["name"] for c in report["configs"]] == ["min-confidence=0.4", "min-confidence=0.8"]
