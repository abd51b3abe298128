"""Attention for every positional scheme routelab trains, in PyTorch (lib/nn/attention.cpp, scheme.cpp,
householder.cpp, forget_gate.cpp are the reference; tests/python/test_torch_parity.py holds the two to 1e-5 in
bits per byte).

Shapes: the functions take q, k, v as (batch, time, heads, head_dim); the modules take the layer's input h
(batch, time, d_model), the normed residual the projections read, and return (batch, time, d_model). Angles
are accumulated in float64 and wrapped to [-pi, pi] there, and cos/sin are formed in float64 before they are
cast to the input's dtype, so bfloat16 inputs keep their positions at long lengths. Masks are causal.

Incremental decoding: pass a cache (SchemeAttention.new_cache(), or RoutelabModel.new_cache()) and feed the
sequence in pieces, one token or many; each piece continues the running angle sum, keeps the keys and values
already rotated, and for Householder transport carries the cached keys (and values) forward through each new
step as PaTH's layer does, so the outputs are the full forward's.
"""
import math

import torch
import torch.nn.functional as F
from torch import nn

from . import philox

# lib/nn/scheme.cpp: angles, values transported, ALiBi, forget gate, Householder, PaTH's own directions.
SCHEMES = {
    "nope": ("none", False, False, False, False, False),
    "rope": ("rope", False, False, False, False, False),
    "rope_qkv": ("rope", True, False, False, False, False),
    "random_qk": ("random", False, False, False, False, False),
    "random_qkv": ("random", True, False, False, False, False),
    "learned_qk": ("learned", False, False, False, False, False),
    "learned_qkv": ("learned", True, False, False, False, False),
    "alibi": ("none", False, True, False, False, False),
    "learned_qkv_alibi": ("learned", True, True, False, False, False),
    "random_qkv_alibi": ("random", True, True, False, False, False),
    "learned_qkv_forget": ("learned", True, False, True, False, False),
    "householder_qk": ("none", False, False, False, True, False),
    "householder_qkv": ("none", True, False, False, True, False),
    "projected_qk": ("projected", False, False, False, False, False),
    "projected_qkv": ("projected", True, False, False, False, False),
    "fox": ("none", False, False, True, False, False),
    "path_qk": ("none", False, False, False, True, True),
    "path_qkv": ("none", True, False, False, True, True),
    "path_qk_forget": ("none", False, False, True, True, True),
}
PATH_RANK, PATH_CONV_TAPS = 32, 3  # lib/nn/scheme.h kPathRank, kPathConvTaps

EVAL_PASS = 1 << 36  # lib/runs/eval.h kEvalPass: the pass id of evaluation pass 0
TWO_PI = 2.0 * math.pi


def wrap(x):
    """std::remainder(x, 2 pi): into [-pi, pi]."""
    return x - TWO_PI * torch.round(x / TWO_PI)


def rope_frequencies(head_dim, base=10000.0):
    """f_j = base^(-2j/hd), j < hd/2, float64 (base/angles.h)."""
    return torch.tensor([base ** (-2.0 * j / head_dim) for j in range(head_dim // 2)], dtype=torch.float64)


def alibi_slopes(heads):
    """lib/nn/scheme.cpp alibi_slopes (Press et al.): float64 (heads,)."""
    def pow2(n):
        start = 2.0 ** (-8.0 / n)
        return [start ** (i + 1) for i in range(n)]
    p = 1
    while p * 2 <= heads:
        p *= 2
    s = pow2(p)
    extra = pow2(2 * p)
    i = 0
    while len(s) < heads:
        s.append(extra[i])
        i += 2
    return torch.tensor(s, dtype=torch.float64)


def rotate(x, cos, sin):
    """Pairs (2j, 2j+1) of x's last axis turned by the angle whose cos and sin are given (..., hd/2):
    (a, b) -> (a cos - b sin, a sin + b cos)."""
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)


def householder_step(x, w, beta):
    """H x = x - beta w (w . x) for x (B, H, N, hd), w (B, H, hd), beta (B, H)."""
    alpha = torch.einsum("bhnd,bhd->bhn", x, w)
    return x - (beta[:, :, None] * alpha)[..., None] * w[:, :, None, :]


def _softmax_attend(q, k, v, bias, first):
    """q (B, H, Tq, hd) at absolute positions first .. first + Tq - 1, k and v (B, H, Tk, hd) at 0 .. Tk - 1;
    bias None or additive (B or 1, H, Tq, Tk). Causal: key j is seen by query i when j <= i."""
    Tq, Tk = q.shape[2], k.shape[2]
    visible = torch.arange(Tk)[None, :] <= (first + torch.arange(Tq))[:, None]
    mask = torch.zeros(Tq, Tk, dtype=q.dtype).masked_fill(~visible, float("-inf"))
    mask = mask if bias is None else bias + mask
    if hasattr(F, "scaled_dot_product_attention"):  # PyTorch 2: the fused path
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    return (s + mask).softmax(dim=-1) @ v


def accumulated_rotary_attention(q, k, v, theta=None, *, transport_values=False, slopes=None, log_forget=None):
    """Causal attention of q, k, v (batch, time, heads, head_dim) with every scheme's score terms:
    theta (batch, time, head_dim/2), the accumulated angles (any dtype; wrapped in float64), turns pair j of
    q and k at position t by theta[t, j] (transport_values: v too, and the output back by -theta); slopes
    (heads,) adds ALiBi's -m_h (i - j); log_forget (batch, time, heads) adds the forget gate's
    cum_i - cum_j with cum the running sum of log forget gates (formed in float64). Returns
    (batch, time, heads, head_dim) in q's dtype."""
    q, k, v = (x.transpose(1, 2) for x in (q, k, v))
    rot = None
    if theta is not None:
        th = wrap(theta.double())[:, None]
        rot = (th.cos().to(q.dtype), th.sin().to(q.dtype))
        q, k = rotate(q, *rot), rotate(k, *rot)
        if transport_values:
            v = rotate(v, *rot)
    T = q.shape[2]
    bias = None
    if slopes is not None:
        dist = (torch.arange(T)[:, None] - torch.arange(T)[None, :]).double()
        bias = -(slopes.double()[:, None, None] * dist)[None].to(q.dtype)
    if log_forget is not None:
        cum = torch.cumsum(log_forget.double(), dim=1).transpose(1, 2)  # (B, H, T)
        fb = (cum[:, :, :, None] - cum[:, :, None, :]).to(q.dtype)
        bias = fb if bias is None else bias + fb
    o = _softmax_attend(q, k, v, bias, 0)
    if rot is not None and transport_values:
        o = rotate(o, rot[0], -rot[1])
    return o.transpose(1, 2)


class AttentionCache:
    """What one attention layer keeps between pieces of a decoded sequence: the positions seen, the running
    (unwrapped, float64) angle sum per block, the keys and values as attention reads them (rotated; under
    Householder transport carried to the last position), the forget gate's running log sum per key, and PaTH's
    short convolution's input at the last two positions."""

    def __init__(self, pass_id=EVAL_PASS):
        self.pos = 0
        self.pass_id = pass_id
        self.angle_sum = None  # (B, nb) float64
        self.k = self.v = None  # (B, H, pos, hd)
        self.cum = None  # (B, H, pos) float64
        self.conv = None  # (B, PATH_CONV_TAPS - 1, d_model)


class _Affine(nn.Module):
    """y = x w^T + b, with routelab's names (w, b) so exported tensors load by name."""

    def __init__(self, out_features, in_features, dtype):
        super().__init__()
        self.w = nn.Parameter(torch.empty(out_features, in_features, dtype=dtype))
        self.b = nn.Parameter(torch.zeros(out_features, dtype=dtype))
        nn.init.normal_(self.w, std=0.02)

    def forward(self, x):
        return x @ self.w.T + self.b


class _Householder(nn.Module):
    """The steps' parameters: directions from w, b (householder_*) or PaTH's w1 (r, C), w2 (C, r) and the
    convolution's kernel conv (C, taps) (path_*); beta's u, c under PaTH's beta."""

    def __init__(self, d_model, heads, path_beta, dtype, path_w=False):
        super().__init__()
        if path_w:
            r = min(PATH_RANK, d_model)
            for name, shape in (("w1", (r, d_model)), ("w2", (d_model, r)), ("conv", (d_model, PATH_CONV_TAPS))):
                setattr(self, name, nn.Parameter(torch.empty(*shape, dtype=dtype)))
                nn.init.normal_(getattr(self, name), std=0.02)
        else:
            self.w = nn.Parameter(torch.empty(d_model, d_model, dtype=dtype))
            self.b = nn.Parameter(torch.zeros(d_model, dtype=dtype))
            nn.init.normal_(self.w, std=0.02)
        if path_beta:
            self.u = nn.Parameter(torch.empty(heads, d_model, dtype=dtype))
            self.c = nn.Parameter(torch.zeros(heads, dtype=dtype))
            nn.init.normal_(self.u, std=0.02)


class SchemeAttention(nn.Module):
    """One attention layer of routelab's model under any scheme (SCHEMES): projections wq, wk, wv, wo with
    biases, and the scheme's positional parameters. forward(h, tokens, cache, pass_id): h (B, T, d_model) is
    what the projections read (routelab: ln1 of the residual); tokens (B, T) bytes, needed by learned angles;
    cache an AttentionCache to decode in pieces; pass_id the random angles' pass (EVAL_PASS + i is routelab
    eval's pass i). The named subclasses below fix the scheme's kind."""

    def __init__(self, d_model, heads, *, angles="none", transport_values=False, alibi=False, forget_gate=False,
                 householder=False, path_w=False, householder_beta="path", rope_base=10000.0, angle_scale=1.0,
                 learned_sigma=1.0, angle_table=None, layer=0, seed=1, dtype=torch.float32):
        super().__init__()
        if angles not in ("none", "rope", "random", "learned", "projected"):
            raise ValueError(f"angles '{angles}' is not accepted; none, rope, random, learned or projected")
        if d_model % heads or (d_model // heads) % 2:
            raise ValueError(f"d_model {d_model} must split into {heads} heads of an even head_dim")
        C, H = d_model, heads
        self.d_model, self.heads, self.head_dim = C, H, C // H
        self.nb = self.head_dim // 2
        self.angle_kind, self.transport_values = angles, transport_values
        self.alibi, self.forget_gate, self.householder = alibi, forget_gate, householder
        self.path_beta = householder_beta == "path"
        self.path_w = householder and path_w
        self.layer, self.seed, self.angle_scale = layer, seed, angle_scale
        self.register_buffer("freqs", rope_frequencies(self.head_dim, rope_base), persistent=False)
        self.register_buffer("slopes", alibi_slopes(H) if alibi else None, persistent=False)
        for name in ("wq", "wk", "wv", "wo"):
            setattr(self, name, nn.Parameter(torch.empty(C, C, dtype=dtype)))
            nn.init.normal_(getattr(self, name), std=0.02)
        for name in ("bq", "bk", "bv", "bo"):
            setattr(self, name, nn.Parameter(torch.zeros(C, dtype=dtype)))
        if angles == "learned":
            self.angles = angle_table if angle_table is not None else nn.Parameter(
                torch.randn(256, self.nb, dtype=dtype) * learned_sigma)
        if angles == "projected":
            self.psi = _Affine(self.nb, C, dtype)
        if forget_gate:
            self.forget = _Affine(H, C, dtype)
        if householder:
            self.hh = _Householder(C, H, self.path_beta, dtype, self.path_w)

    def new_cache(self, pass_id=EVAL_PASS):
        return AttentionCache(pass_id)

    def increments(self, h, tokens, first, pass_id):
        """The step angles of positions first .. first + T - 1, (B, T, nb) float64 (None for RoPE, whose angle
        t f_j is absolute)."""
        B, T = h.shape[:2]
        if self.angle_kind == "random":
            streams = [(3 << 62) | (pass_id << 24) | (self.layer << 16) | b for b in range(B)]
            u = philox.stream_uniforms(self.seed, streams, T * self.nb, first * self.nb)
            u = torch.from_numpy(u).view(B, T, self.nb)
            return (self.angle_scale * self.freqs) * (2.0 * u - 1.0)
        if self.angle_kind == "learned":
            if tokens is None:
                raise ValueError("learned angles need the tokens (bytes) of the positions: forward(h, tokens)")
            return self.angles.double()[tokens]
        if self.angle_kind == "projected":
            return self.psi(h).double()
        return None

    def theta(self, h, tokens, cache, pass_id):
        """Accumulated angles (B, T, nb) float64, unwrapped; the cache's running sum continued."""
        B, T = h.shape[:2]
        first = cache.pos if cache is not None else 0
        if self.angle_kind == "rope":
            th = (first + torch.arange(T, dtype=torch.float64))[:, None] * self.freqs[None, :]
            return th.expand(B, T, self.nb)
        inc = self.increments(h, tokens, first, pass_id)
        if cache is not None and cache.angle_sum is not None:
            # The sum continued term by term, as one cumsum over the whole sequence adds.
            th = torch.cumsum(torch.cat((cache.angle_sum[:, None], inc), dim=1), dim=1)[:, 1:]
        else:
            th = torch.cumsum(inc, dim=1)
        if cache is not None:
            cache.angle_sum = th[:, -1]
        return th

    def forward(self, h, tokens=None, cache=None, pass_id=None):
        B, T, C = h.shape
        H, hd = self.heads, self.head_dim
        if pass_id is None:
            pass_id = cache.pass_id if cache is not None else EVAL_PASS
        first = cache.pos if cache is not None else 0
        heads = lambda x: x.view(B, T, H, hd).transpose(1, 2)  # noqa: E731  (B, H, T, hd)
        q = heads(h @ self.wq.T + self.bq)
        k = heads(h @ self.wk.T + self.bk)
        v = heads(h @ self.wv.T + self.bv)
        rot = None
        if self.angle_kind != "none":
            th = wrap(self.theta(h, tokens, cache, pass_id))[:, None]  # (B, 1, T, nb)
            rot = (th.cos().to(h.dtype), th.sin().to(h.dtype))
            q, k = rotate(q, *rot), rotate(k, *rot)
            if self.transport_values:
                v = rotate(v, *rot)
        cum = self._forget_sums(h, cache) if self.forget_gate else None
        if self.householder:
            o = self._householder(h, q, k, v, cache, cum)
        else:
            bias = None
            if cache is not None:
                k = k if cache.k is None else torch.cat((cache.k, k), dim=2)
                v = v if cache.v is None else torch.cat((cache.v, v), dim=2)
                cache.k, cache.v = k, v
            Tk = k.shape[2]
            if self.alibi:
                dist = (first + torch.arange(T)[:, None] - torch.arange(Tk)[None, :]).double()
                bias = -(self.slopes[:, None, None] * dist)[None].to(h.dtype)
            if cum is not None:
                fb = (cum[:, :, first:, None] - cum[:, :, None, :]).to(h.dtype)
                bias = fb if bias is None else bias + fb
            o = _softmax_attend(q, k, v, bias, first)
        if rot is not None and self.transport_values:
            o = rotate(o, rot[0], -rot[1])
        if cache is not None:
            cache.pos += T
        y = o.transpose(1, 2).reshape(B, T, C)
        return y @ self.wo.T + self.bo

    def _forget_sums(self, h, cache):
        """The forget gate's running sums of log f (B, H, first + T) float64 for every key so far: the cache's
        continued by this piece's (and kept there)."""
        ls = F.logsigmoid(self.forget(h).double()).transpose(1, 2)  # (B, H, T)
        if cache is not None and cache.cum is not None and cache.cum.shape[2]:
            cum = torch.cat((cache.cum, torch.cumsum(torch.cat((cache.cum[:, :, -1:], ls), dim=2), dim=2)[:, :, 1:]),
                            dim=2)
        else:
            cum = torch.cumsum(ls, dim=2)
        if cache is not None:
            cache.cum = cum
        return cum

    def _directions(self, h, cache):
        """Each position's step direction before normalising, (B, T, C): hh.w h + hh.b, or PaTH's
        silu(y_t), y_t[c] = sum_k conv[c, k] z_{t-2+k}[c], z = w2 w1 h (0 before the sequence; when decoding,
        the cache's last two z)."""
        if not self.path_w:
            return h @ self.hh.w.T + self.hh.b
        z = (h @ self.hh.w1.T) @ self.hh.w2.T
        B, T, C = z.shape
        taps = self.hh.conv.shape[1]
        before = cache.conv if cache is not None and cache.conv is not None else z.new_zeros(B, taps - 1, C)
        joined = torch.cat((before, z), dim=1)
        if cache is not None:
            cache.conv = joined[:, joined.shape[1] - (taps - 1):]
        y = 0
        for k in range(taps):
            y = y + self.hh.conv[:, k] * joined[:, k:k + T]
        return F.silu(y)

    def _steps(self, h, cache=None):
        """Householder directions w (B, H, T, hd), unit, and sizes beta (B, H, T)."""
        B, T, C = h.shape
        z = self._directions(h, cache).view(B, T, self.heads, self.head_dim)
        w = (z / z.norm(dim=-1, keepdim=True).clamp_min(1e-12)).transpose(1, 2)
        if self.path_beta:
            beta = 2.0 * torch.sigmoid(h @ self.hh.u.T + self.hh.c).transpose(1, 2)
        else:
            beta = torch.full((B, self.heads, T), 2.0, dtype=h.dtype)
        return w, beta

    def _householder(self, h, q, k, v, cache, cum=None):
        """PaTH's transport: s_ij = k_j^T H_{j+1} ... H_i q_i / sqrt(hd), H_t = I - beta_t w_t w_t^T; with
        transported values o_i = sum_j p_ij H_i ... H_{j+1} v_j. cum (B, H, first + T), a forget gate's running
        log sums, adds cum_i - cum_j to the logits (path_qk_forget)."""
        B, H, T, hd = q.shape
        w, beta = self._steps(h, cache)
        scale = 1.0 / math.sqrt(hd)
        first = cache.pos if cache is not None else 0
        if cache is not None:
            # Token by token, keys (and values) carried forward: K_j <- H_t K_j for every cached j, so that
            # K_j . q_t = k_j^T H_{j+1} ... H_t q_t.
            outs = []
            for t in range(T):
                if cache.k is not None:
                    cache.k = householder_step(cache.k, w[:, :, t], beta[:, :, t])
                    cache.v = householder_step(cache.v, w[:, :, t], beta[:, :, t]) if self.transport_values \
                        else cache.v
                kt, vt = k[:, :, t:t + 1], v[:, :, t:t + 1]
                cache.k = kt if cache.k is None else torch.cat((cache.k, kt), dim=2)
                cache.v = vt if cache.v is None else torch.cat((cache.v, vt), dim=2)
                logits = torch.einsum("bhnd,bhd->bhn", cache.k, q[:, :, t]) * scale
                if cum is not None:
                    i = first + t
                    logits = logits + (cum[:, :, i, None] - cum[:, :, :i + 1]).to(q.dtype)
                p = logits.softmax(dim=-1)
                outs.append(torch.einsum("bhn,bhnd->bhd", p, cache.v))
            return torch.stack(outs, dim=2)
        causal = torch.ones(T, T, dtype=torch.bool).tril_()
        # Every query's carried vector, keys from the last down; U holds queries j .. T-1.
        S = torch.zeros(B, H, T, T, dtype=q.dtype)
        U = q[:, :, T:]
        for j in range(T - 1, -1, -1):
            U = torch.cat((q[:, :, j:j + 1], U), dim=2)
            S[:, :, j:, j] = torch.einsum("bhnd,bhd->bhn", U, k[:, :, j])
            U = householder_step(U, w[:, :, j], beta[:, :, j])
        S = S * scale
        if cum is not None:
            S = S + (cum[:, :, :, None] - cum[:, :, None, :]).to(q.dtype)
        P = S.masked_fill(~causal, float("-inf")).softmax(dim=-1)
        if not self.transport_values:
            return P @ v
        # The accumulators of queries j .. T-1, keys from the first up; query j's is done at key j.
        A = torch.zeros_like(q)
        o = torch.empty_like(q)
        for j in range(T):
            if j > 0:
                A = householder_step(A[:, :, 1:], w[:, :, j], beta[:, :, j])
            A = A + P[:, :, j:, j, None] * v[:, :, j, None, :]
            o[:, :, j] = A[:, :, 0]
        return o


class RotaryAttention(SchemeAttention):
    """RoPE (rope; transport_values=True: rope_qkv): angles t f_j."""

    def __init__(self, d_model, heads, *, transport_values=False, **kw):
        super().__init__(d_model, heads, angles="rope", transport_values=transport_values, **kw)


class AccumulatedRotaryAttention(SchemeAttention):
    """Accumulated angles theta_t = sum_{s<=t} psi_s: angles = "learned" (a table per byte), "random"
    (U(-s f_j, s f_j) from routelab's Philox streams) or "projected" (psi_s = psi.w h_s + psi.b); with
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
    (beta = 2); transport_values carries the values too (householder_qkv); path_w makes the directions as
    PaTH's own layer does (path_qk, path_qkv: low-rank projection, short causal convolution, SiLU)."""

    def __init__(self, d_model, heads, *, transport_values=False, householder_beta="path", path_w=False, **kw):
        super().__init__(d_model, heads, householder=True, transport_values=transport_values,
                         householder_beta=householder_beta, path_w=path_w, **kw)


def attention_for_scheme(scheme, d_model, heads, **kw):
    """The attention layer routelab's `scheme` (a [model] scheme name) trains with."""
    if scheme not in SCHEMES:
        raise ValueError(f"scheme '{scheme}' is not accepted; one of {', '.join(SCHEMES)}")
    angles, values, alibi, forget, householder, path_w = SCHEMES[scheme]
    return SchemeAttention(d_model, heads, angles=angles, transport_values=values, alibi=alibi,
                           forget_gate=forget, householder=householder, path_w=path_w, **kw)
