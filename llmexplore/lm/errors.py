"""Errors of the LM subsystem. All are ``UserError``s: the CLI prints them and exits 2."""

from __future__ import annotations

from llmexplore.errors import ConfigError, UserError


class LMUnavailableError(UserError):
    """The LM server cannot be reached or keeps failing after every retry.

    Long-lived callers (the annotation service) catch it and try again later.
    """


class ModelNotFoundError(ConfigError):
    """The server does not serve the requested model."""


class LMRequestError(UserError):
    """The server rejected a request as invalid (e.g. the prompt is too long); retrying cannot help."""


class TemplateError(ConfigError):
    """A prompt template file is missing or malformed."""


class OracleError(ConfigError):
    """The oracle recognised a question kind that has no answer function registered."""
