"""PaTH's Householder transport (Yang et al., 2025) as a function over tensors, in its blocked form at matrix
speed, beside the plain position-by-position reference it is tested against (lib/nn/householder.cpp and
householder_blocked.cpp are the C++ model's).

  H_t = I - beta_t w_t w_t^T;  s_ij = k_j^T H_{j+1} ... H_i q_i / sqrt(hd)  (j <= i);  p = softmax_j(s + forget)
  o_i = sum_j p_ij v_j,  or with value transport  o_i = sum_j p_ij H_i ... H_{j+1} v_j.

The blocked form cuts the sequence into chunks of C positions. A chunk's product H_s ... H_e is
I - W^T S W with W its directions (rows) and S = (I + diag(beta) striu(W W^T))^{-1} diag(beta), upper
triangular (the UT transform: the compact WY form of Eigen's BlockHouseholder and PaTH's kernels); S's
diagonal block over any run of positions inside the chunk is that run's own S, so a product over part of a
chunk is a masked product of the same matrices. Queries are carried back to their chunk's start and keys
(and values) forward to their chunk's end once. Then one loop over the chunks: chunk c's queries meet every
earlier key, already carried to c's start, in one product, beside c's own block; a row's softmax needs no
other chunk; and before chunk c + 1 all those keys go through chunk c (one product with its W and S) and c's
own join them. Transported values ride with the keys and come out through the same masked product as the
queries went in. Cost of the forward: about 2 T^2 hd multiply-adds per head (the carried keys T^2 hd, the
causal scores and sums T^2 hd), all in matrix products.
"""
import math

import torch

from .rotary import LAYOUTS, masked_softmax, score_mask, to_bhtd

DEFAULT_CHUNK = 64


def householder_step(x, w, beta):
    """H x = x - beta w (w . x) for x (B, H, N, hd), w (B, H, hd), beta (B, H): one step applied to N vectors."""
    alpha = torch.einsum("bhnd,bhd->bhn", x, w)
    return x - (beta[:, :, None] * alpha)[..., None] * w[:, :, None, :]


def _inputs(q, k, v, w, beta, log_forget, layout, key_padding_mask):
    """(B, H, T, hd) tensors and (B, H, T) beta and log_forget, whatever the layout; a padded position's step
    is the identity (beta 0) and its forget gate open (log 0)."""
    if layout not in LAYOUTS:
        to_bhtd(q, layout)  # raises the one-line refusal
    q, k, v, w = (to_bhtd(x, layout) for x in (q, k, v, w))
    if layout == "bthd":
        beta = beta.transpose(1, 2)
        log_forget = None if log_forget is None else log_forget.transpose(1, 2)
    if not (q.shape == k.shape == v.shape == w.shape) or beta.shape != q.shape[:3]:
        raise ValueError(f"householder_attention: q, k, v and w must share one shape and beta be it without "
                         f"head_dim; got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}, {tuple(w.shape)}, "
                         f"beta {tuple(beta.shape)} (as B, H, T, hd)")
    if key_padding_mask is not None:
        beta = beta.masked_fill(key_padding_mask[:, None, :], 0.0)
        log_forget = None if log_forget is None else log_forget.masked_fill(key_padding_mask[:, None, :], 0.0)
    return q, k, v, w, beta, log_forget


def _forget_bias(log_forget, dtype):
    """cum_i - cum_j of the running log forget gates, (B, H, T, T), formed in float64."""
    cum = torch.cumsum(log_forget.double(), dim=2)
    return (cum[:, :, :, None] - cum[:, :, None, :]).to(dtype)


def householder_attention(q, k, v, w, beta, log_forget=None, *, scale=None, transport_values=False,
                          attn_mask=None, key_padding_mask=None, dropout=0.0, chunk=DEFAULT_CHUNK, layout="bthd"):
    """Causal PaTH attention of q, k, v (B, T, H, hd) (layout "bthd", like flash-linear-attention's
    parallel_path_attn; "bhtd" takes (B, H, T, hd)) under the steps w (same shape, unit vectors: normalise
    them first) and beta (B, T, H) in [0, 2] (2 reflects; PaTH's 2 sigmoid(.)). log_forget (B, T, H): adds the
    forget gate's cum_i - cum_j (FoX, PaTH-FoX). scale: 1/sqrt(hd) by default. transport_values: values carried
    by the same steps (routelab's householder_qkv). attn_mask, key_padding_mask (B, T, True at padding): as in
    rotary.py; a padded position's step is the identity. dropout: on the probabilities. chunk: positions per
    block (the result does not depend on it beyond rounding). Returns q's shape and dtype."""
    q, k, v, w, beta, log_forget = _inputs(q, k, v, w, beta, log_forget, layout, key_padding_mask)
    B, H, T, D = q.shape
    C = max(1, min(int(chunk), T))
    N = -(-T // C)
    pad = N * C - T
    pad_t = lambda x: torch.nn.functional.pad(x, (0, pad)) if pad else x  # noqa: E731  the last axis
    if pad:  # steps of size 0 (the identity), keys after every real query
        q, k, v, w = (torch.nn.functional.pad(x, (0, 0, 0, pad)) for x in (q, k, v, w))
        beta = pad_t(beta)
    q, k, v, w = (x.reshape(B, H, N, C, D) for x in (q, k, v, w))
    beta = beta.reshape(B, H, N, C)
    wT = w.transpose(-1, -2)
    eye = torch.eye(C, device=q.device, dtype=q.dtype)
    upto = torch.ones(C, C, device=q.device, dtype=q.dtype).tril()  # (i, b): b <= i
    after = torch.ones(C, C, device=q.device, dtype=q.dtype).triu(1)  # (j, a): a > j
    # The UT transform: each chunk's S, upper triangular.
    G = (w @ wT).triu(1)
    S = torch.linalg.solve_triangular(eye + beta[..., :, None] * G, torch.diag_embed(beta), upper=True,
                                      unitriangular=True)
    SW = S @ w
    Y = ((q @ wT) * upto) @ S.transpose(-1, -2)  # (i, a): query i's coefficients on w_a, a <= i
    q_start = q - Y @ w  # H_s ... H_i q_i: each query carried back to its chunk's start
    Xk = (k @ wT) * after  # (j, a): k_j . w_a for a > j
    intra = q @ k.transpose(-1, -2) - Y @ Xk.transpose(-1, -2)  # (i, j), j <= i in one chunk
    carried = (k - Xk @ SW)[:, :, :, None]  # (B, H, N, 1, C, D): H_e ... H_{j+1} k_j, keys at their chunk's end
    if transport_values:
        Xv = (v @ wT) * after
        carried = torch.cat((carried, (v - Xv @ SW)[:, :, :, None]), dim=3)  # values too: the same product

    scale = 1.0 / math.sqrt(D) if scale is None else scale
    allowed, bias = score_mask(T, T, causal=False, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                               device=q.device, dtype=q.dtype)
    if pad and allowed is not None:
        allowed = torch.nn.functional.pad(allowed.expand(*allowed.shape[:-2], T, T), (0, pad, 0, pad), value=True)
    if pad and bias is not None:
        bias = torch.nn.functional.pad(bias.expand(*bias.shape[:-2], T, T), (0, pad, 0, pad))
    cum = None if log_forget is None else pad_t(torch.cumsum(log_forget.double(), dim=2))
    ones = torch.ones(C, (N - 1) * C, device=q.device, dtype=torch.bool)
    tril = upto.bool()
    outs = []
    past = None  # (B, H, 1 or 2, c C, D): the keys (and values) of the chunks before c, carried to c's start
    for c in range(N):
        rows, cols = slice(c * C, (c + 1) * C), (c + 1) * C
        s = intra[:, :, c] if past is None else torch.cat((q_start[:, :, c] @ past[:, :, 0].transpose(-1, -2),
                                                           intra[:, :, c]), dim=-1)
        s = s * scale
        if cum is not None:
            s = s + (cum[:, :, rows, None] - cum[:, :, None, :cols]).to(s.dtype)
        if bias is not None:
            s = s + bias[..., rows, :cols]
        see = torch.cat((ones[:, :c * C], tril), dim=1)
        if allowed is not None:
            see = see & allowed[..., rows, :cols]
        p = masked_softmax(s, see)
        if dropout:
            p = torch.nn.functional.dropout(p, dropout)
        Pd = p[..., c * C:]
        o = Pd @ v[:, :, c]
        if not transport_values:
            if c:
                o = o + p[..., :c * C] @ v[:, :, :c].reshape(B, H, c * C, D)
        else:
            # o_i = H_i ... H_s (the carried past values, weighted) + the chunk's own values carried to i: both
            # terms through the same masked product of the chunk's steps.
            inner = Pd @ Xv[:, :, c]
            if c:
                gathered = p[..., :c * C] @ past[:, :, 1]
                o = o + gathered
                inner = inner + gathered @ wT[:, :, c]
            o = o - ((inner @ S[:, :, c]) * upto) @ w[:, :, c]
        outs.append(o)
        if c < N - 1:  # every earlier key (and value) through chunk c, then chunk c's own after them
            if past is None:
                past = carried[:, :, c]
            else:
                past = past - (past @ wT[:, :, c, None]) @ SW[:, :, c, None]
                past = torch.cat((past, carried[:, :, c]), dim=3)
    o = torch.stack(outs, dim=2).reshape(B, H, N * C, D)[:, :, :T]
    return o.transpose(1, 2) if layout == "bthd" else o


def householder_attention_reference(q, k, v, w, beta, log_forget=None, *, scale=None, transport_values=False,
                                    attn_mask=None, key_padding_mask=None, layout="bthd"):
    """householder_attention position by position, as the definition reads (no blocks): the reference the
    blocked form is tested against. Slow (a Python loop over positions)."""
    q, k, v, w, beta, log_forget = _inputs(q, k, v, w, beta, log_forget, layout, key_padding_mask)
    B, H, T, D = q.shape
    # S[i, j] = k_j . (H_{j+1} ... H_i q_i): every query carried back key by key, from the last key down.
    cols = []
    U = q.new_zeros(B, H, 0, D)  # queries j .. T-1, carried back to position j
    for j in range(T - 1, -1, -1):
        U = torch.cat((q[:, :, j:j + 1], U), dim=2)
        cols.append(torch.cat((q.new_zeros(B, H, j), torch.einsum("bhnd,bhd->bhn", U, k[:, :, j])), dim=2))
        U = householder_step(U, w[:, :, j], beta[:, :, j])
    s = torch.stack(cols[::-1], dim=3) * (1.0 / math.sqrt(D) if scale is None else scale)
    if log_forget is not None:
        s = s + _forget_bias(log_forget, s.dtype)
    allowed, bias = score_mask(T, T, attn_mask=attn_mask, key_padding_mask=key_padding_mask, device=q.device,
                               dtype=q.dtype)
    p = masked_softmax(s if bias is None else s + bias, allowed)
    if not transport_values:
        o = p @ v
    else:
        # The accumulators of queries j .. T-1, keys from the first up; query j's is done at key j.
        A = q.new_zeros(B, H, T, D)
        outs = []
        for j in range(T):
            if j > 0:
                A = householder_step(A[:, :, 1:], w[:, :, j], beta[:, :, j])
            A = A + p[:, :, j:, j, None] * v[:, :, j, None, :]
            outs.append(A[:, :, 0])
        o = torch.stack(outs, dim=2)
    return o.transpose(1, 2) if layout == "bthd" else o
