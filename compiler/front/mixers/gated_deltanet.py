"""A Gated DeltaNet mixer: Yang et al. 2024, arXiv:2412.06464; names as in Qwen3-Next's config (linear_*)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from effspec.front.keyspec import i
from effspec.front.mixers import Mixer, Term
from effspec.front.mixers.mamba2 import SOURCES

if TYPE_CHECKING:
    from effspec.front.ir import Block


@dataclass(frozen=True)
class GatedDeltaNet:
    """A Gated DeltaNet mixer's sizes: H_k query/key heads of D_k, H_v value heads of D_v, K conv."""

    key_heads: int
    value_heads: int
    key_head_dim: int
    value_head_dim: int
    conv_kernel: int = 4
    chunk_size: int = 64


class Kind(Mixer):
    name = "gated_deltanet"
    order = 2
    shown = "G"  # no hybrid_override_pattern letter; G in a displayed stack
    linear = True
    symbol = "L_gdn"
    model = "Qwen3-Next"
    keys = (
        i("key_heads", "query/key heads (H_k; linear_num_key_heads)", positive=True, maximum=1e6),
        i("value_heads", "value heads (H_v; linear_num_value_heads)", positive=True, maximum=1e6),
        i("key_head_dim", "per-head query/key size (D_k; linear_key_head_dim)", positive=True, maximum=1e6),
        i("value_head_dim", "per-head value size (D_v; linear_value_head_dim)", positive=True, maximum=1e6),
        i("conv_kernel", "depthwise causal convolution width (K; linear_conv_kernel_dim); default 4", positive=True,
          maximum=1e4),
        i("chunk_size", "chunk length of the chunked delta rule; default 64; not in the count", positive=True,
          maximum=1e9),
    )
    required = ("key_heads", "value_heads", "key_head_dim", "value_head_dim")
    defaults = {"conv_kernel": "4", "chunk_size": "64"}
    page = f"""gated_deltanet {{ key_heads  value_heads  key_head_dim  value_head_dim  conv_kernel  chunk_size }}

Gated DeltaNet (Yang, Kautz & Hatamizadeh 2024, arXiv:2412.06464), the linear attention of Qwen3-Next
(flash-linear-attention's chunked gated delta rule).  H_k, D_k = key heads and size; H_v, D_v = value heads
and size; K = conv_kernel (default 4).

Per token, as multiply-adds, as {SOURCES} counts them (gated_delta_net, gdn_layer_flops):
  in_proj     m·d·(2·H_k·D_k + 2·H_v·D_v + 2·H_v)    q, k, v, the output gate z, and beta, alpha
  conv        m·K·(2·H_k·D_k + H_v·D_v)              the causal conv over q, k, v
  delta rule  4·m·H_v·D_k·D_v                        KK^T, VK^T, S(a(I - bKK^T)) and SQ (Megatron writes D_v²)
  out_proj    m·H_v·D_v·d
The recurrent form's count: independent of the sequence length and of chunk_size (recorded, not counted).
Parameters: in_proj + conv1d + out_proj."""

    def sizes(self, block: Block, d_model: int) -> GatedDeltaNet | None:
        sizes = [block.integer(k) for k in ("key_heads", "value_heads", "key_head_dim", "value_head_dim")]
        if any(x is None for x in sizes):
            return None
        kh, vh, kd, vd = (int(x) for x in sizes if x is not None)
        return GatedDeltaNet(kh, vh, kd, vd, block.integer("conv_kernel", 4), block.integer("chunk_size", 64))

    def macs(self, d: int, sizes: GatedDeltaNet) -> list[Term]:
        """Multiply-adds per token of one Gated DeltaNet layer, as Megatron-LM counts them.

        Megatron-LM ``num_floating_point_operations`` (gated_delta_net branch and ``gdn_layer_flops``,
        megatron/training/training.py at 001b00c2734d8f0fad096fe48a382fedf755d321): in_proj d → 2·H_k·D_k +
        2·H_v·D_v + 2·H_v (q, k, v, the output gate z, and β, α), the causal conv over q, k, v
        (K·(2·H_k·D_k + H_v·D_v)), the delta rule as 4 state-sized products per value head (KKᵀ, VKᵀ,
        S(α(I − βKKᵀ)), SQ: 4·H_v·D_k·D_v; Megatron writes D_v², the same where D_k = D_v, as in Qwen3-Next),
        and out_proj H_v·D_v → d.  Per token and independent of s and of the chunk size: the recurrent form's count.
        """
        kd, vd = sizes.key_heads * sizes.key_head_dim, sizes.value_heads * sizes.value_head_dim
        return [("gdn_in_proj", "m·d·(2·H_k·D_k + 2·H_v·D_v + 2·H_v)", float(d * (2 * kd + 2 * vd + 2 * sizes.value_heads))),
                ("gdn_conv", "m·K·(2·H_k·D_k + H_v·D_v)", float(sizes.conv_kernel * (2 * kd + vd))),
                ("gdn_delta_rule", "4·m·H_v·D_k·D_v", float(4 * sizes.value_heads * sizes.key_head_dim * sizes.value_head_dim)),
                ("gdn_out_proj", "m·H_v·D_v·d", float(vd * d))]

    def params(self, d: int, sizes: GatedDeltaNet) -> float:
        """in_proj, the conv1d over q, k, v and out_proj (the conv's weights are its multiply-adds per token)."""
        return sum(v for n, _, v in self.macs(d, sizes) if n != "gdn_delta_rule")
