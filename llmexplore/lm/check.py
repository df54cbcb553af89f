"""Can a run use this language model? Checked before training starts, so a wrong address or
model name stops the run at once with one clear message (CLI exit 2).

oracle: the prompt templates load. openai: the server answers and serves the model (the
backend's own start-up check). vllm: the weights folder exists and vLLM is installed; the
model itself is loaded only where it runs (loading it twice would cost minutes of GPU time).
transformers: the model path is a model folder or a .gguf transformers can convert (converted
here, once, so the run's own load is quick). ``answer=score`` with a backend that cannot score
stops here too.
"""

from __future__ import annotations

from pathlib import Path

from llmexplore.errors import ConfigError, require
from llmexplore.lm.config import LMConfig


def check_lm(config: LMConfig) -> None:
    """Return when a run can use this LM, else raise a user error saying why: vllm's weights and package,
    transformers' weights (a .gguf converted here), else the backend's start-up check and, with
    ``answer=score``, that it can score."""
    if config.backend == "vllm":
        if not config.model:
            raise ConfigError("the vllm backend needs `model`: a local folder with the model weights")
        if not Path(config.model).expanduser().exists():
            raise ConfigError(f"model weights folder {config.model} not found",
                              hint="download the weights beforehand and give their local path")
        require("vllm", "vllm", "The in-process vLLM backend")
        return
    if config.backend == "transformers":
        from llmexplore.lm.backends.hf_weights import resolve_weights

        require("transformers", "local", "The transformers LM backend")
        resolve_weights(config.model)
        return
    from llmexplore.lm.backends import check_scoring, make_backend

    backend = make_backend(config)
    try:
        check_scoring(config, backend)
    finally:
        backend.close()
