"""A Mamba-2 (SSD) mixer: Dao & Gu 2024, arXiv:2405.21060; names as in mamba_ssm's Mamba2 and HF's Mamba2Config."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from effspec.front.keyspec import i
from effspec.front.mixers import Mixer, Term

if TYPE_CHECKING:
    from effspec.front.ir import Block

SOURCES = ("Megatron-LM num_floating_point_operations, megatron/training/training.py "
           "(NVIDIA/Megatron-LM at 001b00c2734d8f0fad096fe48a382fedf755d321)")


@dataclass(frozen=True)
class Mamba2:
    """A Mamba-2 (SSD) mixer's sizes: N state, H_m heads of P channels (d_in = H_m·P), G groups, K conv."""

    state_size: int
    heads: int
    head_dim: int
    groups: int = 1
    conv_kernel: int = 4
    chunk_size: int = 256

    @property
    def d_inner(self) -> int:
        return self.heads * self.head_dim


class Kind(Mixer):
    name = "mamba2"
    order = 1
    letter = "M"
    aliases = ("mamba",)
    linear = True
    symbol = "L_mamba"
    model = "Nemotron-H"
    keys = (
        i("state_size", "SSM state size per head (N; d_state, ssm_state_size)", positive=True, maximum=1e6),
        i("heads", "SSM heads (H_m; nheads, mamba_num_heads); default expand·d_model / head_dim", positive=True,
          maximum=1e6),
        i("head_dim", "per-head channels (P; headdim, mamba_head_dim); default 64", positive=True, maximum=1e6),
        i("expand", "inner width d_in = expand·d_model when `heads` is not written; default 2", positive=True,
          maximum=1000),
        i("groups", "groups sharing B and C (G; ngroups, n_groups); default 1", positive=True, maximum=1e6),
        i("conv_kernel", "depthwise causal convolution width (K; d_conv); default 4", positive=True, maximum=1e4),
        i("chunk_size", "chunk length of the chunked (SSD) scan; default 256; not in the count", positive=True,
          maximum=1e9),
    )
    required = ("state_size",)
    defaults = {"heads": "`expand · d_model / head_dim`", "head_dim": "64", "expand": "2", "groups": "1",
                "conv_kernel": "4", "chunk_size": "256"}
    page = f"""mamba2 {{ state_size  heads  head_dim  expand  groups  conv_kernel  chunk_size }}: a Mamba-2 (SSD) mixer

Dao & Gu 2024, "Transformers are SSMs", arXiv:2405.21060; sizes as in mamba_ssm's Mamba2 module.
d_in = heads x head_dim (heads default expand x d_model / head_dim; head_dim 64; expand 2), N = state_size,
G = groups (default 1), K = conv_kernel (default 4).

Per token, as multiply-adds (m FLOPs each), as {SOURCES} counts them (mamba_layer_flops):
  in_proj   m·d·(2·d_in + 2·G·N + heads)     z, x, B, C and dt
  scan      3.5·m·d_in·N                     Megatron's 7·d_in·N FLOPs for the SSD scan
  out_proj  m·d_in·d
Independent of the sequence length and of chunk_size (recorded, not counted); the depthwise
convolution, norms and gating are not counted.  Megatron takes d_in = 2·d_model; every published
Nemotron-H has heads x head_dim = 2·d_model (Nemotron Nano 2 does not: there Megatron's count differs).
Parameters: in_proj + conv1d K·(d_in + 2·G·N) + out_proj (A, D, dt bias and norms left out)."""

    def sizes(self, block: Block, d_model: int) -> Mamba2 | None:
        state = block.integer("state_size")
        if state is None:
            return None
        head_dim = block.integer("head_dim", 64)
        heads = block.integer("heads", block.integer("expand", 2) * d_model // head_dim)
        return Mamba2(state, heads, head_dim, block.integer("groups", 1), block.integer("conv_kernel", 4),
                      block.integer("chunk_size", 256))

    def macs(self, d: int, sizes: Mamba2) -> list[Term]:
        """Multiply-adds per token of one Mamba-2 layer, as Megatron-LM counts them.

        Megatron-LM ``num_floating_point_operations`` → ``mamba_layer_flops`` (megatron/training/training.py,
        NVIDIA/Megatron-LM at 001b00c2734d8f0fad096fe48a382fedf755d321): in_proj d → 2·d_in + 2·G·N + H_m
        (z, x, B, C, dt), out_proj d_in → d, and the SSD scan as 7·d_in·N FLOPs (3.5 multiply-adds),
        independent of the chunk size.  The depthwise convolution, the norms and the gating are not counted.
        Megatron takes d_in = 2·d (expand 2); here d_in = H_m·P, the same for every published Nemotron-H.
        """
        d_in, N, G, H = sizes.d_inner, sizes.state_size, sizes.groups, sizes.heads
        return [("mamba_in_proj", "m·d·(2·d_in + 2·G·N + H_m)", float(d * (2 * d_in + 2 * G * N + H))),
                ("mamba_scan", "3.5·m·d_in·N (7·d_in·N at m = 2)", 3.5 * d_in * N),
                ("mamba_out_proj", "m·d_in·d", float(d_in * d))]

    def params(self, d: int, sizes: Mamba2) -> float:
        """in_proj, the conv1d over x, B, C (K·(d_in + 2·G·N)) and out_proj; A, D, dt bias and norms left out."""
        conv = sizes.conv_kernel * (sizes.d_inner + 2 * sizes.groups * sizes.state_size)
        return sum(v for n, _, v in self.macs(d, sizes) if n != "mamba_scan") + conv
