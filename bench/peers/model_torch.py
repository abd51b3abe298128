#!/usr/bin/python3
"""routelab's byte-level transformer in PyTorch, every scheme, built from a `routelab export` file alone.

  /usr/bin/python3 bench/peers/model_torch.py MODEL.safetensors --val CORPUS/val.txt --lengths 16,64
      [--losses LOSSES.csv] [--eval-csv EVAL.csv] [--dtype float64|float32] [--threads N]
  /usr/bin/python3 bench/peers/model_torch.py --self-test

Reads the weights and the configuration from the file (docs/export.md: the
tensor names, their shapes, the metadata) with numpy and json (no safetensors
package needed), and scores the validation stream as `routelab eval` does
(lib/runs/eval.cpp): consecutive windows of L bytes, window w predicting bytes
w L + 1 .. w L + L, max(1, 8192 // L) windows per forward pass, pass i drawing
its random angles from Philox streams with pass id 2^36 + i (bench/peers/
philox.py), so the random schemes see the same angles. Prints one CSV row per
length: eval_len,windows,tokens,bits_per_byte.

With --losses (the CSV `routelab eval --losses` writes) and --eval-csv (its
eval.csv) it compares: per length the relative difference of bits per byte
and the largest per-position difference |a - b| / max(1, |b|); a line per
length, and exit status 1 when either passes its tolerance (--tol-bpb 1e-5,
--tol-loss 1e-4). The reference computes in float64 (--dtype), so the
figures measure routelab's float32 rounding.

The model (lib/nn/model.cpp and the files it calls):
  x = embed[tokens]; per layer x += attn(ln1(x)); x += mlp(ln2(x)); logits =
  ln_f(x) embed^T (tied, no bias); loss = logsumexp(logits) - logit[target].
  LayerNorm: biased variance, eps 1e-5. MLP: Linear, GELU (tanh form), Linear.
  attn: q, k, v = Linear(h) each (C x C), heads of hd = C / H contiguous;
  scores q k^T / sqrt(hd) (+ ALiBi's -m_h (i - j), + the forget gate's
  cum_i - cum_j), causal softmax, times v; heads side by side; Linear (wo).
  Rotary schemes rotate pair (2j, 2j+1) of each head of q and k by theta_{t,j}
  (the _qkv ones and rope_qkv also v_j by +theta_j and the output of query i
  by -theta_i); theta kept in double and wrapped to [-pi, pi]:
    rope       t f_j, f_j = rope_base^(-2j/hd)
    random     running sum of angle_scale f_j (2u - 1), u ~ U(0,1) from
               stream (seed, 3 << 62 | pass << 24 | layer << 16 | b)
    learned    running sum of table[x_s] (per layer, or one shared table)
    projected  running sum of psi_s = psi.w ln1(x_s) + psi.b
  forget gate: cum_t = sum_{l <= t} log sigmoid(forget.w h_l + forget.b)
  householder (PaTH): s_ij = k_j^T H_{j+1} ... H_i q_i / sqrt(hd), H_t = I -
    beta_t w_t w_t^T, w_t = unit(head slice of householder.w h_t +
    householder.b), beta_t = 2 sigmoid(householder.u h_t + householder.c)
    ("path") or 2 ("reflection"); _qkv carries v_j to i by H_i ... H_{j+1}.
"""
import argparse
import hashlib
import json
import math
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import philox  # noqa: E402

# lib/nn/scheme.cpp: angles, values transported, ALiBi, forget gate, Householder.
SCHEMES = {
    "nope": ("none", False, False, False, False),
    "rope": ("rope", False, False, False, False),
    "rope_qkv": ("rope", True, False, False, False),
    "random_qk": ("random", False, False, False, False),
    "random_qkv": ("random", True, False, False, False),
    "learned_qk": ("learned", False, False, False, False),
    "learned_qkv": ("learned", True, False, False, False),
    "alibi": ("none", False, True, False, False),
    "learned_qkv_alibi": ("learned", True, True, False, False),
    "random_qkv_alibi": ("random", True, True, False, False),
    "learned_qkv_forget": ("learned", True, False, True, False),
    "householder_qk": ("none", False, False, False, True),
    "householder_qkv": ("none", True, False, False, True),
    "projected_qk": ("projected", False, False, False, False),
    "projected_qkv": ("projected", True, False, False, False),
}

EVAL_PASS = 1 << 36  # lib/runs/eval.h kEvalPass
TWO_PI = 2.0 * math.pi


def load_safetensors(path):
    """{name: float32 array of its shape}, {metadata}: the format read with numpy and json, the data checked
    against the header's params_sha256."""
    with open(path, "rb") as f:
        buf = f.read()
    n = int.from_bytes(buf[:8], "little")
    header = json.loads(buf[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = memoryview(buf)[8 + n:]
    if "params_sha256" in meta and hashlib.sha256(data).hexdigest() != meta["params_sha256"]:
        raise SystemExit(f"model_torch.py: {path}: its data's sha256 is not the params_sha256 of its header (damaged)")
    tensors = {}
    for name, e in header.items():
        if e["dtype"] != "F32":
            raise SystemExit(f"model_torch.py: {path}: tensor {name} is {e['dtype']}, not F32")
        b, end = e["data_offsets"]
        tensors[name] = np.frombuffer(data[b:end], dtype="<f4").reshape(e["shape"])
    return tensors, meta


def alibi_slopes(heads):
    """lib/nn/scheme.cpp alibi_slopes (Press et al.)."""
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
    return s


def wrap(x):
    """std::remainder(x, 2 pi): into [-pi, pi]."""
    return x - TWO_PI * torch.round(x / TWO_PI)


def rotate(x, rot):
    """Pairs (2j, 2j+1) of the last axis: (a, b) -> (a cos - b sin, a sin + b cos), as the complex product
    (a + i b) rot with rot = cos + i sin (broadcast against (..., hd/2))."""
    pairs = torch.view_as_complex(x.reshape(*x.shape[:-1], x.shape[-1] // 2, 2).contiguous())
    return torch.view_as_real(pairs * rot).flatten(-2)


def householder_step(x, w, beta):
    """H x = x - beta w (w . x) for x (B, H, N, hd), w (B, H, hd), beta (B, H)."""
    alpha = torch.einsum("bhnd,bhd->bhn", x, w)
    return x - (beta[:, :, None] * alpha)[..., None] * w[:, :, None, :]


class RoutelabModel:
    def __init__(self, tensors, meta, dtype=None):
        self.dtype = dtype or torch.float64
        self.m = json.loads(meta["model"])
        self.seed = int(meta["seed"])
        m = self.m
        if m["scheme"] not in SCHEMES:
            raise SystemExit(f"model_torch.py: scheme '{m['scheme']}' is not one this peer knows")
        self.angles, self.values, self.alibi, self.forget, self.householder = SCHEMES[m["scheme"]]
        self.C, self.H, self.L = m["d_model"], m["heads"], m["layers"]
        self.hd = self.C // self.H
        self.nb = self.hd // 2
        self.freqs = torch.tensor([m["rope_base"] ** (-2.0 * j / self.hd) for j in range(self.nb)],
                                  dtype=torch.float64)
        self.path_beta = m.get("householder_beta", "path") == "path"
        self.t = {k: torch.from_numpy(np.array(v)).to(self.dtype) for k, v in tensors.items()}
        self.slopes = torch.tensor(alibi_slopes(self.H), dtype=torch.float64) if self.alibi else None

    def p(self, name):
        return self.t[name]

    def theta(self, l, tokens, h, pass_id):
        """(B, T, nb) float64 angles of layer l, wrapped."""
        B, T = tokens.shape
        if self.angles == "rope":
            th = torch.arange(T, dtype=torch.float64)[:, None] * self.freqs[None, :]
            return wrap(th).expand(B, T, self.nb)
        if self.angles == "random":
            streams = [(3 << 62) | (pass_id << 24) | (l << 16) | b for b in range(B)]
            u = torch.from_numpy(philox.stream_uniforms(self.seed, streams, T * self.nb)).view(B, T, self.nb)
            inc = (self.m["angle_scale"] * self.freqs) * (2.0 * u - 1.0)
        elif self.angles == "learned":
            name = f"layers.{l}.angles"
            table = self.t[name] if name in self.t else self.t["angles"]
            inc = table.double()[tokens]
        else:  # projected
            inc = (h @ self.p(f"layers.{l}.psi.w").T + self.p(f"layers.{l}.psi.b")).double()
        return wrap(torch.cumsum(inc, dim=1))

    def attention(self, l, h, tokens, pass_id):
        B, T, C = h.shape
        H, hd = self.H, self.hd
        pre = f"layers.{l}.attn."
        heads = lambda x: x.view(B, T, H, hd).transpose(1, 2)  # noqa: E731  (B, H, T, hd)
        q = heads(h @ self.p(pre + "wq").T + self.p(pre + "bq"))
        k = heads(h @ self.p(pre + "wk").T + self.p(pre + "bk"))
        v = heads(h @ self.p(pre + "wv").T + self.p(pre + "bv"))
        rot = None
        if self.angles != "none":
            th = self.theta(l, tokens, h, pass_id)[:, None]  # (B, 1, T, nb)
            rot = torch.complex(th.cos().to(self.dtype), th.sin().to(self.dtype))
            q, k = rotate(q, rot), rotate(k, rot)
            if self.values:
                v = rotate(v, rot)
        scale = 1.0 / math.sqrt(hd)
        causal = torch.ones(T, T, dtype=torch.bool).tril_()
        if self.householder:
            z = (h @ self.p(f"layers.{l}.householder.w").T + self.p(f"layers.{l}.householder.b")).view(B, T, H, hd)
            w = (z / z.norm(dim=-1, keepdim=True).clamp_min(1e-12)).transpose(1, 2)  # (B, H, T, hd)
            if self.path_beta:
                r = h @ self.p(f"layers.{l}.householder.u").T + self.p(f"layers.{l}.householder.c")  # (B, T, H)
                beta = 2.0 * torch.sigmoid(r).transpose(1, 2)  # (B, H, T)
            else:
                beta = torch.full((B, H, T), 2.0, dtype=self.dtype)
            # s_ij = k_j . (H_{j+1} ... H_i q_i): every query's carried vector, keys from the last down.
            # U holds queries j .. T-1 (those below j see key j only through the mask).
            S = torch.zeros(B, H, T, T, dtype=self.dtype)
            U = q[:, :, T:]
            for j in range(T - 1, -1, -1):
                U = torch.cat((q[:, :, j:j + 1], U), dim=2)
                S[:, :, j:, j] = torch.einsum("bhnd,bhd->bhn", U, k[:, :, j])
                U = householder_step(U, w[:, :, j], beta[:, :, j])
            P = (S * scale).masked_fill(~causal, float("-inf")).softmax(dim=-1)
            if self.values:
                # o_i = sum_j p_ij H_i ... H_{j+1} v_j: the accumulators of queries j .. T-1, keys from the
                # first up; query j's is done at key j.
                A = torch.zeros_like(q)
                o = torch.empty_like(q)
                for j in range(T):
                    if j > 0:
                        A = householder_step(A[:, :, 1:], w[:, :, j], beta[:, :, j])
                    A = A + P[:, :, j:, j, None] * v[:, :, j, None, :]
                    o[:, :, j] = A[:, :, 0]
            else:
                o = P @ v
        else:
            S = (q @ k.transpose(-2, -1)) * scale
            if self.alibi:
                dist = (torch.arange(T)[:, None] - torch.arange(T)[None, :]).to(torch.float64)
                S = S - (self.slopes[:, None, None] * dist).to(self.dtype)
            if self.forget:
                zf = h @ self.p(f"layers.{l}.forget.w").T + self.p(f"layers.{l}.forget.b")  # (B, T, H)
                cum = torch.cumsum(torch.nn.functional.logsigmoid(zf.double()), dim=1).to(self.dtype).transpose(1, 2)
                S = S + cum[:, :, :, None] - cum[:, :, None, :]
            o = S.masked_fill(~causal, float("-inf")).softmax(dim=-1) @ v
        if rot is not None and self.values:
            o = rotate(o, rot.conj())
        y = o.transpose(1, 2).reshape(B, T, C)
        return y @ self.p(pre + "wo").T + self.p(pre + "bo")

    def layer_norm(self, x, name):
        return torch.nn.functional.layer_norm(x, (self.C,), self.p(name + ".weight"), self.p(name + ".bias"), 1e-5)

    def losses(self, tokens, targets, pass_id):
        """Per-position cross-entropy (nats), (B, T); tokens, targets int64 (B, T)."""
        x = self.p("embed")[tokens]
        for l in range(self.L):
            x = x + self.attention(l, self.layer_norm(x, f"layers.{l}.ln1"), tokens, pass_id)
            h = self.layer_norm(x, f"layers.{l}.ln2")
            pre = f"layers.{l}.mlp."
            f = torch.nn.functional.gelu(h @ self.p(pre + "wfc").T + self.p(pre + "bfc"), approximate="tanh")
            x = x + f @ self.p(pre + "wproj").T + self.p(pre + "bproj")
        logits = self.layer_norm(x, "ln_f") @ self.p("embed").T
        return torch.logsumexp(logits, dim=-1) - logits.gather(-1, targets[..., None])[..., 0]


def evaluate(model, stream, L):
    """Every position's loss (nats), window by window: lib/runs/eval.cpp's windows and passes."""
    windows = (len(stream) - 1) // L
    batch = max(1, 8192 // L)
    s = torch.from_numpy(stream.astype(np.int64))
    out = []
    for p, w0 in enumerate(range(0, windows, batch)):
        B = min(batch, windows - w0)
        idx = (w0 + torch.arange(B))[:, None] * L + torch.arange(L)[None, :]
        with torch.no_grad():
            out.append(model.losses(s[idx], s[idx + 1], EVAL_PASS + p).double().reshape(-1))
    return torch.cat(out).numpy(), windows


def read_losses(path):
    """routelab eval --losses: {eval_len: array of nats in window, position order}."""
    a = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    return {int(L): a[a[:, 0] == L][:, 3] for L in np.unique(a[:, 0])}


def read_eval_bpb(path):
    """routelab eval's CSV: {eval_len: bits_per_byte}."""
    with open(path) as f:
        head = f.readline().strip().split(",")
        rows = [dict(zip(head, line.strip().split(","))) for line in f if line.strip()]
    return {int(r["eval_len"]): float(r["bits_per_byte"]) for r in rows}


# How close routelab's numbers must be: bits per byte relative, each position's loss as |a - b| / max(1, |b|).
TOL_BPB, TOL_LOSS = 1e-5, 1e-4


def compare(model, stream, L, their_bpb=None, their_losses=None):
    """The model over `stream` in windows of L, against routelab's numbers where given: (our per-position losses,
    windows, bits per byte, the relative difference from their_bpb or None, the largest per-position difference
    from their_losses, inf where those are not the same positions, or None)."""
    ours, windows = evaluate(model, stream, L)
    bpb = ours.sum() / len(ours) / math.log(2.0)
    rel = None if their_bpb is None else abs(their_bpb - bpb) / abs(bpb)
    if their_losses is None:
        worst = None
    elif len(their_losses) != len(ours):
        worst = math.inf
    else:
        worst = float((np.abs(their_losses - ours) / np.maximum(1.0, np.abs(ours))).max())
    return ours, windows, bpb, rel, worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model", nargs="?", help="a routelab export file (.safetensors)")
    ap.add_argument("--val", help="the validation stream (CORPUS/val.txt; default: the run's corpus)")
    ap.add_argument("--lengths", default="", help="comma-separated window lengths (default: the training length)")
    ap.add_argument("--losses", help="routelab eval --losses CSV to compare with")
    ap.add_argument("--eval-csv", help="routelab eval's CSV (bits per byte) to compare with")
    ap.add_argument("--tol-bpb", type=float, default=TOL_BPB)
    ap.add_argument("--tol-loss", type=float, default=TOL_LOSS)
    ap.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--self-test", action="store_true", help="Philox4x32-10 against Random123's known answers")
    a = ap.parse_args()
    philox.self_test()  # always: the random schemes rest on it
    if a.self_test:
        print("philox4x32-10: the 3 known-answer vectors of Random123 match")
        if not a.model:
            return 0
    if not a.model:
        ap.error("name a .safetensors file (or --self-test)")
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    tensors, meta = load_safetensors(a.model)
    model = RoutelabModel(tensors, meta, getattr(torch, a.dtype))
    val = a.val or os.path.join(json.loads(meta["config"])["data"]["corpus"], "val.txt")
    stream = np.fromfile(val, dtype=np.uint8)
    lengths = [int(x) for x in a.lengths.split(",")] if a.lengths else [model.m["context"]]
    theirs = read_losses(a.losses) if a.losses else {}
    their_bpb = read_eval_bpb(a.eval_csv) if a.eval_csv else {}
    ok = True
    print("eval_len,windows,tokens,bits_per_byte")
    for L in lengths:
        ours, windows, bpb, rel, d = compare(model, stream, L, their_bpb.get(L), theirs.get(L) if a.losses else None)
        print(f"{L},{windows},{len(ours)},{bpb!r}", flush=True)
        if rel is not None:
            good = rel <= a.tol_bpb
            ok &= good
            print(f"# {meta['scheme']} L={L}: bits/byte torch {bpb:.9f} routelab {their_bpb[L]:.9f}, relative "
                  f"difference {rel:.2e} ({'ok' if good else 'FAILS'} at {a.tol_bpb:g})", file=sys.stderr)
        if a.losses:
            if L not in theirs or d == math.inf:
                print(f"# {meta['scheme']} L={L}: {a.losses} has no losses at this length, or not {len(ours)}",
                      file=sys.stderr)
                ok = False
                continue
            good = d <= a.tol_loss
            ok &= good
            print(f"# {meta['scheme']} L={L}: per-position losses, largest |a - b| / max(1, |b|) {d:.2e} "
                  f"({'ok' if good else 'FAILS'} at {a.tol_loss:g}) over {len(ours)} positions", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
