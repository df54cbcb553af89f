"""Backend ``transformers``: a local model run in-process with Hugging Face transformers, CPU or GPU.

``model`` is a local model folder or a single .gguf file (converted once and cached, see
``hf_weights``). Prompts go through the model's chat template when it has one and the
endpoint is ``chat``; a base model without a template gets the plain prompt.

Two ways to answer: ``generate`` (batched sampling with the shared defaults, optional
per-token log-probabilities) and ``score`` (the log-probability of each closed answer
option after the prompt). Scoring is one forward pass per prompt: rows that differ only
in their option's last token are merged (the option's tokens are read from the logits at
every position of one row), the token prefix every row of a batch shares (the template's
head) is run once and its key/value cache reused, and the vocabulary projection is
applied only at the positions an option needs. Prompts are batched by token length, so a
batch pads little. ``autocast="bfloat16"`` runs the matrix products in bfloat16 (norms,
softmax and the residual stream stay float32): about twice as fast on CPUs with AVX-512 BF16
or AMX, with scores within about 0.1 nats of float32; it is part of the model id, so its
answers never share cache rows with float32 ones.
"""

from __future__ import annotations

import contextlib
import copy
import logging
from pathlib import Path
from typing import Any, Iterator, Sequence

from llmexplore.errors import ConfigError, require, shown
from llmexplore.lm.backends.hf_weights import resolve_weights, weights_fingerprint
from llmexplore.lm.base import Completion, LanguageModel, TokenLogprob
from llmexplore.lm.config import SamplingParams


class TransformersBackend(LanguageModel):
    supports_logprobs = True
    supports_scoring = True
    supports_prompt_logprobs = True

    def __init__(self, model: str | None, *, endpoint: str = "chat", system: str | None = None,
                 device: str | None = None, dtype: str = "float32", batch_size: int = 16,
                 threads: int | None = None, autocast: str | None = None):
        path = resolve_weights(model)
        torch = require("torch", "local", "The transformers LM backend")
        transformers = require("transformers", "local", "The transformers LM backend")
        if batch_size < 1:
            raise ConfigError("the transformers backend's batch_size must be at least 1")
        if not hasattr(torch, dtype):
            raise ConfigError(f"unknown dtype {shown(dtype)}", hint="float32, bfloat16 or float16")
        if autocast not in (None, "bfloat16", "float16"):
            raise ConfigError(f"unknown autocast dtype {shown(autocast)}", hint="bfloat16, float16, or leave it unset")
        if threads:
            torch.set_num_threads(int(threads))
        self._torch = torch
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        try:
            with _quiet_mistral_check():
                self.tokenizer = transformers.AutoTokenizer.from_pretrained(str(path))
            self.model = transformers.AutoModelForCausalLM.from_pretrained(str(path), dtype=getattr(torch, dtype))
        except (ValueError, OSError, KeyError) as exc:
            raise ConfigError(f"transformers cannot load the model in {path}: {exc}",
                              hint="check that the folder holds a complete causal language model") from None
        self.model.to(self.device).eval()
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.chat = endpoint == "chat" and bool(getattr(self.tokenizer, "chat_template", None))
        self.name = f"transformers-{'chat' if self.chat else 'completion'}"
        self.system = system
        self.batch_size = batch_size
        self.autocast = autocast
        suffix = "" if dtype == "float32" and not autocast else f"@{autocast or dtype}"
        self._model_id = Path(model).expanduser().name.removesuffix(".gguf") + suffix  # type: ignore[arg-type]
        #: what the loaded folder holds (a .gguf: its conversion), for cache keys
        self._weights = weights_fingerprint(path)
        #: the kept shared prefix, its key/value cache and its last position's final hidden state
        self._prefix: tuple[tuple[int, ...], Any, Any] | None = None
        #: the shared prefix's own token log-probabilities (``prompt_logprobs``)
        self._prefix_logprobs: tuple[tuple[int, ...], list[float]] | None = None
        self._option_ids: dict[tuple[str, ...], list[list[int]]] = {}

    @property
    def model_id(self) -> str:
        """The weights' file or folder name (``.gguf`` dropped), plus ``@<dtype>`` unless float32 without
        autocast, so each precision has its own cache rows."""
        return self._model_id

    def cache_settings(self) -> dict[str, Any]:
        """The weights' content (the model id names only the file or folder, which other weights may share)
        and the system prompt (part of what the model reads). Device, batch size and threads are left
        out: they change neither the question nor the model, at most the last bits of the arithmetic,
        and keying them would miss for every machine with another device."""
        return {"weights": self._weights, "system": self.system}

    # -- prompts ---------------------------------------------------------------------------
    def render(self, prompt: str) -> str:
        """The text the model reads: ``prompt`` in the chat template (after ``system`` when set) with the
        assistant's turn opened, or as it is without a template or on the completion endpoint."""
        if not self.chat:
            return prompt
        messages = ([{"role": "system", "content": self.system}] if self.system else []) + [
            {"role": "user", "content": prompt}]
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    def _precision(self) -> Any:
        """Mixed precision for the forward passes when ``autocast`` is set (a no-op context otherwise)."""
        if not self.autocast:
            return contextlib.nullcontext()
        return self._torch.autocast(self.device.split(":")[0], dtype=getattr(self._torch, self.autocast))

    def _ids(self, text: str) -> list[int]:
        # a rendered chat template already holds the special tokens it needs
        return self.tokenizer(text, add_special_tokens=not self.chat).input_ids

    # -- generation ------------------------------------------------------------------------
    def generate(self, prompts: Sequence[str], params: SamplingParams) -> list[Completion]:
        """Completions in prompt order, generated ``batch_size`` prompts at a time."""
        out: list[Completion] = []
        for start in range(0, len(prompts), self.batch_size):
            out.extend(self._generate(prompts[start:start + self.batch_size], params))
        return out

    def _generate(self, prompts: Sequence[str], params: SamplingParams) -> list[Completion]:
        torch, tok = self._torch, self.tokenizer
        tok.padding_side = "left"
        enc = tok([self.render(p) for p in prompts], return_tensors="pt", padding=True,
                  add_special_tokens=not self.chat).to(self.device)
        kwargs: dict[str, Any] = dict(max_new_tokens=params.max_tokens, pad_token_id=tok.pad_token_id,
                                      return_dict_in_generate=True, output_logits=params.logprobs is not None)
        if params.temperature > 0:
            kwargs.update(do_sample=True, temperature=params.temperature, top_p=params.top_p, top_k=0)
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        if params.stop:
            kwargs.update(stop_strings=list(params.stop), tokenizer=tok)
        if params.seed is not None:
            torch.manual_seed(params.seed)
        with torch.inference_mode(), self._precision():
            result = self.model.generate(**enc, **kwargs)
        new = result.sequences[:, enc["input_ids"].shape[1]:].tolist()
        stops = set(_as_list(self.model.generation_config.eos_token_id)) | {tok.eos_token_id}
        completions = []
        for row, ids in enumerate(new):
            end = next((k for k, t in enumerate(ids) if t in stops), None)
            kept = ids if end is None else ids[:end]
            text = tok.decode(kept, skip_special_tokens=True)
            finish = "stop" if end is not None else "length"
            for s in params.stop:  # a stop string ends the text where it starts, as the API does
                if s in text:
                    text, finish = text[:text.index(s)], "stop"
            logprobs = None
            if params.logprobs is not None:
                logprobs = tuple(self._token_logprob(result.logits[k][row], t, params.logprobs)
                                 for k, t in enumerate(kept))
            completions.append(Completion(text, finish, logprobs))
        return completions

    def _token_logprob(self, logits: Any, token: int, top: int) -> TokenLogprob:
        lp = self._torch.log_softmax(logits.float(), dim=-1)
        alternatives = {}
        if top:
            values, ids = lp.topk(top)
            alternatives = {self.tokenizer.decode([i]): float(v) for v, i in zip(values.tolist(), ids.tolist())}
        return TokenLogprob(self.tokenizer.decode([token]), float(lp[token]), alternatives)

    # -- answer scoring --------------------------------------------------------------------
    def score(self, prompts: Sequence[str], lead: str, options: Sequence[str]) -> list[list[float]]:
        """log P(option | prompt, lead) for every option of every prompt (summed over the option's tokens)."""
        key = tuple(options)
        if key not in self._option_ids:
            ids = [self.tokenizer(o, add_special_tokens=False).input_ids for o in options]
            if any(not i for i in ids):
                raise ConfigError(f"an answer option of {list(options)} is empty after tokenisation")
            self._option_ids[key] = ids
        option_ids = self._option_ids[key]
        joint = "" if self.chat else "\n"
        contexts = [self._ids(self.render(p) + joint + lead) for p in prompts]
        order = sorted(range(len(contexts)), key=lambda i: len(contexts[i]))  # similar lengths pad little
        scores: list[list[float]] = [[] for _ in contexts]
        for start in range(0, len(order), self.batch_size):
            chunk = order[start:start + self.batch_size]
            for i, row in zip(chunk, self._score([contexts[i] for i in chunk], option_ids)):
                scores[i] = row
        return scores

    def _score(self, contexts: list[list[int]], option_ids: list[list[int]]) -> list[list[float]]:
        torch = self._torch
        # one row per context and distinct option head: options that differ only in their last token share it
        heads = _maximal([tuple(o[:-1]) for o in option_ids])
        owner = [next(h for h, head in enumerate(heads) if head[:len(o) - 1] == tuple(o[:-1])) for o in option_ids]
        rows = [ctx + list(head) for ctx in contexts for head in heads]
        prefix_len, cache = self._shared_prefix(rows)
        suffixes = [r[prefix_len:] for r in rows]
        # positions (row, index in the suffix) whose next-token distribution an option token needs
        wanted: dict[tuple[int, int], int] = {}
        plan: list[list[list[tuple[int, int]]]] = []
        for c, ctx in enumerate(contexts):
            per_option = []
            for o, opt in enumerate(option_ids):
                row = c * len(heads) + owner[o]
                first = len(ctx) - 1 - prefix_len
                per_option.append([(wanted.setdefault((row, first + j), len(wanted)), tok)
                                   for j, tok in enumerate(opt)])
            plan.append(per_option)
        with torch.inference_mode():
            hidden = self._hidden_after_prefix(suffixes, prefix_len, cache)
            where = list(wanted)
            logp = self._log_softmax(hidden[[r for r, _ in where], [i for _, i in where]])
        return [[float(sum(logp[k, t] for k, t in steps)) for steps in per_option] for per_option in plan]

    def _hidden_after_prefix(self, suffixes: list[list[int]], prefix_len: int, cache: Any) -> Any:
        """Final hidden states of token rows that all continue the shared prefix in ``cache`` (copied and
        repeated per row, so the cache stays reusable; none: the rows stand alone), right-padded."""
        torch = self._torch
        width = max(len(s) for s in suffixes)
        pad = self.tokenizer.pad_token_id
        ids = torch.tensor([s + [pad] * (width - len(s)) for s in suffixes], device=self.device)
        mask = torch.zeros((len(suffixes), prefix_len + width), dtype=torch.long, device=self.device)
        for r, s in enumerate(suffixes):
            mask[r, :prefix_len + len(s)] = 1
        past = None
        if cache is not None:
            past = copy.deepcopy(cache)
            past.batch_repeat_interleave(len(suffixes))
        with self._precision():
            return self.model.get_decoder()(input_ids=ids, attention_mask=mask, past_key_values=past,
                                            use_cache=past is not None).last_hidden_state

    def _log_softmax(self, hidden: Any) -> Any:
        """Next-token log-probabilities from final hidden states; the vocabulary projection at full
        precision (it decides the scores' last digits), with the model's logit soft-capping."""
        torch = self._torch
        head = self.model.get_output_embeddings()
        logits = torch.nn.functional.linear(hidden.to(head.weight.dtype), head.weight, head.bias).float()
        cap = getattr(self.model.config, "final_logit_softcapping", None)
        if cap:
            logits = torch.tanh(logits / cap) * cap
        return torch.log_softmax(logits, dim=-1)

    # -- prompt log-probabilities (what a server's echo replies carry) ----------------------
    def prompt_logprobs(self, prompts: Sequence[str],
                        starts: Sequence[int] | None = None) -> list[list[tuple[str, int, float | None]]]:
        """Every prompt token with its offset and log-probability; prompts are used as given (no template).

        ``starts`` (a character offset per prompt) limits the work to the tokens that start at or after it
        (the others get None): projecting a position onto the vocabulary costs more than the model's own
        layers for a small model with a large vocabulary, and a scoring client needs only the options' tail.
        """
        tok = self.tokenizer
        encoded = [tok(p, return_offsets_mapping=True) for p in prompts]
        rows = [e.input_ids for e in encoded]
        firsts = [0] * len(rows) if starts is None else [
            next((j for j, span in enumerate(e.offset_mapping) if span[0] >= start), len(e.input_ids))
            for e, start in zip(encoded, starts)]
        out: list[list[tuple[str, int, float | None]]] = [[] for _ in prompts]
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
        for start in range(0, len(order), self.batch_size):
            chunk = order[start:start + self.batch_size]
            found = self._token_logprobs([rows[i] for i in chunk], [firsts[i] for i in chunk])
            for i, values in zip(chunk, found):
                out[i] = [(tok.decode([t]), int(span[0]), v)
                          for t, span, v in zip(rows[i], encoded[i].offset_mapping, values)]
        return out

    def _token_logprobs(self, rows: list[list[int]], firsts: list[int]) -> list[list[float | None]]:
        """log P(token | tokens before it) for each row's tokens from index ``firsts[row]`` on (None before)."""
        torch = self._torch
        prefix_len, cache = self._shared_prefix(rows)
        before: list[float | None] = []  # the prefix's own tokens after its first
        after = None  # the next-token log-probabilities right after the prefix
        if prefix_len:
            before = [None] * (prefix_len - 1)
            if min(firsts) < prefix_len:
                before = list(self._prefix_token_logprobs(tuple(rows[0][:prefix_len])))
            if min(firsts) <= prefix_len:
                with torch.inference_mode():
                    after = self._log_softmax(self._prefix_last_hidden)
        suffixes = [r[prefix_len:] for r in rows]
        skips = [max(0, f - prefix_len - 1) for f in firsts]
        with torch.inference_mode():
            hidden = self._hidden_after_prefix(suffixes, prefix_len, cache)
            found = self._next_token_logprobs(hidden, suffixes, skips)
        out: list[list[float | None]] = []
        for r, s in enumerate(suffixes):
            values: list[float | None] = [None]
            if prefix_len:
                values += before
                values.append(float(after[s[0]]) if after is not None and firsts[r] <= prefix_len else None)
            values += found[r]
            out.append([None if i < firsts[r] else v for i, v in enumerate(values)])
        return out

    def _next_token_logprobs(self, hidden: Any, suffixes: list[list[int]], skips: list[int],
                             chunk: int = 64) -> list[list[float | None]]:
        """log P(s[p + 1] | ..., s[p]) for every row from position ``skips[row]`` on (None before). A
        position's distribution depends only on the tokens up to it, so rows that start alike (one prompt's
        option texts) share those positions' projections onto the vocabulary, the costly part; positions are
        projected in chunks to bound memory."""
        node: dict[tuple[int, int], int] = {}  # (parent position, token) -> position id
        where: list[tuple[int, int]] = []  # position id -> (row, index) of its first occurrence
        wanted: dict[tuple[int, int], float] = {}  # (position id, next token) -> log-probability
        paths: list[list[tuple[int, int] | None]] = []
        for r, s in enumerate(suffixes):
            parent, path = -1, []
            for i, t in enumerate(s[:-1]):
                parent = node.setdefault((parent, t), len(where))
                if parent == len(where):
                    where.append((r, i))
                if i < skips[r]:
                    path.append(None)
                    continue
                path.append((parent, s[i + 1]))
                wanted[(parent, s[i + 1])] = 0.0
            paths.append(path)
        keys = sorted(wanted)
        positions = sorted({k for k, _ in keys})  # only the positions some wanted token needs
        for start in range(0, len(positions), chunk):
            ids = positions[start:start + chunk]
            logp = self._log_softmax(hidden[[where[k][0] for k in ids], [where[k][1] for k in ids]])
            row_of = {k: j for j, k in enumerate(ids)}
            here = [(k, t) for k, t in keys if k in row_of]
            values = logp[[row_of[k] for k, _ in here], [t for _, t in here]].tolist()
            wanted.update(zip(here, values))
        return [[None if key is None else wanted[key] for key in path] for path in paths]

    def _prefix_token_logprobs(self, prefix: tuple[int, ...]) -> list[float]:
        """The shared prefix's own token log-probabilities (after its first token), computed once per prefix."""
        if self._prefix_logprobs is None or self._prefix_logprobs[0] != prefix:
            torch = self._torch
            with torch.inference_mode():
                with self._precision():
                    hidden = self.model.get_decoder()(input_ids=torch.tensor([list(prefix)], device=self.device)
                                                      ).last_hidden_state[0]
                logp = self._log_softmax(hidden[:-1])
                own = logp[torch.arange(len(prefix) - 1), torch.tensor(prefix[1:])].tolist()
            self._prefix_logprobs = (prefix, own)
        return self._prefix_logprobs[1]

    def _shared_prefix(self, rows: list[list[int]]) -> tuple[int, Any]:
        """The token prefix all rows share (kept once, its key/value cache reused by later batches)."""
        shortest = min(len(r) for r in rows)
        common = 0
        first = rows[0]
        while common < shortest - 1 and all(r[common] == first[common] for r in rows):
            common += 1
        if self._prefix is not None:
            kept, cache, _ = self._prefix
            if len(kept) <= common and tuple(first[:len(kept)]) == kept:
                return len(kept), cache
            # what the kept prefix and these rows share is the part every prompt starts with (a template's
            # head): keep that, not this batch's longer one, so the next batch can use it again
            same = 0
            while same < min(len(kept), common) and kept[same] == first[same]:
                same += 1
            if same >= 8:
                common = same
        if common < 8:  # not worth a separate pass
            return 0, None
        ids = self._torch.tensor([first[:common]], device=self.device)
        with self._torch.inference_mode(), self._precision():
            out = self.model.get_decoder()(input_ids=ids, use_cache=True)
        cache = out.past_key_values
        self._prefix = (tuple(first[:common]), cache, out.last_hidden_state[0, -1])
        return common, cache

    @property
    def _prefix_last_hidden(self) -> Any:
        """The kept prefix's last final hidden state: the next-token distribution after it, one projection."""
        assert self._prefix is not None
        return self._prefix[2]

    def close(self) -> None:
        """Drop the model and the kept prefix cache to free their memory; no answers after this."""
        self.model = None
        self._prefix = None
        self._prefix_logprobs = None


class _DropMistralWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "fix_mistral_regex" not in record.getMessage()


@contextlib.contextmanager
def _quiet_mistral_check() -> Iterator[None]:
    """transformers 4.57.3-4.57.x warns of a Mistral tokenizer regex for every local folder it saved
    itself (its version check misfires); the warning is false for other models and only alarms users."""
    logger = logging.getLogger("transformers.tokenization_utils_base")
    quiet = _DropMistralWarning()
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)


def _maximal(heads: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """The heads that are no other head's prefix (each other head is read from one of them)."""
    out: list[tuple[int, ...]] = []
    for head in sorted(set(heads), key=len, reverse=True):
        if not any(h[:len(head)] == head for h in out):
            out.append(head)
    return out


def _as_list(value: Any) -> list[int]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [int(value)]
