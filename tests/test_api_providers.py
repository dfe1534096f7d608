"""The provider backends ``claude`` (Anthropic SDK), ``gemini`` (google-genai) and Azure OpenAI through
``openai`` / ``gpt4v``, against the local fakes of ``tests/fake_providers.py``.

Each fake is first checked with the provider's official SDK (so it speaks the SDK's wire format);
then the backends run end to end through the command line, and their retries, failures, usage and
secrets are checked against the shared machinery (``lmms_eval.models.api.retry``).
"""

from __future__ import annotations

import base64
import io
import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_providers import ProviderServer, gemini_to_openai
from openai_server import last_user_text
from PIL import Image

import lmms_eval
from lmms_eval.api.instance import GenerationResult, Instance, RequestFailure
from lmms_eval.errors import MissingDependencyError, ModelArgsError
from lmms_eval.models import get_model, resolve_model
from lmms_eval.models.api.backend import ApiChatModel

KEY = "sk-provider-secret-0123456789"


def png_bytes(colour: str = "red") -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), colour).save(buffer, "PNG")
    return buffer.getvalue()


@pytest.fixture
def anthropic_server() -> Iterator[ProviderServer]:
    with ProviderServer("anthropic", api_key=KEY) as srv:
        yield srv


@pytest.fixture
def gemini_server() -> Iterator[ProviderServer]:
    with ProviderServer("gemini", api_key=KEY) as srv:
        yield srv


@pytest.fixture
def azure_server() -> Iterator[ProviderServer]:
    with ProviderServer("azure", api_key=KEY) as srv:
        yield srv


# -- the fakes speak what the official SDKs speak ------------------------------------------------------------


def test_the_anthropic_fake_answers_the_official_sdk(anthropic_server: ProviderServer) -> None:
    anthropic = pytest.importorskip("anthropic")
    client = anthropic.Anthropic(api_key=KEY, base_url=anthropic_server.base_url, max_retries=0)
    image = {"type": "base64", "media_type": "image/png", "data": base64.b64encode(png_bytes()).decode()}
    message = client.messages.create(
        model="claude-test",
        max_tokens=16,
        system="be brief",
        messages=[
            {
                "role": "user",
                "content": [{"type": "image", "source": image}, {"type": "text", "text": "ab cd"}],
            }
        ],
        stop_sequences=["END"],
    )
    assert message.content[0].type == "text" and message.content[0].text == "dc ba"
    assert (
        message.usage.input_tokens == 2 + 2 + 85 and message.usage.output_tokens == 2
    )  # system, text, image
    assert anthropic_server.normalized[-1]["system"] == "be brief"
    anthropic_server.add_fault("status", status=429, retry_after="3")
    with pytest.raises(anthropic.RateLimitError) as info:
        client.messages.create(model="claude-test", max_tokens=4, messages=[{"role": "user", "content": "x"}])
    assert info.value.response.headers["retry-after"] == "3"
    assert info.value.body["error"]["type"] == "rate_limit_error"
    with pytest.raises(anthropic.BadRequestError, match="non-whitespace"):
        client.messages.create(
            model="claude-test",
            max_tokens=4,
            messages=[{"role": "user", "content": "x"}],
            stop_sequences=["\n"],
        )
    with pytest.raises(anthropic.AuthenticationError):
        anthropic.Anthropic(
            api_key="wrong-key-000", base_url=anthropic_server.base_url, max_retries=0
        ).messages.create(model="claude-test", max_tokens=4, messages=[{"role": "user", "content": "x"}])


def test_the_gemini_fake_answers_the_official_sdk(gemini_server: ProviderServer) -> None:
    genai = pytest.importorskip("google.genai")
    from google.genai import errors, types

    options = types.HttpOptions(
        base_url=gemini_server.base_url, retry_options=types.HttpRetryOptions(attempts=1)
    )
    client = genai.Client(api_key=KEY, http_options=options)
    parts = [{"inline_data": {"mime_type": "image/png", "data": png_bytes()}}, {"text": "ab cd"}]
    response = client.models.generate_content(
        model="gemini-test",
        contents=[{"role": "user", "parts": parts}],
        config={"system_instruction": "be brief", "max_output_tokens": 8, "stop_sequences": ["\n"]},
    )
    assert response.text == "dc ba"
    assert response.usage_metadata is not None
    assert response.usage_metadata.prompt_token_count == 2 + 2 + 85
    assert response.usage_metadata.candidates_token_count == 2
    seen = gemini_server.normalized[-1]
    assert seen["system"] == "be brief" and seen["inline"] == ["image/png"]
    assert seen["config"].get("stopSequences", seen["config"].get("stop_sequences")) == ["\n"]
    gemini_server.add_fault("status", status=429, retry_after="3")
    with pytest.raises(errors.ClientError) as info:
        client.models.generate_content(model="gemini-test", contents="x")
    assert info.value.code == 429 and info.value.status == "RESOURCE_EXHAUSTED"
    gemini_server.add_fault("filtered")
    blocked = client.models.generate_content(model="gemini-test", contents="x")
    assert blocked.candidates and str(blocked.candidates[0].finish_reason.name) == "SAFETY"
    wrong = genai.Client(api_key="wrong-key-000", http_options=options)  # kept: a dropped client closes
    with pytest.raises(errors.ClientError):
        wrong.models.generate_content(model="gemini-test", contents="x")


def test_the_azure_fake_answers_the_official_sdk(azure_server: ProviderServer) -> None:
    openai = pytest.importorskip("openai")
    client = openai.AzureOpenAI(
        api_key=KEY, azure_endpoint=azure_server.base_url, api_version="2024-10-21", max_retries=0
    )
    completion = client.chat.completions.create(
        model="my-deployment", messages=[{"role": "user", "content": "ab cd"}]
    )
    assert completion.choices[0].message.content == "dc ba"
    request = azure_server.requests[-1]
    assert request.path == "/openai/deployments/my-deployment/chat/completions?api-version=2024-10-21"
    assert request.headers["api-key"] == KEY
    with pytest.raises(openai.AuthenticationError):
        openai.AzureOpenAI(
            api_key="wrong-key-000",
            azure_endpoint=azure_server.base_url,
            api_version="2024-10-21",
            max_retries=0,
        ).chat.completions.create(model="my-deployment", messages=[{"role": "user", "content": "x"}])


# -- end to end through the command line ----------------------------------------------------------------------


def _demo_answers() -> dict[str, str]:
    path = Path(lmms_eval.__file__).parent / "tasks" / "demo_qa" / "demo_qa.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {row["question"]: str(row["answer"]) for row in rows}


def run_cli(args: list[str]) -> int:
    from lmms_eval.cli import main

    package_logger = logging.getLogger("lmms_eval")
    level, handlers = package_logger.level, list(package_logger.handlers)
    try:
        return main(args)
    finally:  # the CLI sets the package's log level and a stderr handler for good
        package_logger.setLevel(level)
        package_logger.handlers[:] = handlers


# (model id, provider of the fake, model args besides base_url, environment)
RUNS = [
    ("claude", "anthropic", {"model": "claude-test", "api_key": KEY}, {}),
    ("gemini", "gemini", {"model": "gemini-test"}, {"GEMINI_API_KEY": KEY}),
    (
        "openai",
        "azure",
        {"model": "my-deployment", "api_type": "azure", "api_version": "2024-10-21", "api_key": KEY},
        {},
    ),
    ("gpt4v", "azure", {"model": "my-deployment", "api_type": "azure"}, {"AZURE_OPENAI_API_KEY": KEY}),
]


@pytest.mark.parametrize(
    ("model", "provider", "model_args", "env"), RUNS, ids=[r[0] + "-" + r[1] for r in RUNS]
)
def test_a_provider_runs_demo_qa_end_to_end(
    model: str,
    provider: Any,
    model_args: dict[str, str],
    env: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name in (
        "ANTHROPIC_API_KEY",
        "GOOGLE_API_KEY",
        "GEMINI_API_KEY",
        "AZURE_OPENAI_API_KEY",
        "OPENAI_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    answers = _demo_answers()
    with ProviderServer(provider, api_key=KEY) as server:
        server.responder = lambda payload: (
            answers[last_user_text(payload).split("\n")[0]] + "\nbecause arithmetic"
        )
        # doc 1: a 400 that echoes the key (recorded, not retried); doc 2: 429 + Retry-After, then an answer
        server.add_fault(
            "status", match="What is 14 - 2?", status=400, message=f"bad request with key {KEY}", times=None
        )
        server.add_fault("status", match="What is 13 + 2?", status=429, retry_after="0.05", times=1)
        if provider == "azure" and "api_key" not in model_args:
            monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", server.base_url)
        else:
            model_args = {**model_args, "base_url": server.base_url}
        model_args = {**model_args, "system_prompt": "Answer briefly.", "retry_backoff_s": "0.01"}
        out = tmp_path / "out"
        args = [
            "--model",
            model,
            "--tasks",
            "demo_qa",
            "--limit",
            "4",
            "--log_samples",
            "--verbosity",
            "INFO",
        ]
        args += [
            "--model_args",
            ",".join(f"{k}={v}" for k, v in model_args.items()),
            "--output_path",
            str(out),
        ]
        code = run_cli(args)
    assert code == 3  # the 400 fails its document, and so the run
    statuses = [r.status for r in server.requests]
    assert statuses.count(400) == 1 and statuses.count(429) == 1 and statuses.count(200) == 3
    (results_file,) = out.rglob("*_results.json")
    results = json.loads(results_file.read_text(encoding="utf-8"))
    scores = results["results"]["demo_qa"]
    assert scores["failed"] == 1 and scores["exact_match,none"] == 1.0  # "\n" cut the explanation
    usage = results["usage"]["total"]
    assert usage["input_tokens"] > 0 and usage["output_tokens"] == 3 * 3  # "<n>\nbecause arithmetic"
    samples = [json.loads(x) for x in next(out.rglob("*_samples_demo_qa.jsonl")).read_text().splitlines()]
    (failed,) = [s for s in samples if s.get("failed")]
    assert "HTTP 400" in failed["errors"][0] and "[REDACTED]" in failed["errors"][0]
    captured = capsys.readouterr()
    for path in out.rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(encoding="utf-8", errors="replace"), path
    assert KEY not in captured.out + captured.err
    _check_wire_format(provider, server)


def _check_wire_format(provider: str, server: ProviderServer) -> None:
    """System prompt placement and stop sequences, as each provider takes them."""
    payload = next(r.payload for r in server.requests if r.status == 200)
    if provider == "anthropic":
        assert payload["system"] == "Answer briefly."
        assert all(m["role"] != "system" for m in payload["messages"])
        assert "stop_sequences" not in payload  # "\n" only: Anthropic rejects it, applied client-side
        assert payload["max_tokens"] == 8 and payload["temperature"] == 0.0
    elif provider == "gemini":
        normalized = gemini_to_openai(payload)
        assert normalized["system"] == "Answer briefly."
        assert (
            normalized["config"]["stopSequences"] == ["\n"] and normalized["config"]["maxOutputTokens"] == 8
        )
    else:
        assert payload["messages"][0] == {"role": "system", "content": "Answer briefly."}
        assert payload["stop"] == ["\n"]


# -- images -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("model", ["claude", "gemini"])
def test_images_reach_the_server_as_the_providers_image_parts(model: str, tmp_path: Path) -> None:
    provider = "anthropic" if model == "claude" else "gemini"
    with ProviderServer(provider, api_key=KEY) as server:
        server.responder = lambda payload: "red"
        args = ["--model", model, "--tasks", "demo_shapes", "--limit", "2", "--verbosity", "ERROR"]
        args += [
            "--model_args",
            f"model=m,api_key={KEY},base_url={server.base_url}",
            "--output_path",
            str(tmp_path),
        ]
        assert run_cli(args) == 0
    assert len(server.requests) == 2
    for request in server.requests:
        if provider == "anthropic":
            (message,) = request.payload["messages"]
            images = [b["source"] for b in message["content"] if b["type"] == "image"]
            assert (
                len(images) == 1 and images[0]["type"] == "base64" and images[0]["media_type"] == "image/png"
            )
            data = base64.b64decode(images[0]["data"])
        else:
            (content,) = request.payload["contents"]
            inline = [p.get("inlineData", p.get("inline_data")) for p in content["parts"] if "text" not in p]
            assert len(inline) == 1 and inline[0].get("mimeType", inline[0].get("mime_type")) == "image/png"
            data = base64.urlsafe_b64decode(inline[0]["data"])
        with Image.open(io.BytesIO(data)) as image:
            assert image.size[0] > 16 and image.size[1] > 16  # a rendered shape, not a placeholder


# -- the shared retry machinery -----------------------------------------------------------------------------------


def make_model(model: str, server: ProviderServer, **kwargs: Any) -> ApiChatModel:
    extra: dict[str, Any] = {"api_type": "azure", "api_version": "2024-10-21"} if model == "openai" else {}
    built = get_model(model)(
        model="m", api_key=KEY, base_url=server.base_url, retry_backoff_s=0.01, **extra, **kwargs
    )
    assert isinstance(built, ApiChatModel)
    return built


def make_requests(
    model: ApiChatModel, texts: list[str], gen_kwargs: dict[str, Any] | None = None
) -> list[Instance]:
    docs = [{"text": t} for t in texts]

    def doc_to_messages(doc: dict[str, str]) -> list[dict[str, Any]]:
        return [{"role": "user", "content": [{"type": "text", "text": doc["text"]}]}]

    model.task_dict = {"t": {"test": docs}}
    kwargs = gen_kwargs if gen_kwargs is not None else {"max_new_tokens": 16, "until": ["\n\n"]}
    return [
        Instance(
            "generate_until", (doc_to_messages, dict(kwargs), i, "t", "test"), 0, {"task": "t", "doc_id": i}
        )
        for i in range(len(texts))
    ]


PROVIDERS = [("claude", "anthropic"), ("gemini", "gemini"), ("openai", "azure")]


@pytest.mark.parametrize(("model", "provider"), PROVIDERS)
def test_a_429_waits_its_retry_after_through_the_shared_loop(model: str, provider: Any) -> None:
    with ProviderServer(provider, api_key=KEY) as server:
        server.add_fault("status", status=429, retry_after="0.3", times=1)
        lm = make_model(model, server)
        waits: list[float] = []
        choose = lm.retry.delay

        def recording(*args: Any) -> float:
            waits.append(choose(*args))
            return waits[-1]

        lm.retry.delay = recording  # pyright: ignore[reportAttributeAccessIssue]
        (answer,) = lm.generate_until(make_requests(lm, ["ab cd"]))
    assert isinstance(answer, GenerationResult) and answer.text == "dc ba"
    assert len(server.requests) == 2 and len(waits) == 1 and 0.3 <= waits[0] <= 0.33  # Retry-After + jitter
    assert lm.concurrency.stats().rate_limited == 1  # the shared limiter saw the 429
    assert answer.token_counts is not None and answer.token_counts.output_tokens == 2


@pytest.mark.parametrize(("model", "provider"), PROVIDERS)
def test_5xx_and_dropped_connections_are_retried_and_a_400_is_not(model: str, provider: Any) -> None:
    with ProviderServer(provider, api_key=KEY) as server:
        server.add_fault("status", match="five", status=500, times=2)
        server.add_fault("drop", match="drop", times=1)
        server.add_fault("status", match="bad", status=400, times=None)
        lm = make_model(model, server, max_retries=3)
        answers = lm.generate_until(make_requests(lm, ["five hundred", "drop it", "bad one"]))
    assert isinstance(answers[0], GenerationResult) and answers[0].text == "derdnuh evif"
    assert isinstance(answers[1], GenerationResult) and answers[1].text == "ti pord"
    failure = answers[2]
    assert isinstance(failure, RequestFailure)
    assert failure.retryable is False and failure.attempts == 1 and "HTTP 400" in failure.error
    assert [last_user_text(n) for n in server.normalized].count("bad one") == 1
    assert [last_user_text(n) for n in server.normalized].count("five hundred") == 3


def test_claude_sends_stop_sequences_anthropic_takes_and_applies_all(
    anthropic_server: ProviderServer,
) -> None:
    anthropic_server.responder = lambda payload: "one two\nthree END four"
    lm = make_model("claude", anthropic_server)
    (answer,) = lm.generate_until(
        make_requests(lm, ["x"], {"until": ["\n", " ", "END"], "max_new_tokens": 5})
    )
    assert isinstance(answer, GenerationResult) and answer.text == "one"  # " " cut it client-side
    payload = anthropic_server.requests[-1].payload
    assert payload["stop_sequences"] == ["END"] and payload["max_tokens"] == 5


def test_claude_max_tokens_defaults_to_max_new_tokens(anthropic_server: ProviderServer) -> None:
    lm = make_model("claude", anthropic_server, max_new_tokens=77)
    lm.generate_until(make_requests(lm, ["x"], {"until": []}))
    assert anthropic_server.requests[-1].payload["max_tokens"] == 77


def test_declined_answers_are_failures_not_answers(
    anthropic_server: ProviderServer, gemini_server: ProviderServer
) -> None:
    anthropic_server.add_fault("refusal")
    gemini_server.add_fault("filtered")
    for model, server, kind in (
        (("claude", anthropic_server, "refusal")),
        ("gemini", gemini_server, "filtered"),
    ):
        lm = make_model(model, server)
        (answer,) = lm.generate_until(make_requests(lm, ["x"]))
        assert isinstance(answer, RequestFailure) and answer.kind == kind and answer.retryable is False
        assert len(server.requests) == 1


def test_gemini_sends_video_files_and_audio_inline(gemini_server: ProviderServer, tmp_path: Path) -> None:
    video = tmp_path / "clip.mp4"
    video.write_bytes(b"\x00\x00\x00\x18ftypmp42 not a real video")
    wav = tmp_path / "tone.wav"
    from lmms_eval.media import encode_wav

    wav.write_bytes(encode_wav([0.0, 0.5, -0.5, 0.0] * 100, 16000))
    lm = make_model("gemini", gemini_server)
    lm.task_dict = {"t": {"test": [{}]}}

    def doc_to_messages(doc: dict[str, Any]) -> list[dict[str, Any]]:
        parts = [
            {"type": "video", "url": str(video)},
            {"type": "audio", "url": str(wav)},
            {"type": "text", "text": "x"},
        ]
        return [{"role": "user", "content": parts}]

    request = Instance("generate_until", (doc_to_messages, {"until": []}, 0, "t", "test"), 0, {})
    (answer,) = lm.generate_until([request])
    assert isinstance(answer, GenerationResult)
    assert gemini_server.normalized[-1]["inline"] == ["video/mp4", "audio/wav"]
    parts = gemini_server.requests[-1].payload["contents"][0]["parts"]
    sent = base64.urlsafe_b64decode(parts[0].get("inlineData", parts[0].get("inline_data"))["data"])
    assert sent == video.read_bytes()


# -- errors, registry, imports -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "env", "args"),
    [
        ("claude", "ANTHROPIC_API_KEY", {}),
        ("gemini", "GOOGLE_API_KEY", {}),
        (
            "openai",
            "AZURE_OPENAI_API_KEY",
            {"api_type": "azure", "base_url": "https://example.openai.azure.com"},
        ),
    ],
)
def test_a_missing_key_is_one_line_naming_the_variable(
    model: str, env: str, args: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY", "AZURE_OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ModelArgsError) as info:
        get_model(model)(model="m", **args)
    assert env in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("model", "module", "extra"), [("claude", "anthropic", "anthropic"), ("gemini", "google.genai", "gemini")]
)
def test_a_missing_sdk_names_the_extra(
    model: str, module: str, extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # import fails as if not installed
    with pytest.raises(MissingDependencyError) as info:
        get_model(model)(model="m", api_key=KEY)
    assert f"pip install 'lmms_eval[{extra}]'" in str(info.value) and "\n" not in str(info.value)


def test_registry_ids() -> None:
    assert resolve_model("gpt4v").class_path == resolve_model("openai").class_path
    assert resolve_model("claude").class_path.endswith("chat.claude.Claude")
    assert resolve_model("gemini").class_path.endswith("chat.gemini.Gemini")


def test_azure_url_layout_and_header(azure_server: ProviderServer) -> None:
    lm = make_model("openai", azure_server)
    url = lm.client.url  # pyright: ignore[reportAttributeAccessIssue]
    assert url == f"{azure_server.base_url}/openai/deployments/m/chat/completions?api-version=2024-10-21"
    lm.generate_until(make_requests(lm, ["x"]))
    headers = azure_server.requests[-1].headers
    assert headers["api-key"] == KEY and "authorization" not in headers


def test_importing_lmms_eval_imports_no_provider_sdk() -> None:
    import subprocess

    code = "import lmms_eval, lmms_eval.models, sys; print(sorted(m for m in ('anthropic', 'google.genai', 'openai') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# -- the protocol's provider forms ---------------------------------------------------------------------------------


def test_chat_messages_to_anthropic_and_gemini_forms() -> None:
    from lmms_eval.media import MediaError
    from lmms_eval.protocol import ChatMessages

    image = Image.new("RGB", (4, 4), "blue")
    messages = ChatMessages.from_raw(
        [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "image", "url": image}, {"type": "text", "text": "what?"}]},
            {"role": "assistant", "content": "blue"},
            {
                "role": "user",
                "content": [{"type": "video", "url": [image, image]}, {"type": "text", "text": "and?"}],
            },
        ]
    )
    system, converted = messages.to_anthropic_messages(video_kwargs={"frames": lambda frames: frames})
    assert system == "be brief" and [m["role"] for m in converted] == ["user", "assistant", "user"]
    block = converted[0]["content"][0]
    assert block["type"] == "image" and block["source"]["media_type"] == "image/png"
    assert Image.open(io.BytesIO(base64.b64decode(block["source"]["data"]))).size == (4, 4)
    assert [b["type"] for b in converted[2]["content"]] == ["image", "image", "text"]  # a video as its frames
    system, contents = messages.to_gemini_contents(video_kwargs={"frames": lambda frames: frames})
    assert system == "be brief" and [c["role"] for c in contents] == ["user", "model", "user"]
    assert contents[0]["parts"][0]["inline_data"]["mime_type"] == "image/png"
    assert contents[1]["parts"] == [{"text": "blue"}]
    assert len(contents[2]["parts"]) == 3  # frames given as a list go as images
    audio = ChatMessages.from_raw(
        [{"role": "user", "content": [{"type": "audio", "url": {"array": [0.0] * 8, "sampling_rate": 8000}}]}]
    )
    with pytest.raises(MediaError, match="no audio"):
        audio.to_anthropic_messages()
    (part,) = audio.to_gemini_contents()[1][0]["parts"]
    assert part["inline_data"]["mime_type"] == "audio/wav" and part["inline_data"]["data"][:4] == b"RIFF"


# -- batch APIs ----------------------------------------------------------------------------------------------------


def test_the_batch_fakes_answer_the_official_sdks() -> None:
    anthropic = pytest.importorskip("anthropic")
    openai = pytest.importorskip("openai")
    params = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "ab cd"}]}
    with ProviderServer("anthropic", api_key=KEY) as server:
        client = anthropic.Anthropic(api_key=KEY, base_url=server.base_url, max_retries=0)
        batch = client.messages.batches.create(requests=[{"custom_id": "a", "params": params}])
        assert batch.processing_status == "in_progress"
        while batch.processing_status != "ended":
            batch = client.messages.batches.retrieve(batch.id)
        (result,) = list(client.messages.batches.results(batch.id))
        assert result.custom_id == "a" and result.result.type == "succeeded"
        assert result.result.message.content[0].text == "dc ba"  # type: ignore[union-attr]
    with ProviderServer("openai", api_key=KEY) as server:
        client = openai.OpenAI(api_key=KEY, base_url=server.base_url + "/v1", max_retries=0)
        line = {"custom_id": "a", "method": "POST", "url": "/v1/chat/completions", "body": params}
        upload = client.files.create(
            file=("b.jsonl", json.dumps(line).encode(), "application/jsonl"), purpose="batch"
        )
        created = client.batches.create(
            input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        while created.status != "completed":
            created = client.batches.retrieve(created.id)
        assert created.output_file_id is not None
        (output,) = [json.loads(x) for x in client.files.content(created.output_file_id).text.splitlines()]
        assert (
            output["custom_id"] == "a"
            and output["response"]["body"]["choices"][0]["message"]["content"] == "dc ba"
        )


BATCH_PROVIDERS = [("openai", "openai"), ("claude", "anthropic")]


def _evaluate(model: str, server: ProviderServer, tmp_path: Path, limit: int, **extra: Any) -> dict[str, Any]:
    model_args = {"model": "m", "api_key": KEY, "retry_backoff_s": 0.01, "batch_poll_s": 0.01, **extra}
    model_args["base_url"] = server.base_url + ("/v1" if model == "openai" else "")
    cache = extra.pop("use_cache", None)
    model_args.pop("use_cache", None)
    results = lmms_eval.simple_evaluate(
        model=model,
        model_args=model_args,
        tasks=["demo_qa"],
        limit=limit,
        output_path=str(tmp_path),
        log_samples=True,
        show_progress=False,
        **({"use_cache": cache} if cache else {}),
    )
    assert results is not None
    return results


def _samples(out: Path) -> list[dict[str, Any]]:
    rows = [json.loads(x) for x in next(out.rglob("*_samples_demo_qa.jsonl")).read_text().splitlines()]
    return sorted(rows, key=lambda row: row["doc_id"])


@pytest.mark.parametrize(("model", "provider"), BATCH_PROVIDERS)
def test_a_batch_scores_exactly_as_the_online_path(
    model: str, provider: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    answers = _demo_answers()
    runs = {}
    for batch in (False, True):
        with ProviderServer(provider, api_key=KEY) as server:
            server.responder = lambda payload: answers[last_user_text(payload).split("\n")[0]] + "\nbecause"
            server.add_fault("status", match="What is 4 x 3?", status=400, times=None)
            with caplog.at_level(logging.INFO, logger="lmms_eval.models.api.batch"):
                runs[batch] = _evaluate(model, server, tmp_path / str(batch), 6, batch=batch)
            if batch:
                (submitted,) = server.batches.values()
                assert len(submitted.requests) == 6
                if provider == "anthropic":  # the params are those of messages.create, sampling included
                    params = submitted.requests[0][1]
                    assert params["temperature"] == 0.0 and "extra_body" not in params
                # nothing was sent online: only the batch endpoints were posted to
                assert {r.path for r in server.requests} <= {
                    "/v1/files",
                    "/v1/batches",
                    "/v1/messages/batches",
                }
            else:
                assert not server.batches
    online, batched = runs[False], runs[True]
    assert batched["results"]["demo_qa"] == online["results"]["demo_qa"]
    online_rows, batched_rows = _samples(tmp_path / "False"), _samples(tmp_path / "True")
    keys = ("doc_id", "resps", "filtered_resps", "exact_match", "failed")
    assert [[r.get(k) for k in keys] for r in batched_rows] == [[r.get(k) for k in keys] for r in online_rows]
    assert (
        batched["results"]["demo_qa"]["failed"] == 1
        and batched["results"]["demo_qa"]["exact_match,none"] == 1.0
    )
    assert batched["usage"]["total"]["output_tokens"] == online["usage"]["total"]["output_tokens"] > 0
    assert "of 6 requests done" in caplog.text  # progress while polling


@pytest.mark.parametrize(("model", "provider"), BATCH_PROVIDERS)
def test_a_submitted_batch_is_resumed_after_a_restart(model: str, provider: Any, tmp_path: Path) -> None:
    answers = _demo_answers()
    cache = str(tmp_path / "cache")
    with ProviderServer(provider, api_key=KEY) as server:
        server.responder = lambda payload: answers[last_user_text(payload).split("\n")[0]]
        server.hold = True  # the batch keeps running: the first run gives up waiting
        first = _evaluate(model, server, tmp_path / "1", 4, batch=True, batch_max_wait_s=0.1, use_cache=cache)
        assert first["results"]["demo_qa"]["failed"] == 4 and len(server.batches) == 1
        (row, *_) = _samples(tmp_path / "1")
        assert "rerun with the same --use_cache" in row["errors"][0]
        server.hold = False
        second = _evaluate(model, server, tmp_path / "2", 4, batch=True, use_cache=cache)
        assert len(server.batches) == 1  # collected, not submitted again
        assert (
            second["results"]["demo_qa"].get("failed", 0) == 0
            and second["results"]["demo_qa"]["exact_match,none"] == 1.0
        )


@pytest.mark.parametrize(
    ("model", "args", "message"),
    [
        (
            "openai",
            {"api_key": KEY, "api_type": "azure", "base_url": "https://x.openai.azure.com"},
            "api_type=azure",
        ),
        ("claude", {"api_key": KEY, "batch_poll_s": 0}, "batch_poll_s"),
    ],
)
def test_batch_mode_refusals_are_one_line(model: str, args: dict[str, Any], message: str) -> None:
    with pytest.raises(ModelArgsError) as info:
        lm = get_model(model)(model="m", batch=True, **args)
        assert isinstance(lm, ApiChatModel)
        lm.batch_provider()
    assert message in str(info.value) and "\n" not in str(info.value)


def test_gemini_takes_no_batch_argument() -> None:
    with pytest.raises(ModelArgsError, match="does not accept argument 'batch'"):
        get_model("gemini").create_from_arg_string(f"model=m,api_key={KEY},batch=true")
