"""Which language model a run talks to. The embedded oracle needs no server or weights."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class LMConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    backend: str = Field("oracle", description="oracle | openai | vllm")
    model: str | None = Field(None, description="model name the server serves, or a local weights path (vllm)")
    base_url: str | None = Field(None, description="OpenAI-compatible endpoint, e.g. http://host:8000/v1")
    api_key_env: str = Field("OPENAI_API_KEY", description="environment variable holding the API key, if any")
    cache: str | None = Field(None, description="SQLite cache file; default: one shared cache under the results dir")
    options: dict[str, Any] = Field(default_factory=dict, description="backend-specific options")
