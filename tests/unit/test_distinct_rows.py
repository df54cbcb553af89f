"""once_per_distinct_row: the published NetHack network's message model computed once per distinct message
gives the plain computation's outputs and gradients."""

from __future__ import annotations

import torch

from llmexplore.envs.nethack.nle_baseline import MessageCNN
from llmexplore.networks.distinct_rows import once_per_distinct_row


def _messages(texts: list[bytes]) -> torch.Tensor:
    rows = torch.zeros(len(texts), 256, dtype=torch.uint8)
    for i, text in enumerate(texts):
        rows[i, :len(text)] = torch.tensor(list(text), dtype=torch.uint8)
    return rows


def test_each_distinct_row_is_computed_once_and_every_row_gets_its_own_output():
    rows = torch.tensor([[3, 1], [0, 0], [3, 1], [2, 5], [0, 0], [0, 0]])
    seen = []

    def row_sums(batch: torch.Tensor) -> torch.Tensor:
        seen.append(batch.shape[0])
        return batch.sum(dim=1, keepdim=True) * 10

    out = once_per_distinct_row(row_sums, rows)
    assert seen == [3]
    assert out.squeeze(1).tolist() == [40, 0, 40, 70, 0, 0]


def test_a_batch_without_repeats_is_passed_through_whole():
    seen = []
    rows = torch.arange(12).reshape(4, 3)
    out = once_per_distinct_row(lambda b: seen.append(b) or b * 2, rows)
    assert len(seen) == 1 and seen[0] is rows and torch.equal(out, rows * 2)


def test_the_message_model_gives_the_plain_outputs_and_gradients_on_repeated_messages():
    torch.manual_seed(0)
    texts = [b"", b"You see here a dagger.", b"", b"It's a wall.", b"You see here a dagger.", b"", b"Hello!"] * 5
    messages = _messages(texts)
    model = MessageCNN()
    weights = torch.randn(len(texts), model.out_size)

    distinct_out = model(messages)
    (distinct_out * weights).sum().backward()
    distinct_grads = {name: p.grad.clone() for name, p in model.named_parameters()}
    model.zero_grad()

    plain_out = model._features(messages)  # every row through the network, as before
    (plain_out * weights).sum().backward()
    assert torch.allclose(distinct_out, plain_out, atol=1e-6)
    for name, p in model.named_parameters():
        assert torch.allclose(distinct_grads[name], p.grad, rtol=1e-4, atol=1e-6), name
    # rows with the same message have the same features, and different messages differ
    assert torch.equal(distinct_out[0], distinct_out[2]) and not torch.equal(distinct_out[0], distinct_out[1])
