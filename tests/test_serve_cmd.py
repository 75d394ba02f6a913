"""``hyperplan serve``'s command function (hyperplan.cli.serve_cmd): every option lands in its
field of ServeOptions and from there in the gateway's config and upstream options; the checks
before anything is served keep their messages and exit codes. Nothing is served here (``start``
is replaced, or fails before serving); the gateway tests (tests/test_mcp_gateway*.py) serve."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hyperplan.cli import app
from hyperplan.cli import serve_cmd as module
from hyperplan.cli.serve_cmd import ServeOptions, serve_cmd, start
from hyperplan.errors import HyperplanError
from hyperplan.execute.sandboxing import Sandbox
from hyperplan.integrations.mcp_gateway.config import (
    CallLimits,
    ConversationLimits,
    Mode,
    Namespace,
)

runner = CliRunner()


def _given(monkeypatch: pytest.MonkeyPatch, *args: str) -> ServeOptions:
    """The options ``hyperplan serve ARGS`` hands to ``start`` (replaced here: the tests call
    the real one, imported above)."""
    seen: list[ServeOptions] = []
    monkeypatch.setattr(module, "start", seen.append)
    result = runner.invoke(app, ["serve", *args])
    assert result.exit_code == 0, result.output
    (opts,) = seen
    return opts


def test_the_fields_are_the_parameters_in_order():
    """serve_cmd builds ServeOptions positionally: the two lists must match name for name."""
    params = list(inspect.signature(serve_cmd).parameters)
    assert params == [field.name for field in dataclasses.fields(ServeOptions)]


def test_every_option_lands_in_its_field(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    config, token, cache, notes = (tmp_path / name for name in ("c.json", "t", "cache", "a"))
    opts = _given(monkeypatch, "python:m", "demo", "--config", str(config),
                  "--namespace", "always", "--mode", "narrow", "--http", "8123",
                  "--allow-remote", "--auth-token-env", "VAR", "--auth-token-file", str(token),
                  "--allow-origin", "http://a", "--allow-origin", "http://b",
                  "--sessions-per-client", "3", "--session-idle-timeout", "4.5",
                  "--budget", "7", "--call-timeout", "8.5", "--embedder", "hashing",
                  "--cache-dir", str(cache), "--no-cache", "--allow-unsafe-tools",
                  "--sandbox", "none", "--base-url", "http://x", "--header", "A: b",
                  "--max-response-bytes", "11", "--idempotency-key-header", "Idem",
                  "--max-request-chars", "12", "--max-argument-bytes", "13",
                  "--max-calls-per-upstream", "14", "--max-calls-per-client", "15",
                  "--conversation-idle", "16.5", "--annotations", str(notes),
                  "--llm-annotate", "http://llm")
    assert opts == ServeOptions(
        sources=("python:m", "demo"), config_file=config, namespace=Namespace.ALWAYS,
        mode=Mode.NARROW, http="8123", allow_remote=True, auth_token_env="VAR",
        auth_token_file=token, allow_origin=("http://a", "http://b"), sessions_per_client=3,
        session_idle_timeout=4.5, budget=7, call_timeout=8.5, embedder="hashing",
        cache_dir=cache, no_cache=True, allow_unsafe_tools=True, sandbox=Sandbox.NONE,
        base_url="http://x", header=("A: b",), max_response_bytes=11,
        idempotency_key_header="Idem", max_request_chars=12, max_argument_bytes=13,
        max_calls_per_upstream=14, max_calls_per_client=15, conversation_idle=16.5,
        annotations=notes, llm_annotate="http://llm")
    assert opts.sandbox is Sandbox.NONE


def test_the_defaults(monkeypatch: pytest.MonkeyPatch):
    opts = _given(monkeypatch)
    assert (opts.sources, opts.config_file, opts.http, opts.allow_origin, opts.header) == \
        ((), None, None, (), ())
    assert (opts.namespace, opts.mode, opts.sandbox) == \
        (Namespace.COLLISIONS, Mode.SEARCH, Sandbox.SUBPROCESS)
    assert (opts.no_cache, opts.allow_remote, opts.allow_unsafe_tools) == (False, False, False)
    assert (opts.max_calls_per_upstream, opts.max_calls_per_client, opts.conversation_idle) \
        == (CallLimits.per_source, CallLimits.per_client, ConversationLimits.idle_seconds)
    assert opts.max_response_bytes == 10 * 1024 * 1024 and opts.embedder == "auto"


def test_the_options_reach_the_gateway_config_and_the_upstreams(
        monkeypatch: pytest.MonkeyPatch):
    opts = _given(monkeypatch, "--budget", "7", "--max-calls-per-upstream", "14",
                  "--max-calls-per-client", "15", "--conversation-idle", "16.5",
                  "--header", "A: b", "--sandbox", "none", "--namespace", "always",
                  "--idempotency-key-header", "Idem", "--max-response-bytes", "11")
    config = module._gateway_config(opts, None)
    assert (config.budget, config.cache_dir, config.annotations) == (7, "default", None)
    assert config.call_limits == CallLimits(14, 15)
    assert config.conversation_limits == ConversationLimits(16.5)
    assert module._gateway_config(dataclasses.replace(opts, no_cache=True), None).cache_dir \
        is None
    upstream = module._upstream_options(opts)
    assert upstream.sandbox is Sandbox.NONE and upstream.namespace is Namespace.ALWAYS
    assert (dict(upstream.headers or {}), upstream.idempotency_header,
            upstream.max_response_bytes) == ({"A": "b"}, "Idem", 11)


def _failing(monkeypatch: pytest.MonkeyPatch, *args: str) -> ServeOptions:
    """The options of ``hyperplan serve ARGS``, and ``serve`` made to fail the test if the
    checks let them through."""
    opts = _given(monkeypatch, *args)

    def served(*_: object, **__: object) -> None:
        raise AssertionError("served despite a bad option")

    monkeypatch.setattr("hyperplan.integrations.mcp_gateway.serve", served)
    return opts


def test_cache_dir_with_no_cache_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    opts = _failing(monkeypatch, "--cache-dir", str(tmp_path), "--no-cache")
    with pytest.raises(HyperplanError, match="give --cache-dir or --no-cache, not both"):
        start(opts)


def test_a_non_positive_response_cap_is_refused(monkeypatch: pytest.MonkeyPatch):
    opts = _failing(monkeypatch, "--max-response-bytes", "0")
    with pytest.raises(HyperplanError, match="--max-response-bytes must be positive"):
        start(opts)


@pytest.mark.parametrize("args", [("--auth-token-env", "VAR"), ("--allow-origin", "http://a")])
def test_http_security_without_http_is_one_error_line(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: tuple[str]):
    opts = _failing(monkeypatch, *args)
    with pytest.raises(SystemExit) as exit_:
        start(opts)
    assert exit_.value.code == 1
    assert capsys.readouterr().err == ("error: --auth-token-env, --auth-token-file and "
                                       "--allow-origin apply to --http only\n")


def test_a_bad_annotation_file_is_one_error_line(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path):
    bad = tmp_path / "notes.json"
    bad.write_text("{not json", encoding="utf-8")
    opts = _failing(monkeypatch, "--annotations", str(bad))
    with pytest.raises(SystemExit) as exit_:
        start(opts)
    err = capsys.readouterr().err
    assert exit_.value.code == 1 and err.startswith("error: ") and err.count("\n") == 1
