"""The clouds' requests have the shape the official SDKs give them, for the same settings.

Each official client (openai's ``AzureOpenAI`` and ``OpenAI``, botocore's
``bedrock-runtime`` client, anthropic's ``AnthropicBedrock`` and
``AnthropicVertex``, google-genai on Vertex) is pointed at a loopback server that
records what it sends and answers 400; the gate's own request for the same
settings goes to the same server. Method, path, query and the names of the
authentication headers must be the same (and, where the SDK sends the same
body fields, the body's shape).
"""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from gate.reviewers.settings import ReviewerSettings
from gate.reviewers.transport import call_once

pytestmark = pytest.mark.timeout(60)

AUTH_HEADERS = frozenset(
    {
        "authorization",
        "api-key",
        "x-api-key",
        "x-goog-api-key",
        "x-amz-date",
        "x-amz-security-token",
    }
)


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def auth_names(self) -> set[str]:
        return set(self.headers) & AUTH_HEADERS


class Recorder:
    def __init__(self) -> None:
        self.seen: list[Seen] = []
        recorder = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                recorder.seen.append(
                    Seen(
                        self.command,
                        self.path,
                        {k.lower(): v for k, v in self.headers.items()},
                        json.loads(raw or b"{}"),
                    )
                )
                data = b'{"error": {"message": "recorded", "type": "invalid_request_error"}}'
                self.send_response(400)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def one(self, send: Callable[[], object]) -> Seen:
        self.seen.clear()
        with contextlib.suppress(Exception):  # the SDKs raise on the 400; the request matters
            send()
        assert len(self.seen) == 1, self.seen
        return self.seen[0]


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    rec = Recorder()
    rec.thread.start()
    try:
        yield rec
    finally:
        rec.server.shutdown()
        rec.server.server_close()
        rec.thread.join(timeout=5)


def ours(rec: Recorder, **values: Any) -> Seen:
    settings = ReviewerSettings(
        **{"model": "m", "base_url": rec.url, "attempts": 1, "deadline": 10.0, **values}
    )
    return rec.one(lambda: call_once(settings, system="s", user="u"))


def same_request(sdk: Seen, gate: Seen) -> None:
    assert (gate.method, gate.path) == (sdk.method, sdk.path)
    assert gate.auth_names == sdk.auth_names, (gate.auth_names, sdk.auth_names)


MESSAGES = [{"role": "user", "content": "u"}]


def test_azure_deployment_with_api_key_matches_azure_openai(recorder: Recorder) -> None:
    openai = pytest.importorskip("openai")
    client = openai.AzureOpenAI(
        api_key="k",
        api_version="2024-10-21",
        azure_endpoint=recorder.url,
        azure_deployment="dep",
        max_retries=0,
    )
    sdk = recorder.one(
        lambda: client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    )
    gate = ours(recorder, provider="azure-openai", api_key="k", deployment="dep")
    same_request(sdk, gate)
    assert gate.headers["api-key"] == sdk.headers["api-key"] == "k"
    assert gate.path == "/openai/deployments/dep/chat/completions?api-version=2024-10-21"
    assert gate.body["stream"] is sdk.body["stream"] is True


def test_azure_deployment_with_entra_matches_azure_openai(recorder: Recorder) -> None:
    openai = pytest.importorskip("openai")
    client = openai.AzureOpenAI(
        azure_ad_token="entra-token",
        api_version="2025-04-01-preview",
        azure_endpoint=recorder.url,
        max_retries=0,
    )
    sdk = recorder.one(
        lambda: client.chat.completions.create(model="dep", messages=MESSAGES, stream=True)
    )
    gate = ours(
        recorder,
        provider="azure-openai",
        api_key="entra-token",
        auth="entra",
        deployment="dep",
        api_version="2025-04-01-preview",
    )
    same_request(sdk, gate)
    assert gate.headers["authorization"] == sdk.headers["authorization"] == "Bearer entra-token"


def test_azure_v1_path_matches_the_openai_client_microsoft_documents(recorder: Recorder) -> None:
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(api_key="k", base_url=recorder.url + "/openai/v1/", max_retries=0)
    sdk = recorder.one(
        lambda: client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    )
    gate = ours(recorder, provider="azure-openai", api_key="k")
    same_request(sdk, gate)
    assert gate.path == "/openai/v1/chat/completions"
    assert gate.body["model"] == sdk.body["model"] == "m"


def test_openai_responses_matches_the_openai_client(recorder: Recorder) -> None:
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(api_key="k", base_url=recorder.url + "/v1", max_retries=0)
    sdk = recorder.one(
        lambda: client.responses.create(
            model="m",
            instructions="s",
            input=MESSAGES,
            max_output_tokens=7,
            temperature=0,
            store=False,
            stream=True,
        )
    )
    gate = ours(
        recorder,
        provider="openai-responses",
        api_key="k",
        max_tokens=7,
        base_url=recorder.url + "/v1",
    )
    same_request(sdk, gate)
    assert gate.body == sdk.body


BEDROCK_MODEL = "anthropic.claude-3-5-sonnet-20240620-v1:0"


def test_bedrock_converse_stream_matches_botocore(
    recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = pytest.importorskip("botocore.session")
    client = session.get_session().create_client(
        "bedrock-runtime",
        region_name="us-west-2",
        endpoint_url=recorder.url,
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="SECRETEXAMPLE",
        aws_session_token="TOKENEXAMPLE",
    )
    sdk = recorder.one(
        lambda: client.converse_stream(
            modelId=BEDROCK_MODEL,
            messages=[{"role": "user", "content": [{"text": "u"}]}],
            system=[{"text": "s"}],
            inferenceConfig={"maxTokens": 7, "temperature": 0.0},
        )
    )
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "TOKENEXAMPLE")
    gate = ours(
        recorder,
        provider="bedrock",
        model=BEDROCK_MODEL,
        api_key="SECRETEXAMPLE",
        region="us-west-2",
        max_tokens=7,
    )
    same_request(sdk, gate)
    assert gate.path == "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse-stream"
    assert gate.body == sdk.body
    assert gate.headers["x-amz-security-token"] == sdk.headers["x-amz-security-token"]

    def scope(seen: Seen) -> str:
        return seen.headers["authorization"].split("Credential=")[1].split(",")[0].split("/", 2)[2]

    assert scope(gate) == scope(sdk) == "us-west-2/bedrock/aws4_request"


def test_bedrock_signing_matches_anthropic_bedrock(
    recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AnthropicBedrock calls InvokeModel (another path); its signing is the same as ours."""
    anthropic = pytest.importorskip("anthropic")
    pytest.importorskip("boto3")
    client = anthropic.AnthropicBedrock(
        aws_access_key="AKIDEXAMPLE",
        aws_secret_key="SECRETEXAMPLE",
        aws_session_token="TOKENEXAMPLE",
        aws_region="eu-central-1",
        base_url=recorder.url,
        max_retries=0,
    )
    sdk = recorder.one(
        lambda: client.messages.create(
            model=BEDROCK_MODEL, max_tokens=7, messages=MESSAGES, stream=True
        )
    )
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "TOKENEXAMPLE")
    gate = ours(
        recorder,
        provider="bedrock",
        model=BEDROCK_MODEL,
        api_key="SECRETEXAMPLE",
        region="eu-central-1",
    )
    assert gate.method == sdk.method == "POST"
    assert gate.path.startswith("/model/")
    assert sdk.path.startswith("/model/")
    assert (
        gate.auth_names == sdk.auth_names == {"authorization", "x-amz-date", "x-amz-security-token"}
    )
    for seen in (gate, sdk):
        assert "Credential=AKIDEXAMPLE/" in seen.headers["authorization"]
        assert "/eu-central-1/bedrock/aws4_request" in seen.headers["authorization"]


def test_vertex_claude_matches_anthropic_vertex(recorder: Recorder) -> None:
    anthropic = pytest.importorskip("anthropic")
    client = anthropic.AnthropicVertex(
        region="us-east5",
        project_id="proj-123",
        access_token="ya29.token",
        base_url=recorder.url + "/v1",  # the SDK's default base URL ends in /v1
        max_retries=0,
    )
    sdk = recorder.one(
        lambda: client.messages.create(
            model="claude-sonnet-4@20250514", max_tokens=7, messages=MESSAGES, stream=True
        )
    )
    gate = ours(
        recorder,
        provider="vertex",
        model="claude-sonnet-4@20250514",
        api_key="ya29.token",
        project="proj-123",
        location="us-east5",
        max_tokens=7,
    )
    same_request(sdk, gate)
    assert gate.path == (
        "/v1/projects/proj-123/locations/us-east5/publishers/anthropic/models/"
        "claude-sonnet-4@20250514:streamRawPredict"
    )
    assert gate.headers["authorization"] == sdk.headers["authorization"] == "Bearer ya29.token"
    for seen in (gate, sdk):  # the model is in the path, the version in the body
        assert "model" not in seen.body
        assert "anthropic_version" in seen.body
        assert seen.body["messages"] == MESSAGES


def test_vertex_gemini_matches_google_genai(recorder: Recorder) -> None:
    genai = pytest.importorskip("google.genai")
    credentials = pytest.importorskip("google.oauth2.credentials")
    client = genai.Client(
        vertexai=True,
        project="proj-123",
        location="us-east5",
        credentials=credentials.Credentials(token="ya29.token"),
        http_options={"base_url": recorder.url, "api_version": "v1"},
    )
    sdk = recorder.one(
        lambda: list(
            client.models.generate_content_stream(
                model="gemini-2.5-pro",
                contents="u",
                config={"system_instruction": "s", "max_output_tokens": 7, "temperature": 0},
            )
        )
    )
    gate = ours(
        recorder,
        provider="vertex",
        model="gemini-2.5-pro",
        api_key="ya29.token",
        project="proj-123",
        location="us-east5",
        max_tokens=7,
    )
    same_request(sdk, gate)
    assert gate.path.endswith(
        "/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    )
    assert gate.headers["authorization"] == sdk.headers["authorization"] == "Bearer ya29.token"
    assert gate.body["contents"] == sdk.body["contents"]
    assert gate.body["generationConfig"] == sdk.body["generationConfig"]
    assert gate.body["systemInstruction"]["parts"] == sdk.body["systemInstruction"]["parts"]
