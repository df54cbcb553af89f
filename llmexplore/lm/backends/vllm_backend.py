"""Backend ``vllm``: in-process vLLM for large offline annotation on a GPU.

vLLM is imported only when this backend is built, so the rest of the suite never needs
it. ``model`` is a local weights folder (nothing is downloaded at run time); options go
to ``vllm.LLM`` (e.g. ``tensor_parallel_size``, ``gpu_memory_utilization``,
``max_model_len``, ``dtype``). vLLM batches the whole prompt list itself.

Answer scoring (``score``) reads each option's tokens' log-probabilities from vLLM's
``prompt_logprobs`` over the prompt followed by the option (token ids, so the option's
tokens are exactly the ones scored); vLLM's prefix caching shares the prompt's work
across options.

Cache keys carry the weights' content (``weights_fingerprint``), the system prompt and every
``vllm.LLM`` option except those known to change only speed or memory (``_RESOURCE_OPTIONS``):
an option not known here (``dtype``, ``quantization``, ``max_model_len``, the engine's
``seed`` ...) may change answers, so it keys them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from llmexplore.errors import ConfigError, require
from llmexplore.lm.backends.hf_weights import weights_fingerprint
from llmexplore.lm.base import Completion, LanguageModel, TokenLogprob
from llmexplore.lm.config import SamplingParams

#: ``vllm.LLM`` options that change only speed, memory or placement, never an answer: left out of cache keys
_RESOURCE_OPTIONS = frozenset({
    "tensor_parallel_size", "pipeline_parallel_size", "gpu_memory_utilization", "swap_space",
    "cpu_offload_gb", "max_num_seqs", "max_num_batched_tokens", "max_seq_len_to_capture", "enforce_eager",
    "enable_prefix_caching", "disable_custom_all_reduce", "disable_log_stats", "distributed_executor_backend",
    "download_dir",
})


class VLLMBackend(LanguageModel):
    supports_logprobs = True
    supports_scoring = True

    def __init__(self, model: str | None, *, endpoint: str = "chat", system: str | None = None, **llm_options: Any):
        if not model:
            raise ConfigError("the vllm backend needs `model`: a local folder with the model weights")
        if not Path(model).expanduser().exists():
            raise ConfigError(f"model weights folder {model} not found",
                              hint="download the weights beforehand and give their local path; "
                                   "nothing is fetched at run time")
        self._vllm = require("vllm", "vllm", "The in-process vLLM backend")
        self.endpoint = endpoint
        self.name = f"vllm-{endpoint}"
        self.system = system
        self._model_path = str(Path(model).expanduser())
        #: what the weights hold and the engine options that may change answers, for cache keys
        self._settings = {"weights": weights_fingerprint(Path(self._model_path)), "system": system,
                          "engine": {k: v for k, v in llm_options.items() if k not in _RESOURCE_OPTIONS}}
        self._llm = self._vllm.LLM(model=self._model_path, **llm_options)

    @property
    def model_id(self) -> str:
        """The weights folder's name (the last part of its path)."""
        return Path(self._model_path).name

    def cache_settings(self) -> dict[str, Any]:
        """The weights' content (the folder name alone may be shared by other weights), the system prompt
        and the engine options that may change answers (see the module's docstring)."""
        return self._settings

    def _params(self, params: SamplingParams) -> Any:
        return self._vllm.SamplingParams(temperature=params.temperature, top_p=params.top_p,
                                         max_tokens=params.max_tokens, stop=list(params.stop) or None,
                                         seed=params.seed, logprobs=params.logprobs)

    def generate(self, prompts: Sequence[str], params: SamplingParams) -> list[Completion]:
        """All prompts in one vLLM call; chat puts each in the chat template (after ``system`` if set)."""
        sp = self._params(params)
        if self.endpoint == "chat":
            conversations = [([{"role": "system", "content": self.system}] if self.system else [])
                             + [{"role": "user", "content": p}] for p in prompts]
            outputs = self._llm.chat(conversations, sp, use_tqdm=False)
        else:
            outputs = self._llm.generate(list(prompts), sp, use_tqdm=False)
        return [_completion(o.outputs[0], params) for o in outputs]

    def score(self, prompts: Sequence[str], lead: str, options: Sequence[str]) -> list[list[float]]:
        """Each option's log-probability, summed from vLLM's prompt log-probabilities over exactly its token
        ids, placed after the prompt (chat: in the chat template) and ``lead``."""
        tokenizer = self._llm.get_tokenizer()
        option_ids = [tokenizer(o, add_special_tokens=False).input_ids for o in options]
        contexts = []
        for p in prompts:
            if self.endpoint == "chat":
                messages = ([{"role": "system", "content": self.system}] if self.system else []) + [
                    {"role": "user", "content": p}]
                text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True) + lead
                contexts.append(tokenizer(text, add_special_tokens=False).input_ids)
            else:
                contexts.append(tokenizer(p + "\n" + lead).input_ids)
        requests = [{"prompt_token_ids": ctx + opt} for ctx in contexts for opt in option_ids]
        sp = self._vllm.SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0)
        outputs = self._llm.generate(requests, sp, use_tqdm=False)
        scores: list[list[float]] = []
        for c, ctx in enumerate(contexts):
            row = []
            for o, opt in enumerate(option_ids):
                out = outputs[c * len(option_ids) + o]
                ids = ctx + opt
                row.append(sum(float(out.prompt_logprobs[j][ids[j]].logprob) for j in range(len(ctx), len(ids))))
            scores.append(row)
        return scores

    def close(self) -> None:
        """Drop the engine, and with its last reference its GPU memory; no answers after this."""
        self._llm = None


def _completion(out: Any, params: SamplingParams) -> Completion:
    logprobs = None
    if params.logprobs is not None and getattr(out, "logprobs", None):
        items = []
        for token_id, position in zip(out.token_ids, out.logprobs):
            chosen = position[token_id]
            top = {(lp.decoded_token or str(tid)): float(lp.logprob) for tid, lp in position.items()}
            items.append(TokenLogprob(chosen.decoded_token or str(token_id), float(chosen.logprob), top))
        logprobs = tuple(items)
    return Completion(out.text, out.finish_reason, logprobs)
