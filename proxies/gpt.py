"""A decoder-only GPT (pre-norm, causal SDPA attention, GELU MLP ×4), in μP or SP.

Read top to bottom like nanoGPT. The μP choices (Tensor Programs V, Table 3 and §J; microsoft/mup):
- readout: `MuReadout`, logits = output_mult · W x / m, with m = width / base width; with tied
  embeddings `TiedReadout` (the embedding matrix read out the same way);
- attention logits: q·k · attn_mult / d_head under μP, q·k / √d_head under SP. attn_mult defaults
  to √(d_head at the base width), so at the base width the two are the same network. With the
  default fixed head dim (heads grow with width) the two coincide at every width; with `n_head`
  fixed, d_head grows and the 1/d_head law is what keeps logits Θ(1);
- hidden matrices: N(0, 1/fan_in) under both; their μP Adam LR (lr/m) is set by the optimizer's
  parameter groups, not here;
- embeddings: N(0, 0.02²), constant in width; biases zero;
- options: zero-init query (recommended by TP5 §D.2) and zero-init readout;
- `qk_norm`: LayerNorm on each head's queries and keys before the dot product (Wortsman et al. 2023,
  "Small-scale proxies for large-scale Transformer training instabilities", §3.1.1; Dehghani et al. 2023),
  which stops attention-logit growth at high learning rates. Its gains are norm gains (Adam LR lr, over
  d_head coordinates); the logits keep the μP 1/d_head scale. With it, a zero-initialised query is moot:
  the norm brings q to unit size after the first update.

Depth transfer, off unless `depth_alpha` is given (CompleteP: Dey et al. 2025, arXiv 2505.01618, Table 1;
α = 0.5 is Depth-μP, Yang et al. 2023, "Tensor Programs VI"): with m_L = depth / base_depth, every block is
x ← x + m_L^−α · attn(ln_1(x)), then x ← x + m_L^−α · mlp(ln_2(x)), α ∈ [0.5, 1] (1 is CompleteP). The blocks'
Adam LR × m_L^(α−1) and AdamW ε × m_L^−α are set by the optimizer's groups (`proxies.parametrization`), from the
blocks' `branch_mult` and `depth_lr_mult`; init does not change with depth. `base_depth`, the proxy's depth, is
required with it. It applies under SP as under μP: it is a depth rule, independent of the width rules.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from mup import MuReadout, MuSharedReadout
from torch import nn

from proxies.base_shapes import mup_builder
from proxies.parametrization import depth_multipliers

BASE_WIDTH = 64
EMBEDDING_STD = 0.02


class AttentionLogits(nn.Module):
    """The attention logits q·kᵀ·scale as a module output, so a coordinate check can watch them.

    The fast path (SDPA) never forms the logits; attention takes the explicit path only while a
    forward hook is registered here.
    """

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        return logits

    @property
    def watched(self) -> bool:
        return bool(self._forward_hooks)


class CausalSelfAttention(nn.Module):
    def __init__(self, width: int, n_head: int, scale: float, bias: bool, qk_norm: bool = False):
        super().__init__()
        self.n_head, self.head_dim, self.scale = n_head, width // n_head, scale
        self.query = nn.Linear(width, width, bias=bias)
        self.key = nn.Linear(width, width, bias=bias)
        self.value = nn.Linear(width, width, bias=bias)
        self.proj = nn.Linear(width, width, bias=bias)
        self.logits = AttentionLogits()
        self.q_norm = nn.LayerNorm(self.head_dim, bias=bias) if qk_norm else None
        self.k_norm = nn.LayerNorm(self.head_dim, bias=bias) if qk_norm else None

    def heads(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """q, k, v as (B, n_head, T, head_dim); q and k layer-normed per head with qk_norm."""
        B, T, C = x.shape
        q, k, v = (lin(x).view(B, T, self.n_head, self.head_dim).transpose(1, 2)
                   for lin in (self.query, self.key, self.value))
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        return q, k, v

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self.heads(x)
        if self.logits.watched:
            att = self.logits(q @ k.transpose(-2, -1) * self.scale)
            causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
            y = att.masked_fill(~causal, float("-inf")).softmax(dim=-1) @ v
        else:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=self.scale)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class MLP(nn.Module):
    def __init__(self, width: int, bias: bool):
        super().__init__()
        self.fc = nn.Linear(width, 4 * width, bias=bias)
        self.proj = nn.Linear(4 * width, width, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(F.gelu(self.fc(x)))


class Block(nn.Module):
    """Pre-norm residual block; each branch is scaled by `branch_mult` (m_L^−α, 1 without depth transfer)."""

    def __init__(self, width: int, n_head: int, scale: float, norm: str, bias: bool, qk_norm: bool = False,
                 branch_mult: float = 1.0, depth_lr_mult: float = 1.0):
        super().__init__()
        self.ln_1 = make_norm(norm, width, bias)
        self.attn = CausalSelfAttention(width, n_head, scale, bias, qk_norm)
        self.ln_2 = make_norm(norm, width, bias)
        self.mlp = MLP(width, bias)
        self.branch_mult, self.depth_lr_mult = branch_mult, depth_lr_mult  # read by proxies.parametrization

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.branch_mult * self.attn(self.ln_1(x))
        return x + self.branch_mult * self.mlp(self.ln_2(x))


class TiedReadout(MuSharedReadout):
    """`MuSharedReadout` that leaves the shared embedding's init alone.

    mup's readout rescales its weight by √m once, which suits a readout initialised like a
    hidden layer; a tied weight is an input embedding, whose init is constant in width under μP.
    """

    def _rescale_parameters(self) -> None:
        self._has_rescaled_params = True


def make_norm(norm: str, width: int, bias: bool) -> nn.Module:
    if norm == "layernorm":
        return nn.LayerNorm(width, bias=bias)
    if norm == "rmsnorm":
        return nn.RMSNorm(width)
    raise ValueError(f"model.options.norm: {norm!r} is not one of layernorm, rmsnorm")


def check_sizes(**sizes) -> None:
    """Each size option (None: derived) is a positive integer, else a ValueError naming it."""
    for name, value in sizes.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ValueError(f"model.options.{name}: {value!r} is not a positive integer")


def check_positive(**numbers) -> None:
    """Each number option (None: derived) is a finite number above 0, else a ValueError naming it."""
    for name, value in numbers.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                  or not math.isfinite(value) or value <= 0):
            raise ValueError(f"model.options.{name}: {value!r} is not a finite number above 0")


def check_flags(**flags) -> None:
    """Each switch option is true or false, else a ValueError naming it."""
    for name, value in flags.items():
        if not isinstance(value, bool):
            raise ValueError(f"model.options.{name}: {value!r} is not true or false")


class GPT(nn.Module):
    def __init__(self, width: int, depth: int, parametrization: str, *, vocab_size: int = 256, block_size: int = 128,
                 head_dim: int = 16, n_head: int | None = None, norm: str = "layernorm", bias: bool = True,
                 tie_embeddings: bool = False, zero_query: bool = True, zero_readout: bool = False,
                 attn_mult: float | None = None, output_mult: float = 1.0, qk_norm: bool = False,
                 depth_alpha: float | None = None, base_depth: int | None = None):
        super().__init__()
        check_sizes(vocab_size=vocab_size, block_size=block_size, head_dim=head_dim, n_head=n_head)
        check_positive(attn_mult=attn_mult, output_mult=output_mult)
        check_flags(bias=bias, tie_embeddings=tie_embeddings, zero_query=zero_query, zero_readout=zero_readout,
                    qk_norm=qk_norm)
        branch_mult, depth_lr_mult = depth_multipliers(depth, depth_alpha, base_depth)
        if n_head is None:  # head dim fixed, heads grow with width
            if width % head_dim:
                raise ValueError(f"model.width: {width} is not a multiple of the head dim {head_dim} (or fix n_head)")
            n_head, base_d_head = width // head_dim, head_dim
        else:  # heads fixed, head dim grows with width
            base_d_head = BASE_WIDTH // n_head
        if width % n_head:
            raise ValueError(f"model.width: {width} does not split into {n_head} heads")
        d_head = width // n_head
        if parametrization == "mup":
            scale = (attn_mult if attn_mult is not None else math.sqrt(base_d_head)) / d_head
        else:
            scale = (attn_mult if attn_mult is not None else 1.0) / math.sqrt(d_head)
        self.block_size = block_size
        self.wte = nn.Embedding(vocab_size, width)
        self.wpe = nn.Embedding(block_size, width)
        self.blocks = nn.ModuleList(Block(width, n_head, scale, norm, bias, qk_norm, branch_mult, depth_lr_mult)
                                    for _ in range(depth))
        self.ln_f = make_norm(norm, width, bias)
        if tie_embeddings:
            self.lm_head = TiedReadout(self.wte.weight, bias=False, output_mult=output_mult)
        else:
            self.lm_head = MuReadout(width, vocab_size, bias=False, readout_zero_init=zero_readout,
                                     output_mult=output_mult)
        self.apply(self._init_weights)
        if zero_query:
            for block in self.blocks:
                nn.init.zeros_(block.attn.query.weight)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, MuReadout):
            return  # MuReadout owns its init (zero or fan-in uniform, rescaled by mup)
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=module.in_features ** -0.5)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=EMBEDDING_STD)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        T = idx.shape[1]
        if T > self.block_size:
            raise ValueError(f"sequence length {T} exceeds block_size {self.block_size}")
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


@mup_builder(base_width=BASE_WIDTH)
def gpt(width: int, depth: int, parametrization: str = "mup", **options) -> GPT:
    """GPT builder: `gpt(width, depth, parametrization, vocab_size=, block_size=, ...)`."""
    return GPT(width, depth, parametrization, **options)
