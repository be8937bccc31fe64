"""Signed MC1 end to end: ``review --public-key`` against a signing reviewer simulator on
127.0.0.1 records the signature in the certificate; ``verify --from-certificate
--public-key`` checks it offline, says which key signed, and refuses a certificate whose
signature does not check (another key, a changed envelope or prompt, none at all)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ec import SECP256R1, generate_private_key
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from gate.cli import main
from gate.decide import signature
from gate.decide.envelope import seal
from gate.lab.sim import MODEL, ReviewerSimulator, extract_prompt
from gate.review.prompt import binding_in
from tests.export_oracles import check_statement
from tests.unit.test_certificate import schema_validator
from tests.verdicts import fenced_verdict

KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
OTHER = Ed25519PrivateKey.from_private_bytes(bytes(range(1, 33)))
KEY_ID = signature.key_id(KEY.public_key())
DIFF = (
    b"diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n"
    b"@@ -1 +1 @@\n-retries = 0\n+retries = 3\n"
)


def bound_pass(request: dict[str, Any]) -> str:
    binding = binding_in(extract_prompt("mc1", request)[1])
    assert binding is not None
    return fenced_verdict(binding, reasons=["retries are bounded"])


def public_pem(key: Ed25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    out = {name: tmp_path / f"{name}.pub" for name in ("key", "other", "ec", "junk")}
    out["key"].write_bytes(public_pem(KEY))
    out["other"].write_bytes(public_pem(OTHER))
    ec = generate_private_key(SECP256R1()).public_key()
    out["ec"].write_bytes(ec.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo))
    out["junk"].write_bytes(b"not a key\n")
    out["diff"] = tmp_path / "change.diff"
    out["diff"].write_bytes(DIFF)
    out["cert"] = tmp_path / "cert.json"
    return out


Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Run:
    monkeypatch.delenv("REVIEW_GATE_API_KEY", raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")

    def invoke(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    return invoke


def review(run: Run, sim: ReviewerSimulator, files: dict[str, Path], *extra: str) -> int:
    argv = ["review", "--diff", str(files["diff"]), "--provider", "mc1", "--model", MODEL]
    argv += ["--base-url", sim.base_url, "--certificate", str(files["cert"]), *extra]
    return run(*argv)[0]


def verify(run: Run, files: dict[str, Path], key: str) -> tuple[int, dict[str, Any], str]:
    code, out, err = run(
        "verify",
        "--from-certificate",
        str(files["cert"]),
        "--diff",
        str(files["diff"]),
        "--public-key",
        str(files[key]),
        "--json",
    )
    return code, json.loads(out), err


def test_a_signed_review_records_its_signature_and_verify_checks_it_offline(
    run: Run, files: dict[str, Path]
) -> None:
    with ReviewerSimulator("mc1", bound_pass, signing_key=KEY) as sim:
        assert review(run, sim, files, "--public-key", str(files["key"])) == 0
    cert = json.loads(files["cert"].read_text())
    assert sorted(schema_validator().iter_errors(cert), key=str) == []
    recorded = cert["attempts"][-1]["signature"]
    assert recorded["checked"] is True
    assert recorded["key_id"] == KEY_ID
    assert recorded["prompt_sha256"] == cert["inputs"]["prompt"]
    assert recorded["envelope_sha256"] == cert["envelope"]["sha256"]
    assert len(recorded["request_sha256"]) == 64  # the body sent; the body is not stored

    code, out, err = verify(run, files, "key")
    assert (code, out["state"]) == (0, "pass")
    assert f"signed by {KEY_ID}" in err

    code, out, _ = verify(run, files, "other")
    assert (code, out["state"], out["reason"]) == (3, "incomplete", "signature_key")
    assert signature.key_id(OTHER.public_key()) in out["detail"]


@pytest.mark.parametrize("change", ["envelope", "prompt", "request", "value", "none"])
def test_a_certificate_whose_signature_does_not_check_is_refused(
    run: Run, files: dict[str, Path], change: str
) -> None:
    with ReviewerSimulator("mc1", bound_pass, signing_key=KEY) as sim:
        assert review(run, sim, files, "--public-key", str(files["key"])) == 0
    cert = json.loads(files["cert"].read_text())
    row = cert["attempts"][-1]
    if change == "envelope":  # another envelope, its digest made consistent
        text = base64.b64decode(cert["envelope"]["base64"]).split(b"\n", 1)[1][:-5]
        other = seal(text.replace(b"retries are bounded", b"retries are fine"))
        cert["envelope"] = {
            "sha256": __import__("hashlib").sha256(other).hexdigest(),
            "length": len(other),
            "base64": base64.b64encode(other).decode(),
        }
    elif change == "prompt":  # the signature claims another question
        row["signature"]["prompt_sha256"] = "0" * 64
    elif change == "request":  # the signature claims another request (a replay's)
        row["signature"]["request_sha256"] = signature.request_sha256(b"another request")
    elif change == "value":  # a signature by the key, but over another envelope
        row["signature"]["value"] = signature.sign(
            KEY,
            request_digest=row["signature"]["request_sha256"],
            prompt_digest=row["signature"]["prompt_sha256"],
            envelope=seal(b"x"),
        )
    else:
        del row["signature"]
    files["cert"].write_text(json.dumps(cert))
    code, out, _ = verify(run, files, "key")
    assert code == 3
    assert out["state"] == "incomplete"
    assert out["reason"].startswith("signature_")
    assert "the answer" in out["detail"]


def test_a_signature_recorded_unchecked_is_checked_offline(
    run: Run, files: dict[str, Path]
) -> None:
    with ReviewerSimulator("mc1", bound_pass, signing_key=KEY) as sim:
        assert review(run, sim, files) == 0  # no key configured: the answer is recorded
    recorded = json.loads(files["cert"].read_text())["attempts"][-1]["signature"]
    assert recorded["checked"] is False
    assert verify(run, files, "key")[0] == 0
    assert verify(run, files, "other")[1]["reason"] == "signature_key"


def test_the_review_refuses_another_keys_answer(run: Run, files: dict[str, Path]) -> None:
    with ReviewerSimulator("mc1", bound_pass, signing_key=OTHER) as sim:
        assert review(run, sim, files, "--public-key", str(files["key"])) == 3
        assert sim.count == 1
    cert = json.loads(files["cert"].read_text())
    assert cert["decision"]["reason"] == "signature_key"
    assert cert["decision"]["family"] == "unavailable"


@pytest.mark.parametrize(
    ("key", "words"),
    [("missing", "does not exist"), ("junk", "not a PEM public key"), ("ec", "not Ed25519")],
)
def test_a_bad_key_file_is_a_usage_error_naming_the_option(
    run: Run, files: dict[str, Path], key: str, words: str
) -> None:
    files["missing"] = files["key"].with_name("missing.pub")
    files["cert"].write_text("{}")
    code, _, err = run(
        "verify", "--from-certificate", str(files["cert"]), "--diff", str(files["diff"]),
        "--public-key", str(files[key]),
    )  # fmt: skip
    assert code == 2
    assert "--public-key" in err
    assert words in err
    with ReviewerSimulator("mc1", bound_pass, signing_key=KEY) as sim:
        code, _, err = run(
            "review", "--diff", str(files["diff"]), "--provider", "mc1", "--base-url",
            sim.base_url, "--public-key", str(files[key]),
        )  # fmt: skip
        assert sim.count == 0
    assert code == 2
    assert words in err


def test_public_key_needs_a_certificate(run: Run, files: dict[str, Path]) -> None:
    files["diff"].with_name("r.mc1").write_bytes(seal(b"x"))
    code, _, err = run(
        "verify", str(files["diff"].with_name("r.mc1")), "--diff", str(files["diff"]),
        "--policy-version", "1", "--public-key", str(files["key"]),
    )  # fmt: skip
    assert code == 2
    assert "--from-certificate" in err


@pytest.mark.parametrize("keyed", [True, False])
def test_the_statement_names_the_key_only_when_the_gate_checked_it(
    run: Run, files: dict[str, Path], keyed: bool
) -> None:
    from gate.export import statement

    path = files["cert"].with_name("run.statement.json")
    with ReviewerSimulator("mc1", bound_pass, signing_key=KEY) as sim:
        extra = ("--public-key", str(files["key"])) if keyed else ()
        assert review(run, sim, files, "--statement", str(path), *extra) == 0
    check_statement(json.loads(path.read_text()))
    predicate = json.loads(path.read_text())["predicate"]
    if keyed:
        assert predicate["signed_by"] == [KEY_ID]
    else:
        assert "signed_by" not in predicate  # recorded unchecked: no origin is claimed
    statement.check(
        path.read_bytes(),
        certificate=files["cert"].read_bytes(),
        diff_sha=json.loads(files["cert"].read_text())["binding"]["diff_sha"],
    )


def test_a_review_in_chunks_has_every_chunk_signed_for_its_own_prompt() -> None:
    import copy

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from gate.config.model import Config, ReviewerConfig
    from gate.decide.decision import State
    from gate.errors import SignatureError
    from gate.lab.demo import ScriptedModel
    from gate.review.certificate import check_origin
    from gate.review.pipeline import review_diff
    from gate.review.scope import select_diff
    from tests.integration.test_chunked_review import big_diff

    def config(key: bytes) -> Config:
        reviewer = ReviewerConfig(
            provider="mc1", model=MODEL, base_url=sim.base_url, public_key=key.decode()
        )
        return Config(reviewer=reviewer, max_chunk_bytes=2048, concurrency=1)

    with ReviewerSimulator("mc1", ScriptedModel("pass"), signing_key=KEY) as sim:
        selected = select_diff(big_diff(), config(public_pem(KEY)))
        result = review_diff(
            selected.data, config(public_pem(KEY)), api_key=None, coverage=selected.coverage
        )
        assert result.decision.state is State.PASS
        assert len(result.chunks) > 2
        other = review_diff(
            selected.data, config(public_pem(OTHER)), api_key=None, coverage=selected.coverage
        )
        assert other.decision.state is not State.PASS
    public: Ed25519PublicKey = KEY.public_key()
    answers = check_origin(result.certificate, public)
    assert len(answers) == len(result.chunks)
    assert {a.prompt_sha256 for a in answers} == {r.prompt_sha256 for r in result.chunks}
    # each chunk's signature is for its own prompt: swapped between chunks, none checks
    swapped = copy.deepcopy(result.certificate)
    reviews = swapped["context"]["chunks"]["reviews"]
    first, second = reviews[0]["attempts"][-1], reviews[1]["attempts"][-1]
    first["signature"], second["signature"] = second["signature"], first["signature"]
    with pytest.raises(SignatureError) as err:
        check_origin(swapped, public)
    assert err.value.message.startswith(f"chunk {reviews[0]['chunk']}")


@pytest.mark.parametrize("chunked", [False, True])
def test_every_agreement_answer_is_its_own_signed_request(chunked: bool) -> None:
    """``agreement: 2``: the simulator answers the same bytes twice, but each answer was
    signed for its own request (a fresh nonce), so the certificate holds two answers, each
    checked offline, never merged into one; one answer recorded for both is refused."""
    import copy

    from gate.config.model import Config, ReviewerConfig
    from gate.decide.decision import State
    from gate.errors import SignatureError
    from gate.lab.demo import ScriptedModel
    from gate.review.certificate import check_origin
    from gate.review.pipeline import review_diff
    from gate.review.scope import select_diff
    from tests.integration.test_chunked_review import big_diff

    with ReviewerSimulator("mc1", ScriptedModel("pass"), signing_key=KEY) as sim:
        reviewer = ReviewerConfig(
            provider="mc1", model=MODEL, base_url=sim.base_url, public_key=public_pem(KEY).decode()
        )
        config = Config(reviewer=reviewer, agreement=2, concurrency=1)
        if chunked:
            config = Config(reviewer=reviewer, agreement=2, concurrency=1, max_chunk_bytes=2048)
        selected = select_diff(big_diff() if chunked else DIFF, config)
        result = review_diff(selected.data, config, api_key=None, coverage=selected.coverage)
        assert result.decision.state is State.PASS, result.decision
        asked = sim.count
    answers = check_origin(result.certificate, KEY.public_key())
    assert len(answers) == asked == 2 * max(1, len(result.chunks))
    assert len({a.signature.request_sha256 for a in answers if a.signature}) == asked
    copied = copy.deepcopy(result.certificate)
    rows = (
        copied["context"]["chunks"]["reviews"][0]["answers"]
        if chunked
        else copied["context"]["agreement"]["answers"]
    )
    rows[1]["attempts"][-1]["signature"] = rows[0]["attempts"][-1]["signature"]
    with pytest.raises(SignatureError, match="records too"):
        check_origin(copied, KEY.public_key())
