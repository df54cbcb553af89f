"""sample-factory's encoder factory: the network a resolved run names (``networks/encoders.py`` finds it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import gymnasium as gym
    from sample_factory.model.encoder import Encoder


def make_encoder(cfg, obs_space: gym.spaces.Dict) -> Encoder:
    """sample-factory's encoder factory: picks the network the resolved run names, compiled where it trains
    when the run asks for it (``train.compile``)."""
    from llmexplore.agents.run_settings import RunSettings
    from llmexplore.networks.encoders import encoder_class

    run = RunSettings.from_cfg(cfg).run
    encoder = encoder_class(run.encoder)(cfg, obs_space, run.policy_keys)
    if run.train.compile == "learner":
        compile_where_it_trains(encoder)
    return encoder


def compile_where_it_trains(encoder: Encoder) -> Encoder:
    """Route the encoder's forward passes that build a graph for gradients (the learner's) through
    ``torch.compile`` and leave those without (acting, value bootstrapping) eager.

    Why split: on a CPU the compiled encoder ran the learner's large mini-batches 1.1-1.5x faster but a
    worker's inference requests (32 observations) 0.9x as fast, its guards costing more than the fusion
    saves (tests/perf/bench_compile.py). The compiled function is the same computation (outputs equal to
    float noise); parameters and state_dict keys are the encoder's own, so checkpoints do not change."""
    import warnings

    import torch

    # torch's note that its guards run slower on Python 3.13.0 says nothing a run's user can act on mid-run
    warnings.filterwarnings("ignore", message="Guards may run slower on Python 3.13.0")
    eager = encoder.forward
    compiled = torch.compile(eager, dynamic=False)

    def forward(obs):
        return compiled(obs) if torch.is_grad_enabled() else eager(obs)

    encoder.forward = forward  # an instance attribute: nn.Module.__call__ looks it up before the class's
    return encoder
