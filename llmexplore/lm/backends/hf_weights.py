"""Finding local Hugging Face weights: a model folder, or a single .gguf file converted once and kept.

Loading a .gguf through transformers de-quantises every tensor and rebuilds the tokenizer
(about a minute for a 270M model on two cores). The result is saved with
``save_pretrained`` under ``$LLMEXPLORE_MODEL_CACHE`` (default ``~/.cache/llmexplore/models``)
in a folder named by the file's sha256, so every later load reads plain safetensors in
seconds, and a changed file can never reuse another file's conversion.

transformers (4.57) rebuilds a Gemma .gguf's SentencePiece-BPE vocabulary as a Unigram
model whose scores are the pieces' negative merge ranks, which splits common words into
frequent fragments ("hello" -> "hel" "lo"); the model never saw such splits. The
conversion therefore rebuilds it as BPE, with merges ordered by those ranks, the way
SentencePiece's own BPE encoder merges.

``weights_fingerprint`` names what a weights folder holds, for the LM cache's keys.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

from llmexplore.atomic import file_sha256
from llmexplore.errors import ConfigError, require

MODEL_CACHE_ENV = "LLMEXPLORE_MODEL_CACHE"
#: written last into a converted folder: a folder without it is an interrupted conversion
_DONE = "llmexplore-converted.json"
#: bytes read at each of three places of a large file for its fingerprint (``weights_fingerprint``)
_SAMPLE = 1 << 16


def model_cache_dir() -> Path:
    """Where converted .gguf models are kept: ``$LLMEXPLORE_MODEL_CACHE``, else ~/.cache/llmexplore/models."""
    return Path(os.environ.get(MODEL_CACHE_ENV) or "~/.cache/llmexplore/models").expanduser()


def weights_fingerprint(path: Path) -> str:
    """A short hash of what a weights folder (or single file) holds, for cache keys.

    Content, not location: a cache copied or shared with another machine hits there for the same
    weights wherever they lie, and misses for other weights behind the same path (a re-download of
    a newer revision, another fine-tune in a folder of the same name). Each file counts by its
    path inside the folder, its size and its bytes: all of a small file (config, tokenizer), three
    64 KiB samples (start, middle, end) of a large one, so a multi-GB model costs a few reads.
    Hidden files (download tools keep timestamps there) and our conversion marker (it names the
    source's path on this machine) are left out."""
    if path.is_file():
        files = [(path, "")]
    else:
        files = sorted(((f, f.relative_to(path).as_posix()) for f in path.rglob("*")
                        if f.is_file() and f.name != _DONE
                        and not any(part.startswith(".") for part in f.relative_to(path).parts)),
                       key=lambda item: item[1])
    digest = hashlib.sha256()
    for file, name in files:
        try:
            size = file.stat().st_size
            digest.update(f"{name}\0{size}\0".encode())
            with open(file, "rb") as fh:
                if size <= 3 * _SAMPLE:
                    digest.update(fh.read())
                    continue
                for offset in (0, (size - _SAMPLE) // 2, size - _SAMPLE):
                    fh.seek(offset)
                    digest.update(fh.read(_SAMPLE))
        except OSError as exc:
            raise ConfigError(f"cannot read the model file {file}: {exc.strerror or exc}",
                              hint="check the weights' permissions") from None
    return digest.hexdigest()[:16]


def resolve_weights(model: str | None) -> Path:
    """The folder transformers should load: ``model`` itself, or the cached conversion of a .gguf file."""
    if not model:
        raise ConfigError("the transformers backend needs `model`: a local Hugging Face model folder or a .gguf file",
                          hint="e.g. --model ~/models/gemma-3-270m.gguf")
    path = Path(model).expanduser()
    if not path.exists():
        raise ConfigError(f"model path {model} not found",
                          hint="give a local model folder or .gguf file; nothing is downloaded at run time")
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ConfigError(f"{model} is not a Hugging Face model folder (no config.json)",
                              hint="point --model at a folder written by save_pretrained, or at a .gguf file")
        return path
    if path.suffix.lower() != ".gguf":
        raise ConfigError(f"{model} is neither a model folder nor a .gguf file",
                          hint="give a folder with config.json and weights, or a single .gguf file")
    with open(path, "rb") as fh:
        if fh.read(4) != b"GGUF":
            raise ConfigError(f"{model} is not a GGUF file (bad magic bytes): corrupt or truncated",
                              hint="download or assemble the file again")
    target = model_cache_dir() / file_sha256(path)
    if not (target / _DONE).is_file():
        convert_gguf(path, target)
    return target


def convert_gguf(path: Path, target: Path) -> None:
    """De-quantise ``path`` with transformers and save it to ``target`` (atomically: a temp folder renamed)."""
    require("gguf", "local", "Loading a .gguf model")
    transformers = require("transformers", "local", "The transformers LM backend")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
            model = transformers.AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name)
        except (ValueError, KeyError, RuntimeError, NotImplementedError, OSError) as exc:
            raise ConfigError(f"transformers {transformers.__version__} cannot load {path.name}: {exc}",
                              hint="use a .gguf of an architecture and quantisation transformers supports "
                                   "(see its GGUF docs), or a Hugging Face model folder") from None
        if getattr(model.config, "model_type", "").startswith("gemma"):
            _gemma_bpe(tokenizer)
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / _DONE).write_text(json.dumps({"source": str(path), "sha256": target.name}))
        if target.exists():  # an interrupted earlier conversion
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _gemma_bpe(tokenizer) -> None:
    """Replace a Unigram model built from a Gemma .gguf by the BPE model its ranks describe (see module doc)."""
    from tokenizers import Tokenizer, models

    state = json.loads(tokenizer.backend_tokenizer.to_str())
    if state["model"]["type"] != "Unigram":
        return
    pieces = state["model"]["vocab"]
    vocab = {piece: i for i, (piece, _) in enumerate(pieces)}
    rank = {piece: -score for piece, score in pieces}
    merges = []
    for piece in vocab:
        for cut in range(1, len(piece)):
            left, right = piece[:cut], piece[cut:]
            if left in vocab and right in vocab:
                merges.append((rank[piece], vocab[left], vocab[right], left, right))
    merges.sort()
    backend = Tokenizer.from_str(json.dumps(state))
    unk_id = state["model"].get("unk_id")
    backend.model = models.BPE(vocab=vocab, merges=[(m[3], m[4]) for m in merges], byte_fallback=True,
                               fuse_unk=True, unk_token=pieces[unk_id][0] if unk_id is not None else None)
    tokenizer._tokenizer = backend
