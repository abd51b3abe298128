"""The pieces of routelab's attention as functions over tensors, for use inside anyone's attention: rotary angles
(accumulate, wrap, cos/sin, rotate, in either pair convention), ALiBi's slopes, one masked softmax attention,
and accumulated_rotary_attention, which puts them together (lib/nn/attention.cpp, scheme.cpp and
forget_gate.cpp are the reference).

Every tensor is made on the input's device; angles are accumulated and wrapped in float64 and cos/sin formed
there before the cast to the input's dtype, so bfloat16 inputs keep their positions at long lengths.

Pairs: "interleaved" turns coordinates (2j, 2j + 1) of a head together (routelab's, and the exported
models'); "half" turns (j, j + head_dim/2) (GPT-NeoX's and Llama's rotate_half), for loading such weights.
Frequency j (and angle column j) belongs to pair j in both.

Masks follow PyTorch: attn_mask as scaled_dot_product_attention takes it (bool: True where a query may attend
a key; float: added to the scores), key_padding_mask as nn.MultiheadAttention takes it ((batch, keys) bool,
True at padding). A query that may attend no key at all gets zeros (not NaN), so padded rows do not poison a
batch's gradient.
"""
import math

import torch
import torch.nn.functional as F

TWO_PI = 2.0 * math.pi
PAIRS = ("interleaved", "half")
LAYOUTS = ("bthd", "bhtd")
# PyTorch 2's fused scaled_dot_product_attention where present (the tests compare it with the sum written out).
FUSED = hasattr(F, "scaled_dot_product_attention")


def rope_frequencies(head_dim, base=10000.0, device=None):
    """f_j = base^(-2j/hd), j < hd/2, float64 (base/angles.h: the same doubles)."""
    return torch.tensor([base ** (-2.0 * j / head_dim) for j in range(head_dim // 2)], dtype=torch.float64,
                        device=device)


def alibi_slopes(heads, device=None):
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
    return torch.tensor(s, dtype=torch.float64, device=device)


def accumulate(steps, dim=1, start=None):
    """theta_t = start + sum_{s <= t} psi_s along `dim`, in float64 (unwrapped: the sum continues across pieces
    of a decoded sequence when `start`, the previous piece's last theta, is given)."""
    steps = steps.double()
    if start is None:
        return torch.cumsum(steps, dim=dim)
    # Term by term from the previous sum, as one cumsum over the whole sequence adds them.
    return torch.cumsum(torch.cat((start.double().unsqueeze(dim), steps), dim=dim), dim=dim).narrow(
        dim, 1, steps.shape[dim])


def wrap(x):
    """std::remainder(x, 2 pi): into [-pi, pi]."""
    return x - TWO_PI * torch.round(x / TWO_PI)


def cos_sin(theta, dtype):
    """cos and sin of the angles theta, wrapped and formed in float64, then cast to dtype."""
    th = wrap(theta.double())
    return th.cos().to(dtype), th.sin().to(dtype)


def rotate(x, cos, sin, pairs="interleaved"):
    """x's last axis turned pair by pair: pair j, (a, b), by the angle whose cos and sin are cos[..., j] and
    sin[..., j] (broadcast against x's leading axes): (a cos - b sin, a sin + b cos). pairs: "interleaved"
    (a, b) = (x[2j], x[2j+1]); "half" (a, b) = (x[j], x[j + hd/2])."""
    if pairs == "interleaved":
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)
    if pairs == "half":
        a, b = x.chunk(2, dim=-1)
        return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)
    raise ValueError(f"pairs '{pairs}' is not accepted; interleaved or half")


def score_mask(Tq, Tk, *, causal=True, offset=0, attn_mask=None, key_padding_mask=None, device=None,
               dtype=torch.float32):
    """What attention may see, as (allowed, bias): allowed a bool tensor broadcasting to (B, H, Tq, Tk) or None
    (everything), bias a float tensor to add to the scores or None. Queries are at positions offset ..
    offset + Tq - 1, keys at 0 .. Tk - 1; causal: key j is seen by query i when j <= offset + i."""
    allowed, bias = None, None
    if causal:
        allowed = (torch.arange(Tk, device=device)[None, :] <=
                   offset + torch.arange(Tq, device=device)[:, None])
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            m = attn_mask
        else:
            m = attn_mask != float("-inf")
            bias = attn_mask.masked_fill(~m, 0).to(dtype)
        allowed = m if allowed is None else allowed & m
    if key_padding_mask is not None:
        if key_padding_mask.dtype != torch.bool:
            raise ValueError("key_padding_mask: a bool tensor (batch, keys), True at padding")
        kp = ~key_padding_mask[:, None, None, :]
        allowed = kp if allowed is None else allowed & kp
    return allowed, bias


def masked_softmax(s, allowed):
    """softmax over the last axis of s where allowed (None: everywhere); a row with nothing allowed gives
    zeros, with finite gradients."""
    if allowed is None:
        return s.softmax(dim=-1)
    empty = ~allowed.any(dim=-1, keepdim=True)
    p = s.masked_fill(~(allowed | empty), float("-inf")).softmax(dim=-1)
    return p.masked_fill(empty, 0.0)


def attend(q, k, v, *, causal=True, offset=0, attn_mask=None, key_padding_mask=None, bias=None, scale=None,
           dropout=0.0):
    """softmax(q k^T scale + bias + mask) v for q (B, H, Tq, hd) and k, v (B, H, Tk, hd): the scaled dot product
    attention every scheme ends in (score_mask says what the masks mean; bias, e.g. ALiBi's or the forget
    gate's, broadcasts to (B, H, Tq, Tk)). dropout: on the probabilities, as in training. PyTorch 2's fused
    scaled_dot_product_attention where present, else the same sum written out."""
    Tq, Tk, hd = q.shape[2], k.shape[2], q.shape[3]
    allowed, mask_bias = score_mask(Tq, Tk, causal=causal, offset=offset, attn_mask=attn_mask,
                                    key_padding_mask=key_padding_mask, device=q.device, dtype=q.dtype)
    if mask_bias is not None:
        bias = mask_bias if bias is None else bias + mask_bias
    default_scale = 1.0 / math.sqrt(hd)
    scale = default_scale if scale is None else scale
    if FUSED:
        if scale != default_scale:
            q = q * (scale / default_scale)
        if bias is None and attn_mask is None and key_padding_mask is None and causal and Tq == Tk and offset == 0:
            return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout, is_causal=True)
        empty = None
        if allowed is not None:
            empty = ~allowed.any(dim=-1, keepdim=True)
            allowed = allowed | empty
        mask = allowed if bias is None else (
            bias if allowed is None else torch.where(allowed, bias, torch.tensor(float("-inf"), device=q.device,
                                                                                 dtype=bias.dtype)))
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout)
        return o if empty is None else o.masked_fill(empty, 0.0)
    s = (q @ k.transpose(-2, -1)) * scale
    if bias is not None:
        s = s + bias
    p = masked_softmax(s, allowed)
    if dropout:
        p = F.dropout(p, dropout)
    return p @ v


def to_bhtd(x, layout):
    if layout not in LAYOUTS:
        raise ValueError(f"layout '{layout}' is not accepted; bthd (batch, time, heads, head_dim) or bhtd "
                         "(batch, heads, time, head_dim, scaled_dot_product_attention's)")
    return x.transpose(1, 2) if layout == "bthd" else x


def _angles_bhtd(theta, layout, H, nb, T, what="theta"):
    """theta as (B, 1 or H, T, nb): shared (B, T, nb), or per head (B, T, H, nb) in bthd or (B, H, T, nb) in
    bhtd."""
    if theta.dim() == 3 and theta.shape[1:] == (T, nb):
        return theta[:, None]
    if theta.dim() == 4:
        th = theta.transpose(1, 2) if layout == "bthd" else theta
        if th.shape[1:] == (H, T, nb):
            return th
    per_head = "(B, T, H, hd/2)" if layout == "bthd" else "(B, H, T, hd/2)"
    raise ValueError(f"{what} has shape {tuple(theta.shape)}; (B, T, hd/2) = (B, {T}, {nb}) or per head "
                     f"{per_head} in layout {layout}, with T the keys' length")


def accumulated_rotary_attention(q, k, v, theta=None, *, layout="bthd", transport_values=False, slopes=None,
                                 log_forget=None, causal=True, attn_mask=None, key_padding_mask=None, scale=None,
                                 offset=None, pairs="interleaved", dropout=0.0):
    """Attention of q (B, Tq, H, hd) over k, v (B, Tk, H, hd) (layout "bthd"; "bhtd" takes (B, H, T, hd), as
    scaled_dot_product_attention does, and returns that) with every scheme's score terms.

    theta: the accumulated angles of the keys' positions (any dtype, wrapped in float64): (B, Tk, hd/2) shared
    by the heads or per head (B, Tk, H, hd/2), (B, H, Tk, hd/2) in bhtd. Pair j of q and k at position t is
    turned by theta[t, j] (transport_values: v too, and the output back by the query's -theta).
    slopes (H,): ALiBi's -m_h (i - j). log_forget (B, Tk, H) ((B, H, Tk) in bhtd): the forget gate's
    cum_i - cum_j, cum the running sum of log forget gates (formed in float64; 0 at padding).
    The queries are the positions offset .. offset + Tq - 1 of the keys' (default offset Tk - Tq: the last
    ones, as when decoding with the keys and values of earlier positions kept: pass them all with their
    angles). causal (default), attn_mask, key_padding_mask (B, Tk): as in rotary.py's docstring. scale:
    1/sqrt(hd) by default. pairs: "interleaved" or "half". Returns q's shape and dtype."""
    q, k, v = (to_bhtd(x, layout) for x in (q, k, v))
    B, H, Tq, hd = q.shape
    Tk = k.shape[2]
    if k.shape != (B, H, Tk, hd) or v.shape != k.shape:
        raise ValueError(f"q, k and v do not fit together in layout {layout}: {tuple(q.shape)}, {tuple(k.shape)}, "
                         f"{tuple(v.shape)} as (B, H, T, hd)")
    offset = Tk - Tq if offset is None else offset
    if not 0 <= offset <= Tk - Tq:
        raise ValueError(f"offset {offset} is not accepted; the queries must lie among the keys: 0 .. {Tk - Tq}")
    rot = None
    if theta is not None:
        th = _angles_bhtd(theta, layout, H, hd // 2, Tk)
        cos, sin = cos_sin(th, q.dtype)
        rot = (cos[:, :, offset:offset + Tq], sin[:, :, offset:offset + Tq])
        q, k = rotate(q, *rot, pairs), rotate(k, cos, sin, pairs)
        if transport_values:
            v = rotate(v, cos, sin, pairs)
    bias = None
    if slopes is not None:
        i = offset + torch.arange(Tq, device=q.device)
        dist = (i[:, None] - torch.arange(Tk, device=q.device)[None, :]).double()
        dist = dist if causal else dist.abs()
        bias = -(slopes.double()[:, None, None] * dist)[None].to(q.dtype)
    if log_forget is not None:
        if not causal:
            raise ValueError("log_forget: the forget gate decays the past; it needs causal=True")
        lf = log_forget.transpose(1, 2) if layout == "bthd" else log_forget
        if key_padding_mask is not None:  # a padded position does not decay the past
            lf = lf.masked_fill(key_padding_mask[:, None, :], 0.0)
        cum = torch.cumsum(lf.double(), dim=2)  # (B, H, Tk)
        fb = (cum[:, :, offset:offset + Tq, None] - cum[:, :, None, :]).to(q.dtype)
        bias = fb if bias is None else bias + fb
    o = attend(q, k, v, causal=causal, offset=offset, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
               bias=bias, scale=scale, dropout=dropout)
    if rot is not None and transport_values:
        o = rotate(o, rot[0], -rot[1], pairs)
    return o.transpose(1, 2) if layout == "bthd" else o
