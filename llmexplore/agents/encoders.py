"""Policy encoders registered with sample-factory; each environment family names its own
(``EnvFamily.networks``, by ``module:Class``), and run settings carry the network's name.

All are sized for throughput on a CPU (the suite's default machine): NetHack's reaches
over 2,000 env steps/s in training on two cores with a 256-unit GRU core.

* NetHack: the message as a bag of hashed byte trigrams (cheap, order-aware locally),
  the 9x9 map crop around the agent through a character embedding and one convolution,
  and the bottom-line stats through a signed log transform.
* Crafter: the 64x64 image through a three-layer DQN-style CNN, and the inventory.
  ``network=published`` is the scoreboard PPO's network instead (``CrafterPublishedEncoder``).
* Housekeep: category embeddings of the house's rooms, the room's receptacles and the
  visible objects, one-hot slots (where the agent is, what each object lies on, what it
  carries), all through a two-layer MLP. Slots line up with the slot actions, so a flat
  MLP can tie "object j lies on receptacle k" to "go to receptacle k" and "pick object j".

Keys a method adds for the policy to condition on (a goal embedding, a skill one-hot)
are flattened into one more small MLP branch.
"""

from __future__ import annotations

from typing import Sequence

import gymnasium as gym
import torch
from sample_factory.model.encoder import Encoder
from torch import nn

from llmexplore.envs.base import ENV_UID_KEY

TRIGRAM_BUCKETS = 4096


def _flat_size(space: gym.spaces.Space) -> int:
    return int(torch.tensor(space.shape).prod()) if space.shape else 1


class ConditioningBranch(nn.Module):
    """Flattens the extra keys a method wants the policy to see."""

    def __init__(self, obs_space: gym.spaces.Dict, keys: Sequence[str], out: int = 64):
        super().__init__()
        self.keys = [k for k in keys if k in obs_space.spaces]
        size = sum(_flat_size(obs_space.spaces[k]) for k in self.keys)
        self.net = nn.Sequential(nn.Linear(size, out), nn.ELU()) if size else None
        self.out_size = out if size else 0

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor | None:
        if self.net is None:
            return None
        x = torch.cat([obs[k].reshape(obs[k].shape[0], -1).float() for k in self.keys], dim=1)
        return self.net(x)

    def joined(self, parts: list[torch.Tensor], obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """An encoder's features with this branch's output after them, when the method adds keys."""
        extra = self(obs)
        return torch.cat(parts if extra is None else [*parts, extra], dim=1)


class NetHackEncoder(Encoder):
    """message [B, 256] bytes, crop [B, 9, 9] characters, blstats [B, 27] -> features [B, 320 (+64 with
    method keys)]: 128 from the message's trigrams, 128 from the crop, 64 from the stats."""

    def __init__(self, cfg, obs_space: gym.spaces.Dict, policy_keys: Sequence[str] = ()):
        super().__init__(cfg)
        crop = obs_space["crop"].shape
        self.message_bag = nn.EmbeddingBag(TRIGRAM_BUCKETS, 128, mode="sum")
        self.message_head = nn.Sequential(nn.ELU(), nn.Linear(128, 128), nn.ELU())
        self.char_embedding = nn.Embedding(256, 16)
        self.crop_net = nn.Sequential(
            nn.Conv2d(16, 16, 3), nn.ELU(), nn.Flatten(),
            nn.Linear(16 * (crop[0] - 2) * (crop[1] - 2), 128), nn.ELU(),
        )
        self.blstats_net = nn.Sequential(nn.Linear(obs_space["blstats"].shape[0], 64), nn.ELU())
        self.conditioning = ConditioningBranch(obs_space, policy_keys)
        self.out_size = 128 + 128 + 64 + self.conditioning.out_size

    def _message(self, message: torch.Tensor) -> torch.Tensor:
        m = message.long()
        ids = (m[:, :-2] * 65599 + m[:, 1:-1] * 257 + m[:, 2:]) % TRIGRAM_BUCKETS
        weights = (m[:, 2:] > 0).float()  # zero padding contributes nothing
        return self.message_head(self.message_bag(ids, per_sample_weights=weights))

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        crop = self.char_embedding(obs["crop"].long()).permute(0, 3, 1, 2)
        blstats = obs["blstats"].float()
        blstats = torch.sign(blstats) * torch.log1p(blstats.abs())
        parts = [self._message(obs["message"]), self.crop_net(crop), self.blstats_net(blstats)]
        return self.conditioning.joined(parts, obs)

    def get_out_size(self) -> int:
        return self.out_size


def dqn_stem(channels: int, activation: type[nn.Module]) -> nn.Sequential:
    """The DQN paper's convolutions (8x8/4, 4x4/2, 3x3/1; 32, 64, 64 channels), flattened."""
    return nn.Sequential(
        nn.Conv2d(channels, 32, 8, stride=4), activation(),
        nn.Conv2d(32, 64, 4, stride=2), activation(),
        nn.Conv2d(64, 64, 3, stride=1), activation(),
        nn.Flatten(),
    )


class CrafterEncoder(Encoder):
    """image [B, 64, 64, 3] bytes, inventory [B, 16] counts -> features [B, 320 (+64 with method keys)]:
    256 from the DQN stem over the image, 64 from the inventory."""

    def __init__(self, cfg, obs_space: gym.spaces.Dict, policy_keys: Sequence[str] = ()):
        super().__init__(cfg)
        h, w, c = obs_space["image"].shape
        # the DQN-style stride-4 stem: 5-6x cheaper on a CPU than stride-2 stems of similar depth
        self.cnn = dqn_stem(c, nn.ELU)
        with torch.no_grad():
            cnn_out = self.cnn(torch.zeros(1, c, h, w)).shape[1]
        self.image_head = nn.Sequential(nn.Linear(cnn_out, 256), nn.ELU())
        self.inventory_net = nn.Sequential(nn.Linear(obs_space["inventory"].shape[0], 64), nn.ELU())
        self.conditioning = ConditioningBranch(obs_space, policy_keys)
        self.out_size = 256 + 64 + self.conditioning.out_size

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        image = obs["image"].float().permute(0, 3, 1, 2) / 255.0
        parts = [self.image_head(self.cnn(image)), self.inventory_net(obs["inventory"].float() / 9.0)]
        return self.conditioning.joined(parts, obs)

    def get_out_size(self) -> int:
        return self.out_size


class CrafterPublishedEncoder(Encoder):
    """The network of Crafter's scoreboard PPO: stable-baselines3's ``CnnPolicy`` feature extractor
    (the DQN paper's CNN) on the image alone, scaled to [0, 1]; sample-factory adds the linear policy
    and value heads. Run without a recurrent core (``use_rnn=False``), it has SB3's parameter count.
    The inventory counts are not read (the published agent saw them only as drawn in the image)."""

    FEATURES = 512

    def __init__(self, cfg, obs_space: gym.spaces.Dict, policy_keys: Sequence[str] = ()):
        super().__init__(cfg)
        h, w, c = obs_space["image"].shape
        self.cnn = dqn_stem(c, nn.ReLU)
        with torch.no_grad():
            cnn_out = self.cnn(torch.zeros(1, c, h, w)).shape[1]  # 1,024 for 64x64 images
        self.linear = nn.Sequential(nn.Linear(cnn_out, self.FEATURES), nn.ReLU())
        self.conditioning = ConditioningBranch(obs_space, policy_keys)
        self.out_size = self.FEATURES + self.conditioning.out_size

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        image = obs["image"].float().permute(0, 3, 1, 2) / 255.0
        return self.conditioning.joined([self.linear(self.cnn(image))], obs)

    def get_out_size(self) -> int:
        return self.out_size


class HousekeepEncoder(Encoder):
    """Housekeep's symbolic view (room, receptacle and object ids, one-hot slots), each [B, slots] ->
    features [B, 256 (+64 with method keys)]."""

    EMBED = 16

    def __init__(self, cfg, obs_space: gym.spaces.Dict, policy_keys: Sequence[str] = ()):
        super().__init__(cfg)

        def table(key: str) -> nn.Embedding:
            return nn.Embedding(int(obs_space[key].high.max()) + 1, self.EMBED, padding_idx=0)

        self.room_types = table("rooms")
        self.receptacle_types = table("receptacles")
        self.object_types = table("objects")
        self.slots = {k: int(obs_space[k].high.max()) + 1 for k in ("room", "at", "object_on", "held")}
        size = self.EMBED * sum(obs_space[k].shape[0] for k in ("rooms", "receptacles", "objects"))
        size += sum(self.slots[k] * obs_space[k].shape[0] for k in self.slots)
        self.net = nn.Sequential(nn.Linear(size, 256), nn.ELU(), nn.Linear(256, 256), nn.ELU())
        self.conditioning = ConditioningBranch(obs_space, policy_keys)
        self.out_size = 256 + self.conditioning.out_size

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        n = obs["rooms"].shape[0]
        parts = [
            self.room_types(obs["rooms"].long()).reshape(n, -1),
            self.receptacle_types(obs["receptacles"].long()).reshape(n, -1),
            self.object_types(obs["objects"].long()).reshape(n, -1),
        ]
        for key, size in self.slots.items():
            parts.append(nn.functional.one_hot(obs[key].long().clamp(0, size - 1), size).reshape(n, -1).float())
        out = [self.net(torch.cat(parts, dim=1))]
        return self.conditioning.joined(out, obs)

    def get_out_size(self) -> int:
        return self.out_size


class GenericEncoder(Encoder):
    """For adapters without a dedicated network: an MLP over every flattened key."""

    def __init__(self, cfg, obs_space: gym.spaces.Dict, policy_keys: Sequence[str] = ()):
        super().__init__(cfg)
        self.keys = [k for k in obs_space.spaces if k != ENV_UID_KEY]
        size = sum(_flat_size(obs_space.spaces[k]) for k in self.keys)
        self.net = nn.Sequential(nn.Linear(size, 256), nn.ELU(), nn.Linear(256, 256), nn.ELU())

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.net(torch.cat([obs[k].reshape(obs[k].shape[0], -1).float() for k in self.keys], dim=1))

    def get_out_size(self) -> int:
        return 256


#: the encoder of run settings that name no family's network
GENERIC = "generic"


def encoder_class(name: str) -> type[Encoder]:
    """The encoder class of a network name (``EnvFamily.networks``), imported when first asked for."""
    from llmexplore.envs.family import import_path
    from llmexplore.envs.registry import find_network

    if name == GENERIC:
        return GenericEncoder
    network = find_network(name)
    if network is None:
        from llmexplore.errors import ConfigError

        raise ConfigError(f"no environment family offers the network '{name}'",
                          hint="register the family that names it (llmexplore.envs.register_family)")
    return import_path(network.encoder)


def encoder_obs_keys(name: str) -> tuple[str, ...]:
    """Observation keys an encoder reads beyond its adapter's defaults (asked from the adapter)."""
    return tuple(getattr(encoder_class(name), "extra_obs_keys", ()))


def make_encoder(cfg, obs_space: gym.spaces.Dict) -> Encoder:
    """sample-factory's encoder factory: picks the network the resolved run names."""
    from llmexplore.agents.run_settings import RunSettings

    run = RunSettings.from_cfg(cfg).run
    return encoder_class(run.encoder)(cfg, obs_space, run.policy_keys)
