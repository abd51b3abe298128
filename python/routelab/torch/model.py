"""routelab's byte-level transformer as a torch.nn.Module, built from a `routelab export` file alone
(docs/export.md: the tensor names, their shapes, the metadata), and `routelab eval`'s scoring loop.

The model (lib/nn/model.cpp and the files it calls):
  x = embed[tokens]; per layer x += attn(ln1(x)); x += mlp(ln2(x)); logits = ln_f(x) embed^T (tied, no bias);
  loss = logsumexp(logits) - logit[target]. LayerNorm: biased variance, eps 1e-5. MLP: Linear, GELU (tanh
  form), Linear. attn: routelab.torch.attention.SchemeAttention of the run's scheme.
"""
import hashlib
import json
import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .attention import EVAL_PASS, SCHEMES, _linear, attention_for_scheme, default_pass


def load_safetensors(path):
    """{name: float32 array of its shape}, {metadata}: the format read with numpy and json (no safetensors
    package needed), the data checked against the header's params_sha256 (ValueError when it differs)."""
    with open(path, "rb") as f:
        buf = f.read()
    n = int.from_bytes(buf[:8], "little")
    header = json.loads(buf[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = memoryview(buf)[8 + n:]
    if "params_sha256" in meta and hashlib.sha256(data).hexdigest() != meta["params_sha256"]:
        raise ValueError(f"{path}: its data's sha256 is not the params_sha256 of its header (damaged)")
    tensors = {}
    for name, e in header.items():
        if e["dtype"] != "F32":
            raise ValueError(f"{path}: tensor {name} is {e['dtype']}, not F32")
        b, end = e["data_offsets"]
        tensors[name] = np.frombuffer(data[b:end], dtype="<f4").reshape(e["shape"])
    return tensors, meta


class _MLP(nn.Module):
    def __init__(self, C, F_, device, dtype):
        super().__init__()
        self.fc = _linear(F_, C, True, device, dtype)
        self.proj = _linear(C, F_, True, device, dtype)

    def forward(self, h):
        return self.proj(F.gelu(self.fc(h), approximate="tanh"))


class _Block(nn.Module):
    def __init__(self, m, layer, seed, device, dtype, table):
        super().__init__()
        C = m["d_model"]
        self.ln1 = nn.LayerNorm(C, eps=1e-5, device=device, dtype=dtype)
        self.attn = attention_for_scheme(m["scheme"], C, m["heads"], layer=layer, seed=seed, device=device,
                                         dtype=dtype, rope_base=m.get("rope_base", 10000.0),
                                         angle_scale=m.get("angle_scale", 1.0),
                                         learned_sigma=m.get("learned_sigma", 1.0), vocab_size=m.get("vocab", 256),
                                         householder_beta=m.get("householder_beta", "path"), angle_table=table)
        self.ln2 = nn.LayerNorm(C, eps=1e-5, device=device, dtype=dtype)
        self.mlp = _MLP(C, m["mlp_ratio"] * C, device, dtype)

    def forward(self, x, tokens, cache, pass_id):
        x = x + self.attn(self.ln1(x), tokens, cache, pass_id)
        return x + self.mlp(self.ln2(x))


class RoutelabModel(nn.Module):
    """The model of a [model] table (d_model, heads, layers, mlp_ratio, scheme, rope_base, angle_scale,
    learned_shared, householder_beta, vocab, ...). forward(tokens, cache, pass_id) gives logits (B, T, vocab);
    losses(tokens, targets, pass_id) every position's cross-entropy in nats. seed keys the random schemes'
    angle streams; pass_id as in SchemeAttention (one pass for every layer: fresh per forward in training).
    from_safetensors builds one from a `routelab export` file."""

    def __init__(self, model_config, seed=1, dtype=None, device=None):
        super().__init__()
        m = dict(model_config)
        if m.get("scheme") not in SCHEMES:
            raise ValueError(f"scheme '{m.get('scheme')}' is not accepted; one of {', '.join(SCHEMES)}")
        self.m, self.seed = m, seed
        C, nb, vocab = m["d_model"], m["d_model"] // m["heads"] // 2, m.get("vocab", 256)
        self.embed = nn.Embedding(vocab, C, device=device, dtype=dtype)
        nn.init.normal_(self.embed.weight, std=0.02)
        table = None
        if m.get("learned_shared") and SCHEMES[m["scheme"]].angles == "learned":
            self.angles = table = nn.Parameter(torch.randn(vocab, nb, device=device, dtype=dtype) *
                                               m.get("learned_sigma", 1.0))
        self.layers = nn.ModuleList(_Block(m, l, seed, device, dtype, table) for l in range(m["layers"]))
        self.ln_f = nn.LayerNorm(C, eps=1e-5, device=device, dtype=dtype)

    def new_cache(self, pass_id=EVAL_PASS):
        """One AttentionCache per layer, for decoding in pieces: model(tokens_piece, cache) in turn."""
        return [blk.attn.new_cache(pass_id) for blk in self.layers]

    def forward(self, tokens, cache=None, pass_id=None):
        if pass_id is None and cache is None and SCHEMES[self.m["scheme"]].angles == "random":
            pass_id = default_pass(self.training)  # one pass for every layer, as routelab's step is
        x = self.embed(tokens)
        for l, blk in enumerate(self.layers):
            x = blk(x, tokens, None if cache is None else cache[l], pass_id)
        return self.ln_f(x) @ self.embed.weight.T

    def losses(self, tokens, targets, pass_id=EVAL_PASS):
        """Per-position cross-entropy (nats), (B, T); tokens, targets int64 (B, T)."""
        logits = self(tokens, None, pass_id)
        return torch.logsumexp(logits, dim=-1) - logits.gather(-1, targets[..., None])[..., 0]

    def export_parameters(self):
        """{export name (docs/export.md): parameter} for this model's scheme."""
        out = {"embed": self.embed.weight, "ln_f.weight": self.ln_f.weight, "ln_f.bias": self.ln_f.bias}
        if hasattr(self, "angles"):
            out["angles"] = self.angles
        for l, blk in enumerate(self.layers):
            p = f"layers.{l}."
            for ln in ("ln1", "ln2"):
                out[p + ln + ".weight"], out[p + ln + ".bias"] = getattr(blk, ln).weight, getattr(blk, ln).bias
            for name, param in blk.attn.export_tensors(shared_angles=hasattr(self, "angles")).items():
                out[p + name] = param
            mlp = blk.mlp
            out[p + "mlp.wfc"], out[p + "mlp.bfc"] = mlp.fc.weight, mlp.fc.bias
            out[p + "mlp.wproj"], out[p + "mlp.bproj"] = mlp.proj.weight, mlp.proj.bias
        return out

    def load_tensors(self, tensors):
        """Sets every parameter from {export name: array}; ValueError naming a missing, extra or misshapen
        tensor."""
        params = self.export_parameters()
        missing, extra = sorted(set(params) - set(tensors)), sorted(set(tensors) - set(params))
        if missing or extra:
            raise ValueError(f"tensors do not fit a {self.m['scheme']} model: missing {missing}, unexpected {extra}")
        with torch.no_grad():
            for name, p in params.items():
                t = torch.from_numpy(np.array(tensors[name]))
                if tuple(t.shape) != tuple(p.shape):
                    raise ValueError(f"tensor {name} has shape {tuple(t.shape)}; this model's is {tuple(p.shape)}")
                p.copy_(t.to(p.dtype))
        return self


def from_safetensors(path, dtype=torch.float32, device=None):
    """The full model of a `routelab export` file, its weights loaded, in eval mode, on `device`. dtype float32
    or float64 (the parity check's)."""
    tensors, meta = load_safetensors(path)
    model = RoutelabModel(json.loads(meta["model"]), int(meta["seed"]), dtype, device)
    model.load_tensors(tensors)
    model.meta = meta
    return model.eval()


def evaluate(model, stream, L):
    """Every position's loss (nats), window by window, as lib/runs/eval.cpp scores them: consecutive windows of
    L bytes, window w predicting bytes w L + 1 .. w L + L, max(1, 8192 // L) windows per forward pass, pass i
    drawing its random angles with pass id EVAL_PASS + i. Returns (losses float64, windows)."""
    windows = (len(stream) - 1) // L
    batch = max(1, 8192 // L)
    device = model.embed.weight.device
    s = torch.from_numpy(np.asarray(stream).astype(np.int64)).to(device)
    out = []
    for p, w0 in enumerate(range(0, windows, batch)):
        B = min(batch, windows - w0)
        idx = (w0 + torch.arange(B, device=device))[:, None] * L + torch.arange(L, device=device)[None, :]
        with torch.no_grad():
            out.append(model.losses(s[idx], s[idx + 1], EVAL_PASS + p).double().reshape(-1).cpu())
    return torch.cat(out).numpy(), windows


def bits_per_byte(model, stream, L):
    """Bits per byte over the windows of L bytes, as `routelab eval` reports it."""
    losses, _ = evaluate(model, stream, L)
    return float(losses.sum() / len(losses) / math.log(2.0))


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
