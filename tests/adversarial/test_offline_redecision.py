"""Class: an offline re-decision that accepts bytes the certificate does not name.

Cause: ``review-gate verify --from-certificate CERT --diff DIFF`` re-planned ``DIFF`` and
kept only the re-plan's chunks. A section the re-plan marks ``too_large`` (one hunk over
the recorded ``max_chunk_bytes``, or a binary patch) was dropped without a word, and
``DIFF`` was never compared with the certificate's ``binding.diff_sha``, its coverage or
its manifest: a genuine two-chunk certificate plus an extra one-hunk file re-decided
``pass`` (exit 0) wherever the file was placed, and ``--certificate`` wrote a new pass
certificate for it.

Fix: the re-decision accepts only the bytes the certificate names
(:func:`gate.commands.verify.names_these_bytes`, :func:`gate.review.chunked.redecide`):
``sha256(DIFF)`` must be the recorded binding, the re-plan's manifest the recorded one,
every file the re-plan leaves out named so in the recorded coverage; otherwise
``incomplete`` (``certificate_mismatch``), naming the cause. The same for a certificate
of a review in one request.

Variants: an extra too-large file, an extra binary patch and an extra small file at every
section boundary of a genuine chunked certificate; a section removed; one byte changed in
each section; the recorded binding, coverage and manifest each edited; and for a
one-request certificate, the recorded binding and coverage edited.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gate.cli import main
from gate.decide import envelope
from gate.decide.attempt import ReviewOutcome
from gate.decide.chunk_table import aggregate
from gate.decide.decision import Binding, decide
from gate.diff import diff_sha, select, split_diff
from gate.lab.demo import answer
from gate.review import certificate
from gate.review.chunked import manifest_json
from gate.review.chunks import plan
from gate.review.result import ChunkReview

POLICY = "1"


def _file(name: str, lines: int) -> bytes:
    out = f"diff --git a/{name} b/{name}\n--- a/{name}\n+++ b/{name}\n".encode()
    out += f"@@ -1 +1,{lines} @@\n-old\n".encode()
    return out + b"".join(f"+value_{j} = {j}  # {name}\n".encode() for j in range(lines))


SECTIONS = [_file(f"pkg/mod{i}.py", 40) for i in range(4)]
DIFF = b"".join(SECTIONS)
LIMIT = 2 * len(SECTIONS[0]) + 10  # two files a chunk: a genuine two-chunk certificate
BIG = _file("pkg/extra.py", 400)  # one hunk over LIMIT: too_large when re-planned
BINARY = (
    b"diff --git a/pkg/blob.bin b/pkg/blob.bin\nindex 1..2 100644\n"
    b"GIT binary patch\nliteral 3\nKcmZ?wdoL\n\nliteral 0\nHcmV?d00001\n\n"
)
SMALL = _file("pkg/tiny.py", 2)


def _certificate(diff: bytes) -> dict[str, Any]:
    """A genuine certificate of ``diff`` reviewed in chunks, every chunk passing."""
    selected = select(split_diff(diff))
    cut = plan(selected.data, selected.coverage, max_chunk_bytes=LIMIT)
    reviews = []
    for chunk in cut.chunks:
        sealed = envelope.seal(answer("pass", Binding(chunk.sha, POLICY)).encode())
        decision = decide(sealed, binding=Binding(chunk.sha, POLICY), min_confidence=0.5)
        outcome = ReviewOutcome(attempts=(), envelope=sealed)
        reviews.append(ChunkReview(chunk, len(cut.chunks), "0" * 64, outcome, decision))
    rows = [(r.chunk.name, r.decision) for r in reviews]
    whole = Binding(diff_sha(diff), POLICY)
    decided = aggregate(rows, binding=whole)
    return certificate.build(
        decided,
        binding=whole,
        attempts=(),
        inputs={"diff": whole.diff_sha},
        envelope=None,
        extra={"coverage": cut.coverage.to_json(), "chunks": manifest_json(cut, reviews)},
    )


CERT = _certificate(DIFF)


def _verify(tmp_path: Path, cert: dict[str, Any], diff: bytes) -> tuple[int, Path]:
    cert_path, diff_path, out = tmp_path / "c.json", tmp_path / "d.diff", tmp_path / "o.json"
    cert_path.write_text(json.dumps(cert))
    diff_path.write_bytes(diff)
    code = main(
        [
            *("verify", "--from-certificate", str(cert_path), "--diff", str(diff_path)),
            *("--policy-version", POLICY, "--min-confidence", "0.5"),
            *("--certificate", str(out), "--json"),
        ]
    )
    return code, out


def _variants() -> list[tuple[str, bytes]]:
    out: list[tuple[str, bytes]] = []
    for at in range(len(SECTIONS) + 1):
        for label, extra in (("too_large", BIG), ("binary", BINARY), ("small", SMALL)):
            out.append((f"{label} file at {at}", b"".join([*SECTIONS[:at], extra, *SECTIONS[at:]])))
    for at in range(len(SECTIONS)):
        out.append((f"section {at} removed", b"".join(SECTIONS[:at] + SECTIONS[at + 1 :])))
        changed = SECTIONS[at].replace(b"value_7 = 7", b"value_7 = 8")
        out.append(
            (f"section {at} changed", b"".join([*SECTIONS[:at], changed, *SECTIONS[at + 1 :]]))
        )
    return out


VARIANTS = _variants()


def test_the_genuine_certificate_re_decides_pass(tmp_path: Path) -> None:
    assert len(CERT["context"]["chunks"]["manifest"]["chunks"]) == 2
    code, out = _verify(tmp_path, CERT, DIFF)
    assert code == 0
    assert json.loads(out.read_text())["decision"]["state"] == "pass"


@pytest.mark.parametrize(("name", "diff"), VARIANTS, ids=[n for n, _ in VARIANTS])
def test_other_bytes_never_re_decide_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, diff: bytes
) -> None:
    code, out = _verify(tmp_path, CERT, diff)
    assert code == 3, name
    assert json.loads(out.read_text())["decision"]["state"] != "pass", name
    assert json.loads(capsys.readouterr().out)["reason"] == "certificate_mismatch", name


def _re_planned_with(extra: bytes, at: int) -> tuple[dict[str, Any], bytes]:
    """A certificate whose binding names a diff with ``extra`` but whose record is the
    genuine two-chunk one (a forger who updated the binding only)."""
    diff = b"".join([*SECTIONS[:at], extra, *SECTIONS[at:]])
    cert = json.loads(json.dumps(CERT))
    cert["binding"]["diff_sha"] = diff_sha(diff)
    return cert, diff


@pytest.mark.parametrize("at", range(len(SECTIONS) + 1))
@pytest.mark.parametrize("extra", [BIG, BINARY], ids=["too_large", "binary"])
def test_a_left_out_file_the_coverage_does_not_name_blocks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], at: int, extra: bytes
) -> None:
    cert, diff = _re_planned_with(extra, at)
    code, _ = _verify(tmp_path, cert, diff)
    assert code == 3
    result = json.loads(capsys.readouterr().out)
    assert (result["state"], result["reason"]) == ("incomplete", "certificate_mismatch")


def _edits() -> list[tuple[str, Any]]:
    def binding(c: dict[str, Any]) -> None:
        c["binding"]["diff_sha"] = "0" * 64

    def coverage(c: dict[str, Any]) -> None:
        c["context"]["coverage"]["diff_sha"] = "0" * 64

    def no_coverage(c: dict[str, Any]) -> None:
        del c["context"]["coverage"]

    def manifest(c: dict[str, Any]) -> None:
        c["context"]["chunks"]["manifest"]["chunks"].pop()

    def manifest_sha(c: dict[str, Any]) -> None:
        c["context"]["chunks"]["manifest"]["sha256"] = "0" * 64

    def no_manifest(c: dict[str, Any]) -> None:
        del c["context"]["chunks"]["manifest"]

    def limit(c: dict[str, Any]) -> None:
        c["context"]["chunks"]["max_chunk_bytes"] = LIMIT * 4

    return [
        (f.__name__, f)
        for f in (binding, coverage, no_coverage, manifest, manifest_sha, no_manifest, limit)
    ]


@pytest.mark.parametrize(("name", "edit"), _edits(), ids=[n for n, _ in _edits()])
def test_an_edited_record_never_re_decides_pass(tmp_path: Path, name: str, edit: Any) -> None:
    cert = json.loads(json.dumps(CERT))
    edit(cert)
    code, out = _verify(tmp_path, cert, DIFF)
    assert code == 3, name
    assert json.loads(out.read_text())["decision"]["state"] != "pass", name


def _one_request() -> dict[str, Any]:
    binding = Binding(diff_sha(DIFF), POLICY)
    sealed = envelope.seal(answer("pass", binding).encode())
    selected = select(split_diff(DIFF))
    return certificate.build(
        decide(sealed, binding=binding, min_confidence=0.5),
        binding=binding,
        attempts=(),
        inputs={"diff": binding.diff_sha},
        envelope=sealed,
        extra={"coverage": selected.coverage.to_json()},
    )


@pytest.mark.parametrize("field", ["binding", "coverage"])
def test_a_one_request_certificate_names_its_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str
) -> None:
    cert = _one_request()
    assert _verify(tmp_path, cert, DIFF)[0] == 0
    capsys.readouterr()
    target = cert["binding"] if field == "binding" else cert["context"]["coverage"]
    target["diff_sha"] = diff_sha(DIFF + SMALL)
    code, out = _verify(tmp_path, cert, DIFF)
    assert code == 3
    assert json.loads(capsys.readouterr().out)["reason"] == "certificate_mismatch"
    assert json.loads(out.read_text())["decision"]["state"] != "pass"
