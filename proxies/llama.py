"""A Llama-shaped decoder (RMSNorm, SwiGLU MLP, rotary positions, grouped-query attention), in μP or SP.

Read top to bottom like nanoGPT; the shape follows Llama (Touvron et al. 2023, arXiv 2302.13971, §2.2;
Llama 3, arXiv 2407.21783, Table 3): pre-norm RMSNorm, no biases, no learned positions, the readout
untied from the embedding (tied with `tie_embeddings`). The μP choices are the gpt's (`proxies.gpt`;
Tensor Programs V, Table 3 and §J):
- readout: `MuReadout`, logits = output_mult · W x / m (tied: the embedding read out the same way);
- attention logits: q·k · attn_mult / d_head under μP, q·k / √d_head under SP, attn_mult = √(base
  d_head), so the two agree at the base width. Rotary positions (RoPE; Su et al. 2021, arXiv
  2104.09864) rotate q and k pairwise: a rotation keeps their norms, so the 1/d_head law is unchanged;
- widths: the head dim is fixed (16) and the heads grow with width, or `n_head` fixes the heads and the
  head dim grows. Grouped-query attention (GQA; Ainslie et al. 2023, arXiv 2305.13245) shares each key
  and value head among `q_per_kv` query heads; `n_kv_head` says the same as a count when `n_head` is
  fixed. Keys and values then span width / q_per_kv coordinates, still a multiple of width, so their
  matrices are hidden matrices (two infinite dims), not readouts;
- the SwiGLU MLP (Shazeer 2020, arXiv 2002.05202) has hidden size `mlp_ratio` × width (3.5: Llama 3
  8B's 14336 / 4096), an exact width multiple so it is an infinite dim;
- hidden matrices N(0, 1/fan_in), embeddings N(0, 0.02²), RMSNorm gains 1; zero-init query (TP5 §D.2)
  and optional zero-init readout. Adam LRs (lr/m for hidden matrices) come from the optimizer's groups.
Depth transfer (`depth_alpha`, `base_depth`) is the gpt's: each branch × m_L^−α (CompleteP, arXiv 2505.01618).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from mup import MuReadout
from torch import nn

from proxies.base_shapes import mup_builder
from proxies.gpt import EMBEDDING_STD, AttentionLogits, TiedReadout, check_flags, check_positive, check_sizes
from proxies.parametrization import depth_multipliers

BASE_WIDTH = 64


def rotary_tables(block_size: int, head_dim: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of position · θ^(−2i/head_dim) for each position and pair i, as (block_size, head_dim). Computed
    on the CPU, then put on the default device: on the meta device torch would run them through reference kernels
    whose first call imports TorchDynamo (proxies/meta.py)."""
    freq = theta ** (-torch.arange(0, head_dim, 2, dtype=torch.float32, device="cpu") / head_dim)
    angle = torch.outer(torch.arange(block_size, dtype=torch.float32, device="cpu"), freq).repeat(1, 2)
    device = torch.get_default_device()
    return angle.cos().to(device), angle.sin().to(device)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """RoPE in the half-split layout: pairs (x_i, x_{i+d/2}) turned by their angle."""
    x1, x2 = x.chunk(2, dim=-1)
    return (x * cos + torch.cat((-x2, x1), dim=-1) * sin).to(x.dtype)


class GroupedQueryAttention(nn.Module):
    def __init__(self, width: int, n_head: int, n_kv_head: int, scale: float, block_size: int, theta: float):
        super().__init__()
        self.n_head, self.n_kv_head, self.head_dim, self.scale = n_head, n_kv_head, width // n_head, scale
        self.query = nn.Linear(width, width, bias=False)
        self.key = nn.Linear(width, n_kv_head * self.head_dim, bias=False)
        self.value = nn.Linear(width, n_kv_head * self.head_dim, bias=False)
        self.proj = nn.Linear(width, width, bias=False)
        self.logits = AttentionLogits()
        cos, sin = rotary_tables(block_size, self.head_dim, theta)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def heads(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """q as (B, n_head, T, head_dim), k and v as (B, n_kv_head, T, head_dim); q and k rotated."""
        B, T, _ = x.shape
        q = self.query(x).view(B, T, self.n_head, self.head_dim).transpose(1, 2)
        k, v = (lin(x).view(B, T, self.n_kv_head, self.head_dim).transpose(1, 2) for lin in (self.key, self.value))
        cos, sin = self.cos[:T], self.sin[:T]
        return rotate(q, cos, sin), rotate(k, cos, sin), v

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self.heads(x)
        if self.logits.watched:  # the explicit path, so a coordinate check sees the logits
            group = self.n_head // self.n_kv_head
            k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
            att = self.logits(q @ k.transpose(-2, -1) * self.scale)
            causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
            y = att.masked_fill(~causal, float("-inf")).softmax(dim=-1) @ v
        else:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=self.scale,
                                               enable_gqa=self.n_kv_head != self.n_head)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class SwiGLU(nn.Module):
    def __init__(self, width: int, hidden: int):
        super().__init__()
        self.gate = nn.Linear(width, hidden, bias=False)
        self.up = nn.Linear(width, hidden, bias=False)
        self.down = nn.Linear(hidden, width, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.silu(self.gate(x)) * self.up(x))


class Block(nn.Module):
    """Pre-norm residual block; each branch is scaled by `branch_mult` (m_L^−α, 1 without depth transfer)."""

    def __init__(self, width: int, attention: GroupedQueryAttention, hidden: int, branch_mult: float,
                 depth_lr_mult: float):
        super().__init__()
        self.attn_norm = nn.RMSNorm(width)
        self.attn = attention
        self.mlp_norm = nn.RMSNorm(width)
        self.mlp = SwiGLU(width, hidden)
        self.branch_mult, self.depth_lr_mult = branch_mult, depth_lr_mult  # read by proxies.parametrization

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.branch_mult * self.attn(self.attn_norm(x))
        return x + self.branch_mult * self.mlp(self.mlp_norm(x))


def head_counts(width: int, head_dim: int, n_head: int | None, n_kv_head: int | None,
                q_per_kv: int | None) -> tuple[int, int, int]:
    """(n_head, n_kv_head, base d_head) for this width; one-line ValueErrors name the option."""
    if n_head is None:  # head dim fixed, heads (query and key/value alike) grow with width
        if n_kv_head is not None:
            raise ValueError("model.options.n_kv_head: fixes the key/value heads, so it needs n_head fixed too; "
                             "with the head dim fixed, use q_per_kv (query heads per key/value head)")
        if width % head_dim:
            raise ValueError(f"model.width: {width} is not a multiple of the head dim {head_dim} (or fix n_head)")
        n_head, base_d_head = width // head_dim, head_dim
    else:  # heads fixed, head dim grows with width
        base_d_head = BASE_WIDTH // n_head
    if width % n_head or (width // n_head) % 2:
        raise ValueError(f"model.width: {width} does not split into {n_head} heads of an even head dim "
                         "(RoPE turns pairs)")
    if n_kv_head is not None:
        if q_per_kv is not None:
            raise ValueError("model.options.n_kv_head: give n_kv_head or q_per_kv, not both")
        if n_kv_head < 1 or n_head % n_kv_head:
            raise ValueError(f"model.options.n_kv_head: {n_kv_head} does not divide the {n_head} query heads")
        group = n_head // n_kv_head
    else:
        group = 1 if q_per_kv is None else q_per_kv
        if group < 1 or n_head % group:
            raise ValueError(f"model.options.q_per_kv: {q_per_kv} does not divide the {n_head} query heads "
                             f"at width {width}")
    return n_head, n_head // group, base_d_head


class Llama(nn.Module):
    def __init__(self, width: int, depth: int, parametrization: str, *, vocab_size: int = 256, block_size: int = 128,
                 head_dim: int = 16, n_head: int | None = None, n_kv_head: int | None = None,
                 q_per_kv: int | None = None, mlp_ratio: float = 3.5, rope_theta: float = 10000.0,
                 tie_embeddings: bool = False,
                 zero_query: bool = True, zero_readout: bool = False, attn_mult: float | None = None,
                 output_mult: float = 1.0, depth_alpha: float | None = None, base_depth: int | None = None):
        super().__init__()
        check_sizes(vocab_size=vocab_size, block_size=block_size, head_dim=head_dim, n_head=n_head, n_kv_head=n_kv_head,
                    q_per_kv=q_per_kv)
        check_positive(mlp_ratio=mlp_ratio, rope_theta=rope_theta, attn_mult=attn_mult, output_mult=output_mult)
        check_flags(tie_embeddings=tie_embeddings, zero_query=zero_query, zero_readout=zero_readout)
        branch_mult, depth_lr_mult = depth_multipliers(depth, depth_alpha, base_depth)
        n_head, n_kv_head, base_d_head = head_counts(width, head_dim, n_head, n_kv_head, q_per_kv)
        d_head = width // n_head
        if parametrization == "mup":
            scale = (attn_mult if attn_mult is not None else math.sqrt(base_d_head)) / d_head
        else:
            scale = (attn_mult if attn_mult is not None else 1.0) / math.sqrt(d_head)
        hidden = mlp_ratio * width
        if hidden != int(hidden):
            raise ValueError(f"model.options.mlp_ratio: {mlp_ratio} × width {width} is not a whole hidden size")
        self.block_size = block_size
        self.wte = nn.Embedding(vocab_size, width)
        self.blocks = nn.ModuleList(
            Block(width, GroupedQueryAttention(width, n_head, n_kv_head, scale, block_size, rope_theta), int(hidden),
                  branch_mult, depth_lr_mult) for _ in range(depth))
        self.norm = nn.RMSNorm(width)
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
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=EMBEDDING_STD)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        if idx.shape[1] > self.block_size:
            raise ValueError(f"sequence length {idx.shape[1]} exceeds block_size {self.block_size}")
        x = self.wte(idx)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.norm(x))


@mup_builder(base_width=BASE_WIDTH)
def llama(width: int, depth: int, parametrization: str = "mup", **options) -> Llama:
    """Llama builder: `llama(width, depth, parametrization, vocab_size=, block_size=, n_head=, q_per_kv=, ...)`."""
    return Llama(width, depth, parametrization, **options)
