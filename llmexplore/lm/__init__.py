"""Language models: backends, prompt templates, strict parsing, a persistent cache, an HTTP server.

Entry points other parts use:
- ``make_lm(config)``: the configured backend behind the shared SQLite cache.
- ``check_lm(config)``: fail early when the configured server is down or lacks the model.
- ``make_question(kind, ...)`` (a kind a method registered; each method defines its questions in its own
  folder) and ``ask(lm, question, items, params)``.
- ``AnnotationService``: asynchronous labels for online methods (ONI).
- ``register_oracle_kind(kind, answer)``: teach the embedded oracle a question kind.

The resumable annotation of Motif pair datasets uses these parts and lives with Motif
(``llmexplore.methods.motif.annotate``): the LM layer knows no method.
"""

__all__ = ["LMConfig", "SamplingParams", "make_lm", "check_lm", "ask", "make_question", "AnnotationService",
           "register_oracle_kind"]


def __getattr__(name: str):  # keep `import llmexplore.lm` light: load the parts on first use
    if name in ("LMConfig", "SamplingParams"):  # pydantic models: not needed to list CLI commands
        from llmexplore.lm import config

        return getattr(config, name)
    if name == "make_lm":
        from llmexplore.lm.backends import make_lm

        return make_lm
    if name == "check_lm":
        from llmexplore.lm.check import check_lm

        return check_lm
    if name in ("ask", "make_question"):
        from llmexplore.lm import questions

        return getattr(questions, name)
    if name == "AnnotationService":
        from llmexplore.lm.service import AnnotationService

        return AnnotationService
    if name == "register_oracle_kind":
        from llmexplore.lm.oracle import register_oracle_kind

        return register_oracle_kind
    raise AttributeError(name)
