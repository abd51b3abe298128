"""Attention layers for every positional scheme routelab trains, as PyTorch modules (lib/nn/attention.cpp,
scheme.cpp, householder.cpp, forget_gate.cpp are the reference; tests/python/test_torch_parity.py holds the
two to 1e-5 in bits per byte).

A module takes the layer's input h (batch, time, d_model), what the projections read (routelab: ln1 of the
residual), and returns (batch, time, d_model). The projections wq, wk, wv, wo are nn.Linear; a scheme adds
its angle module (`angles`: ANGLES) and its transport steps (`steps`: STEPS), which own their parameters and
their export names. A scheme is one SCHEMES entry: a new one names its angle kind and step function, and a new
angle law or step function is one class registered in ANGLES or STEPS.

Every tensor is made on h's device, random angles included (Philox in torch ops, routelab's streams). In
training mode each forward draws fresh random angles (a pass id from torch's default generator, so
torch.manual_seed reproduces a run, and activation checkpointing, which restores that generator, redraws
the same ones); in eval mode the pass is EVAL_PASS, routelab eval's first pass, unless pass_id says otherwise.

Incremental decoding: pass a cache (new_cache(), or RoutelabModel.new_cache()) and feed the sequence in
pieces, one token or many; each piece continues the running angle sum, keeps the keys and values already
rotated, and for Householder transport carries the cached keys (and values) forward through each new step as
PaTH's layer does, and for PaTH's own directions (path_*) keeps the short convolution's input at the last two
positions, so the outputs are the full forward's.
"""
import math
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from . import philox
from .householder import householder_attention, householder_step
from .rotary import PAIRS, accumulate, alibi_slopes, attend, cos_sin, rope_frequencies, rotate


class Scheme(NamedTuple):
    """One positional scheme: its angle kind (a key of ANGLES, or "none"), whether values are transported, ALiBi,
    the forget gate, and its transport steps (a key of STEPS, or "none")."""
    angles: str
    transport_values: bool = False
    alibi: bool = False
    forget_gate: bool = False
    steps: str = "none"


# lib/nn/scheme.cpp's schemes.
SCHEMES = {
    "nope": Scheme("none"),
    "rope": Scheme("rope"),
    "rope_qkv": Scheme("rope", True),
    "random_qk": Scheme("random"),
    "random_qkv": Scheme("random", True),
    "learned_qk": Scheme("learned"),
    "learned_qkv": Scheme("learned", True),
    "alibi": Scheme("none", alibi=True),
    "learned_qkv_alibi": Scheme("learned", True, alibi=True),
    "random_qkv_alibi": Scheme("random", True, alibi=True),
    "learned_qkv_forget": Scheme("learned", True, forget_gate=True),
    "householder_qk": Scheme("none", steps="householder"),
    "householder_qkv": Scheme("none", True, steps="householder"),
    "projected_qk": Scheme("projected"),
    "projected_qkv": Scheme("projected", True),
    "fox": Scheme("none", forget_gate=True),
    "path_qk": Scheme("none", steps="path"),
    "path_qkv": Scheme("none", True, steps="path"),
    "path_qk_forget": Scheme("none", forget_gate=True, steps="path"),
}
PATH_RANK, PATH_CONV_TAPS = 32, 3  # lib/nn/scheme.h kPathRank, kPathConvTaps

EVAL_PASS = 1 << 36  # lib/runs/eval.h kEvalPass: the pass id of evaluation pass 0
TRAIN_PASSES = 1 << 36  # training draws its pass ids below EVAL_PASS, as routelab's steps are


def default_pass(training):
    """The random angles' pass when none is named: in training a fresh one, drawn from torch's default (CPU)
    generator; in eval EVAL_PASS."""
    return int(torch.randint(0, TRAIN_PASSES, (), device="cpu").item()) if training else EVAL_PASS


def _linear(n_out, n_in, bias, device, dtype):
    """nn.Linear with routelab's initialisation: weights N(0, 0.02), biases zero."""
    m = nn.Linear(n_in, n_out, bias=bias, device=device, dtype=dtype)
    nn.init.normal_(m.weight, std=0.02)
    if bias:
        nn.init.zeros_(m.bias)
    return m


class AttentionCache:
    """What one attention layer keeps between pieces of a decoded sequence: the positions seen, the running
    (unwrapped, float64) angle sum per block, the keys and values as attention reads them (rotated; under
    Householder transport carried to the last position), the forget gate's running log sum per key, which keys
    were padding, and PaTH's short convolution's input at the last two real positions (path_*)."""

    def __init__(self, pass_id=EVAL_PASS):
        self.pos = 0
        self.pass_id = pass_id
        self.angle_sum = None  # (B, nb) float64
        self.k = self.v = None  # (B, H, pos, hd)
        self.cum = None  # (B, H, pos) float64
        self.pad = None  # (B, pos) bool, True at padding
        self.conv = None  # (B, PATH_CONV_TAPS - 1, d_model)


# ---- angle laws: step angles psi_t per block (B, T, nb) float64; theta_t = sum_{s<=t} psi_s ----

class _Angles(nn.Module):
    """What every angle law shares: the head's RoPE frequencies (the blocks' frequency column), and the first
    harmonic E e^{i psi_b} per block, as its modulus beta_b and argument (the drift), where the law's parameters
    give it (mixing.py reads it; law_source says from what)."""
    absolute = False  # True: theta_t is a function of t alone (RoPE)
    stream_law = False  # True: psi depends on the context, its law is a stream's (projected)
    law_source = "closed form"

    def __init__(self, head_dim, rope_base=10000.0):
        super().__init__()
        self.head_dim, self.nb, self.rope_base = head_dim, head_dim // 2, rope_base

    def frequencies(self, device=None):
        return rope_frequencies(self.head_dim, self.rope_base, device)

    def harmonic(self, token_freq):
        """(beta, drift) per block, numpy arrays, token_freq the law of the tokens."""
        raise NotImplementedError(f"{type(self).__name__}: the law of its angles is a stream's")

    def export_tensors(self, shared):
        """{name in a `routelab export` file, relative to layers.l.: parameter}; shared: the model holds a table
        all layers share."""
        return {}


class RopeAngles(_Angles):
    """RoPE: theta_t = t f_j (psi = f_j every step: beta 1, drift f_j)."""
    absolute = True

    def __init__(self, head_dim, *, rope_base=10000.0, **_):
        super().__init__(head_dim, rope_base)

    def theta(self, B, T, first, device):
        th = (first + torch.arange(T, dtype=torch.float64, device=device))[:, None] * self.frequencies(device)
        return th.expand(B, T, self.nb)

    def harmonic(self, token_freq):
        f = self.frequencies().numpy()
        return f * 0 + 1.0, f


class RandomAngles(_Angles):
    """psi_b ~ U(-s f_b, s f_b), i.i.d. per position, block and pass, from routelab's Philox streams: stream
    (3 << 62) | (pass << 24) | (layer << 16) | row, keyed by seed. Without seed, one is drawn from torch's
    default generator when the module is built (so two layers built alike draw different angles); seed and
    layer are kept in the state dict (`_extra_state`), so a reloaded model evaluates the same."""

    def __init__(self, head_dim, *, rope_base=10000.0, angle_scale=1.0, seed=None, layer=None, **_):
        super().__init__(head_dim, rope_base)
        self.angle_scale = angle_scale
        self.seed = int(torch.randint(0, 1 << 62, (), device="cpu").item()) if seed is None else int(seed)
        self.layer = 0 if layer is None else int(layer)
        if not 0 <= self.layer < 256:
            raise ValueError(f"layer {self.layer} is not accepted; an integer in [0, 255] (8 bits of the stream id)")

    def get_extra_state(self):
        return torch.tensor([self.seed, self.layer], dtype=torch.int64, device="cpu")

    def set_extra_state(self, state):
        self.seed, self.layer = int(state[0]), int(state[1])

    def steps(self, h, tokens, first, pass_id):
        B, T = h.shape[:2]
        if pass_id is None:
            pass_id = default_pass(self.training)
        if B > 1 << 16:
            raise ValueError(f"random angles: batch {B} is not accepted; at most 65536 rows (16 bits of the stream id)")
        streams = [(3 << 62) | (pass_id << 24) | (self.layer << 16) | b for b in range(B)]
        u = philox.stream_uniforms(self.seed, streams, T * self.nb, first * self.nb, h.device).view(B, T, self.nb)
        return (self.angle_scale * self.frequencies(h.device)) * (2.0 * u - 1.0)

    def harmonic(self, token_freq):
        # Example 1: E e^{i psi} = sin(s f) / (s f), real; a negative one is a drift of pi.
        mean = [math.sin(x) / x if x != 0 else 1.0 for x in (self.angle_scale * self.frequencies()).tolist()]
        return np.abs(mean), np.angle(np.array(mean, dtype=complex))


class LearnedAngles(_Angles):
    """psi_t = table[token_t], a learned row of hd/2 angles per token: vocab_size rows (256: bytes; any
    vocabulary, BPE's included). table: a shared nn.Parameter (routelab's learned_shared) instead of its own."""
    law_source = "table"

    def __init__(self, head_dim, *, rope_base=10000.0, vocab_size=256, learned_sigma=1.0, angle_table=None,
                 device=None, dtype=None, **_):
        super().__init__(head_dim, rope_base)
        self.table = angle_table if angle_table is not None else nn.Parameter(
            torch.randn(vocab_size, self.nb, device=device, dtype=dtype) * learned_sigma)

    @property
    def vocab_size(self):
        return self.table.shape[0]

    def export_tensors(self, shared):
        return {} if shared else {"angles": self.table}

    def steps(self, h, tokens, first, pass_id):
        if tokens is None:
            raise ValueError("learned angles need the tokens of the positions: forward(h, tokens)")
        return F.embedding(tokens, self.table).double()

    def harmonic(self, token_freq):
        table = self.table.detach().double().cpu().numpy()
        if len(token_freq) != len(table):
            raise ValueError(f"token frequencies over {len(token_freq)} tokens; the table has {len(table)} rows")
        mean = (np.asarray(token_freq)[:, None] * np.exp(1j * table)).sum(axis=0)
        return np.abs(mean), np.angle(mean)


class ProjectedAngles(_Angles):
    """psi_t = psi(h_t), a learned linear map of the layer's input (hd/2 angles)."""
    stream_law = True
    law_source = "stream"

    def __init__(self, head_dim, *, d_model, rope_base=10000.0, device=None, dtype=None, **_):
        super().__init__(head_dim, rope_base)
        self.psi = _linear(self.nb, d_model, True, device, dtype)

    def export_tensors(self, shared):
        return {"psi.w": self.psi.weight, "psi.b": self.psi.bias}

    def steps(self, h, tokens, first, pass_id):
        return self.psi(h).double()


ANGLES = {"rope": RopeAngles, "random": RandomAngles, "learned": LearnedAngles, "projected": ProjectedAngles}


# ---- transport steps: (w_t unit, beta_t) per head for H_t = I - beta_t w_t w_t^T ----

class _Steps(nn.Module):
    """What every step law shares: w_t = unit(head h's slice of directions(h_t)); beta_t = 2 sigmoid(size(h_t))
    per head (householder_beta "path", PaTH's) or 2 (a reflection, "reflection")."""

    def __init__(self, d_model, heads, householder_beta, device, dtype):
        super().__init__()
        if householder_beta not in ("path", "reflection"):
            raise ValueError(f"householder_beta '{householder_beta}' is not accepted; path or reflection")
        self.heads = heads
        self.size = _linear(heads, d_model, True, device, dtype) if householder_beta == "path" else None

    def forward(self, h, cache=None, key_padding_mask=None):
        """w (B, T, H, hd) unit, beta (B, T, H); a padded position's beta is 0 (the identity)."""
        B, T, C = h.shape
        z = self.directions(h, cache, key_padding_mask).view(B, T, self.heads, C // self.heads)
        w = z / z.norm(dim=-1, keepdim=True).clamp_min(1e-12)
        if self.size is not None:
            beta = 2.0 * torch.sigmoid(self.size(h))
        else:
            beta = torch.full((B, T, self.heads), 2.0, dtype=h.dtype, device=h.device)
        if key_padding_mask is not None:
            beta = beta.masked_fill(key_padding_mask[..., None], 0.0)
        return w, beta

    def export_tensors(self):
        out = self.direction_tensors()
        if self.size is not None:
            out["householder.u"], out["householder.c"] = self.size.weight, self.size.bias
        return out


class HouseholderSteps(_Steps):
    """routelab's Householder steps (householder_*): directions W h_t + b, from the position's input alone."""

    def __init__(self, d_model, heads, *, householder_beta="path", device=None, dtype=None, **_):
        super().__init__(d_model, heads, householder_beta, device, dtype)
        self.direction = _linear(d_model, d_model, True, device, dtype)

    def directions(self, h, cache, key_padding_mask):
        return self.direction(h)

    def direction_tensors(self):
        return {"householder.w": self.direction.weight, "householder.b": self.direction.bias}


class PathSteps(_Steps):
    """PaTH's own step directions (path_*, flash-linear-attention's PaTHAttention: low-rank w_proj, then
    w_conv1d): z_t = w2 w1 h_t (rank r = min(32, d_model), no biases), y_t[c] = sum_k conv[c, k] z_{t-2+k}[c] (a
    causal depthwise convolution of 3 taps, zeros before the sequence), directions silu(y_t). So a step sees
    h_{t-2}, h_{t-1} and h_t. A padded position is skipped: the window reaches back over real positions only."""

    def __init__(self, d_model, heads, *, householder_beta="path", device=None, dtype=None, **_):
        super().__init__(d_model, heads, householder_beta, device, dtype)
        r = min(PATH_RANK, d_model)
        self.w1 = _linear(r, d_model, False, device, dtype)
        self.w2 = _linear(d_model, r, False, device, dtype)
        self.conv = nn.Parameter(torch.empty(d_model, PATH_CONV_TAPS, device=device, dtype=dtype))
        nn.init.normal_(self.conv, std=0.02)

    def directions(self, h, cache, key_padding_mask):
        z = self.w2(self.w1(h))
        B, T, C = z.shape
        n = PATH_CONV_TAPS - 1
        before = cache.conv if cache is not None and cache.conv is not None else z.new_zeros(B, n, C)
        joined = torch.cat((before, z), dim=1)  # (B, n + T, C)
        real = None
        if key_padding_mask is not None:
            # The real positions first, in order (a stable sort), so each window spans the last real inputs.
            real = ~key_padding_mask
            keep = torch.cat((real.new_ones(B, n), real), dim=1)
            order = torch.sort((~keep).to(torch.uint8), dim=1, stable=True).indices
            joined = joined.gather(1, order[..., None].expand(-1, -1, C))
        if cache is not None:
            last = joined.shape[1] if real is None else n + real.sum(dim=1, keepdim=True)  # real inputs kept
            at = (last - n + torch.arange(n, device=z.device)).expand(B, n)
            cache.conv = joined.gather(1, at[..., None].expand(-1, -1, C))
        y = sum(self.conv[:, k] * joined[:, k:k + T] for k in range(PATH_CONV_TAPS))
        if real is not None:  # back to the positions: a real one's window ends at its rank among the real ones
            rank = (torch.cumsum(real, dim=1) - 1).clamp_min(0)
            y = y.gather(1, rank[..., None].expand(-1, -1, C))
        return F.silu(y)

    def direction_tensors(self):
        return {"householder.w1": self.w1.weight, "householder.w2": self.w2.weight, "householder.conv": self.conv}


STEPS = {"householder": HouseholderSteps, "path": PathSteps}


class SchemeAttention(nn.Module):
    """One attention layer of routelab's model under any scheme: projections wq, wk, wv, wo (nn.Linear, with
    biases unless bias=False), the angle module `angles` (angles: "none" or a key of ANGLES), the forget gate
    `forget` (nn.Linear to one logit per head), the transport steps `steps` (steps: "none" or a key of STEPS).

    forward(h, tokens=None, cache=None, pass_id=None, *, attn_mask=None, key_padding_mask=None, causal=True):
    h (B, T, d_model); tokens (B, T) ids, needed by learned angles; cache an AttentionCache to decode in pieces;
    pass_id the random angles' pass (EVAL_PASS + i is routelab eval's pass i; default: fresh in training, EVAL_PASS
    in eval). attn_mask: bool (True where a query may attend a key) or float (added to the scores), broadcasting
    to (B, heads, T, keys); key_padding_mask (B, T) bool, True at padding: a padded position takes no angle step,
    no Householder step, no forget-gate decay and no place in PaTH's convolution window, and no query attends it,
    so a row padded on the left or right gives the unpadded row's outputs at its real positions (random angles:
    drawn at the row's positions), and padded inside too where every term is a sum of steps (not RoPE's or
    ALiBi's positions). causal=False (no cache) for rotary and ALiBi schemes. dropout: on the attention
    probabilities in training. pairs: "interleaved" or "half" (rotary.py). layer, seed: the random angles' stream
    (RandomAngles). vocab_size: the learned angles' table rows. The named subclasses below fix the scheme's kind."""

    def __init__(self, d_model, heads, *, angles="none", transport_values=False, alibi=False, forget_gate=False,
                 steps="none", householder_beta="path", rope_base=10000.0, angle_scale=1.0,
                 learned_sigma=1.0, vocab_size=256, angle_table=None, pairs="interleaved", bias=True, dropout=0.0,
                 layer=None, seed=None, device=None, dtype=None):
        super().__init__()
        if angles != "none" and angles not in ANGLES:
            raise ValueError(f"angles '{angles}' is not accepted; none, {', '.join(ANGLES)}")
        if steps != "none" and steps not in STEPS:
            raise ValueError(f"steps '{steps}' is not accepted; none, {', '.join(STEPS)}")
        if pairs not in PAIRS:
            raise ValueError(f"pairs '{pairs}' is not accepted; interleaved or half")
        if d_model % heads or (d_model // heads) % 2:
            raise ValueError(f"d_model {d_model} must split into {heads} heads of an even head_dim")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout {dropout} is not accepted; a probability in [0, 1)")
        C, H = d_model, heads
        self.d_model, self.heads, self.head_dim = C, H, C // H
        self.nb = self.head_dim // 2
        self.angle_kind, self.transport_values, self.alibi = angles, transport_values, alibi
        self.forget_gate, self.step_kind, self.pairs, self.dropout = forget_gate, steps, pairs, dropout
        for name in ("wq", "wk", "wv", "wo"):
            setattr(self, name, _linear(C, C, bias, device, dtype))
        options = dict(d_model=C, rope_base=rope_base, angle_scale=angle_scale, learned_sigma=learned_sigma,
                       vocab_size=vocab_size, angle_table=angle_table, layer=layer, seed=seed, device=device,
                       dtype=dtype)
        self.angles = ANGLES[angles](self.head_dim, **options) if angles != "none" else None
        self.forget = _linear(H, C, True, device, dtype) if forget_gate else None
        self.steps = STEPS[steps](C, H, householder_beta=householder_beta, device=device,
                                  dtype=dtype) if steps != "none" else None

    def new_cache(self, pass_id=EVAL_PASS):
        return AttentionCache(pass_id)

    def export_tensors(self, shared_angles=False):
        """{name in a `routelab export` file, relative to layers.l. (docs/export.md): parameter}."""
        out = {}
        for name in ("q", "k", "v", "o"):
            lin = getattr(self, "w" + name)
            out["attn.w" + name] = lin.weight
            if lin.bias is not None:
                out["attn.b" + name] = lin.bias
        if self.angles is not None:
            out.update(self.angles.export_tensors(shared_angles))
        if self.forget is not None:
            out["forget.w"], out["forget.b"] = self.forget.weight, self.forget.bias
        if self.steps is not None:
            out.update(self.steps.export_tensors())
        return out

    def theta(self, h, tokens, cache, pass_id, key_padding_mask=None):
        """Accumulated angles (B, T, nb) float64, unwrapped; the cache's running sum continued. A padded position
        takes no step."""
        B, T = h.shape[:2]
        first = cache.pos if cache is not None else 0
        if self.angles.absolute:
            return self.angles.theta(B, T, first, h.device)
        inc = self.angles.steps(h, tokens, first, pass_id)
        if key_padding_mask is not None:
            inc = inc.masked_fill(key_padding_mask[..., None], 0.0)
        th = accumulate(inc, dim=1, start=None if cache is None else cache.angle_sum)
        if cache is not None:
            cache.angle_sum = th[:, -1]
        return th

    def forward(self, h, tokens=None, cache=None, pass_id=None, *, attn_mask=None, key_padding_mask=None,
                causal=True):
        B, T, C = h.shape
        H, hd = self.heads, self.head_dim
        if not causal and (cache is not None or self.forget is not None or self.steps is not None):
            raise ValueError("causal=False: only without a cache, and not with a forget gate or Householder steps "
                             "(both transport the past)")
        if pass_id is None and cache is not None:
            pass_id = cache.pass_id
        first = cache.pos if cache is not None else 0
        pad = key_padding_mask
        q, k, v = (lin(h).view(B, T, H, hd).transpose(1, 2) for lin in (self.wq, self.wk, self.wv))  # (B, H, T, hd)
        rot = None
        if self.angles is not None:
            rot = cos_sin(self.theta(h, tokens, cache, pass_id, pad)[:, None], h.dtype)  # (B, 1, T, nb)
            q, k = rotate(q, *rot, self.pairs), rotate(k, *rot, self.pairs)
            if self.transport_values:
                v = rotate(v, *rot, self.pairs)
        dropout = self.dropout if self.training else 0.0
        log_forget = None
        if self.forget is not None:
            log_forget = F.logsigmoid(self.forget(h).double()).transpose(1, 2)  # (B, H, T)
            if pad is not None:
                log_forget = log_forget.masked_fill(pad[:, None, :], 0.0)
        if self.steps is not None:
            o = self._transport(h, q, k, v, cache, pad, attn_mask, dropout, log_forget)
        else:
            bias = None
            cum = None if log_forget is None else self._running_sums(log_forget, cache)
            if cache is not None:
                k, v, cum, pad = self._append(cache, k, v, cum, pad)
            Tk = k.shape[2]
            if self.alibi:
                dist = (first + torch.arange(T, device=h.device)[:, None] -
                        torch.arange(Tk, device=h.device)[None, :]).double()
                dist = dist if causal else dist.abs()
                bias = -(alibi_slopes(H, h.device)[:, None, None] * dist)[None].to(h.dtype)
            if cum is not None:
                fb = (cum[:, :, first:, None] - cum[:, :, None, :]).to(h.dtype)
                bias = fb if bias is None else bias + fb
            o = attend(q, k, v, causal=causal, offset=first, attn_mask=attn_mask, key_padding_mask=pad, bias=bias,
                       dropout=dropout)
        if rot is not None and self.transport_values:
            o = rotate(o, rot[0], -rot[1], self.pairs)
        if cache is not None:
            cache.pos += T
        return self.wo(o.transpose(1, 2).reshape(B, T, C))

    @staticmethod
    def _running_sums(log_forget, cache):
        """The forget gate's running sums of log f over this piece (B, H, T) float64, continuing the cache's."""
        start = None if cache is None or cache.cum is None or not cache.cum.shape[2] else cache.cum[:, :, -1]
        return accumulate(log_forget, dim=2, start=start)

    @staticmethod
    def _append(cache, k, v, cum, pad):
        """The cache's keys, values, log sums and padding with this piece's after them (kept in the cache)."""
        B, T = k.shape[0], k.shape[2]
        if pad is None and cache.pad is not None:
            pad = torch.zeros(B, T, dtype=torch.bool, device=k.device)
        if pad is not None and cache.pad is None and cache.pos:
            cache.pad = torch.zeros(B, cache.pos, dtype=torch.bool, device=k.device)
        cat = lambda old, new, dim: new if old is None else torch.cat((old, new), dim=dim)  # noqa: E731
        cache.k, cache.v = cat(cache.k, k, 2), cat(cache.v, v, 2)
        if cum is not None:
            cache.cum = cat(cache.cum, cum, 2)
        if pad is not None:
            cache.pad = cat(cache.pad, pad, 1)
        return cache.k, cache.v, cache.cum, cache.pad

    def _transport(self, h, q, k, v, cache, pad, attn_mask, dropout, log_forget):
        """PaTH's transport (householder.py): s_ij = k_j^T H_{j+1} ... H_i q_i / sqrt(hd), plus the forget gate's
        cum_i - cum_j where there is one (PaTH-FoX); with transported values o_i = sum_j p_ij H_i ... H_{j+1} v_j.
        Whole sequences go through householder_attention's blocked form; a cache decodes position by position,
        carrying the cached keys (and values) through each step."""
        w, beta = self.steps(h, cache, pad)
        w, beta = w.transpose(1, 2), beta.transpose(1, 2)  # (B, H, T, hd), (B, H, T)
        if cache is None:
            return householder_attention(q, k, v, w, beta, log_forget, transport_values=self.transport_values,
                                         attn_mask=attn_mask, key_padding_mask=pad, dropout=dropout, layout="bhtd")
        if attn_mask is not None:
            raise ValueError("attn_mask: not offered when decoding Householder transport with a cache")
        cum = None if log_forget is None else self._running_sums(log_forget, cache)
        outs = []
        scale = self.head_dim ** -0.5
        for t in range(q.shape[2]):
            if cache.k is not None:
                cache.k = householder_step(cache.k, w[:, :, t], beta[:, :, t])
                if self.transport_values:
                    cache.v = householder_step(cache.v, w[:, :, t], beta[:, :, t])
            kt, vt = k[:, :, t:t + 1], v[:, :, t:t + 1]
            keys, values, sums, kpad = self._append(cache, kt, vt, None if cum is None else cum[:, :, t:t + 1],
                                                    None if pad is None else pad[:, t:t + 1])
            bias = None if cum is None else (sums[:, :, -1:] - sums)[:, :, None, :].to(q.dtype)
            o = attend(q[:, :, t:t + 1], keys, values, causal=False, key_padding_mask=kpad, bias=bias, scale=scale)
            outs.append(o)
        return torch.cat(outs, dim=2)


class RotaryAttention(SchemeAttention):
    """RoPE (rope; transport_values=True: rope_qkv): angles t f_j."""

    def __init__(self, d_model, heads, *, transport_values=False, **kw):
        super().__init__(d_model, heads, angles="rope", transport_values=transport_values, **kw)


class AccumulatedRotaryAttention(SchemeAttention):
    """Accumulated angles theta_t = sum_{s<=t} psi_s: angles = "learned" (a table per token, vocab_size rows),
    "random" (U(-s f_j, s f_j) from routelab's Philox streams) or "projected" (psi_s = psi(h_s)); with
    transport_values (the _qkv schemes), ALiBi (alibi=True) or the forget gate (forget_gate=True) beside."""

    def __init__(self, d_model, heads, *, angles="learned", transport_values=True, **kw):
        if angles not in ("learned", "random", "projected"):
            raise ValueError(f"angles '{angles}' is not accepted; learned, random or projected")
        super().__init__(d_model, heads, angles=angles, transport_values=transport_values, **kw)


class ALiBiAttention(SchemeAttention):
    """ALiBi: scores minus m_h (i - j), no rotation."""

    def __init__(self, d_model, heads, **kw):
        super().__init__(d_model, heads, alibi=True, **kw)


class HouseholderAttention(SchemeAttention):
    """PaTH's Householder transport: householder_beta "path" (beta_t = 2 sigmoid(u h_t + c)) or "reflection"
    (beta = 2); transport_values carries the values too (householder_qkv). steps "householder" (directions from
    h_t alone, householder_*) or "path" (PaTH's own: low rank, a short causal convolution, SiLU; path_qk,
    path_qkv); forget_gate=True adds the forget gate's bias (path_qk_forget, PaTH-FoX)."""

    def __init__(self, d_model, heads, *, steps="householder", transport_values=False, householder_beta="path",
                 **kw):
        if steps not in STEPS:
            raise ValueError(f"steps '{steps}' is not accepted; {' or '.join(STEPS)}")
        super().__init__(d_model, heads, steps=steps, transport_values=transport_values,
                         householder_beta=householder_beta, **kw)


def attention_for_scheme(scheme, d_model, heads, **kw):
    """The attention layer routelab's `scheme` (a [model] scheme name) trains with."""
    if scheme not in SCHEMES:
        raise ValueError(f"scheme '{scheme}' is not accepted; one of {', '.join(SCHEMES)}")
    s = SCHEMES[scheme]
    return SchemeAttention(d_model, heads, angles=s.angles, transport_values=s.transport_values, alibi=s.alibi,
                           forget_gate=s.forget_gate, steps=s.steps, **kw)
