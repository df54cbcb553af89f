"""ELLM's options, apart from the method so that its actor-side factory (``factory.py``) reads them without
importing the method back."""

from __future__ import annotations

from pydantic import Field

from llmexplore.methods.base import MethodOptions


class ELLMOptions(MethodOptions):
    threshold: float = Field(0.99, ge=-1.0, le=1.0,
                             description="Crafter: cosine similarity above which a suggested goal counts as achieved")
    model_path: str | None = Field(None, description="sentence-transformers folder; default: the bundled all-MiniLM-L6-v2")
    novelty: bool = Field(True, description="reward each goal once per episode and stop suggesting achieved goals")
    goal_conditioning: bool = Field(True, description="give the policy the embedding of the current suggestions")
    prompt_version: str = Field("default", description="version of the question's prompt template")
    health_coef: float = Field(
        0.0, description="Crafter: reward per point of health gained (lost: negative) on every step, added to the "
                         "goal reward. ELLM's code adds such a term but sets it to 0 before use (0, the default); "
                         "0.1 is the term as written there (Crafter's own health reward)")
    suggested_reward: float = Field(2.5, description="Housekeep: reward of a suggested pick or place")
    unsuggested_reward: float = Field(-0.25, description="Housekeep: reward of a pick or place not suggested")
    failed_reward: float = Field(-0.2, description="Housekeep: reward of a pick or place that fails")
    oracle_noise: float = Field(0.0, ge=0.0, le=1.0,
                                description="Housekeep, oracle backend: share of placement answers flipped")
    oracle_noise_seed: int = Field(0, ge=0, description="which answers the noise flips (fixed per LM, not per run)")
