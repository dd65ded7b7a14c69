"""A tiny transformer-like model: embedding, a ModuleList of pre-norm blocks (attention + MLP),
final norm and head. Small enough that a training step takes milliseconds on a CPU."""

from __future__ import annotations

import torch
from torch import nn

VOCAB, DIM, HEADS, LAYERS, SEQ = 64, 16, 2, 3, 8


class Block(nn.Module):
    def __init__(self, dim: int = DIM, heads: int = HEADS) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, 4 * dim)
        self.down = nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, dim = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(dim, dim=-1)
        q, k, v = (t.view(batch, seq, self.heads, dim // self.heads).transpose(1, 2) for t in (q, k, v))
        attention = torch.softmax(q @ k.transpose(-2, -1) / (dim // self.heads) ** 0.5, dim=-1)
        mask = torch.triu(torch.ones(seq, seq, dtype=torch.bool, device=x.device), 1)
        attention = attention.masked_fill(mask, 0.0)
        x = x + self.proj((attention @ v).transpose(1, 2).reshape(batch, seq, dim))
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm2(x))))


class TinyTransformer(nn.Module):
    def __init__(self, layers: int = LAYERS) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.layers = nn.ModuleList(Block() for _ in range(layers))
        self.norm = nn.LayerNorm(DIM)
        self.head = nn.Linear(DIM, VOCAB)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x)
        logits = self.head(self.norm(x)).float()
        return torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, VOCAB), tokens[:, 1:].reshape(-1))


def batch(rank: int, micro_step: int, size: int = 2) -> torch.Tensor:
    """A deterministic batch of token ids for one rank and micro-step."""
    generator = torch.Generator().manual_seed(1000 * rank + micro_step)
    return torch.randint(0, VOCAB, (size, SEQ), generator=generator)
