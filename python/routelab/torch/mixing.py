"""The theory's prediction for a model trained anywhere: each block's step-angle law read off a module's angle
parameters, its first harmonic E e^{i psi_b} (modulus beta_b, argument the drift) and B.2's mixing window
w_eps(beta_b), past which block b's transport has decorrelated (docs/theory.md#theorem-1). The same numbers
`routelab probe` writes to its -angles CSV (lib/runs/probe.cpp angle_gaps), which the tests compare with.
"""
import cmath
import math

import numpy as np
import torch

from .attention import SchemeAttention


def mixing_window(beta, eps):
    """B.2: w_eps = ceil(log(1/eps) / log(1/beta)); 1 when beta = 0, -1 (never) when beta >= 1
    (lib/theory/haar_score_law.cpp)."""
    if beta <= 0:
        return 1
    if beta >= 1:
        return -1
    return max(1, math.ceil(math.log(1.0 / eps) / math.log(1.0 / beta) - 1e-12))


def byte_frequencies(stream):
    """p(x) over a byte stream, as the probe weighs a learned table's rows."""
    counts = np.bincount(np.frombuffer(bytes(stream), dtype=np.uint8) if not isinstance(stream, np.ndarray)
                         else stream.astype(np.uint8), minlength=256)
    return counts / counts.sum()


def _projected_harmonics(model, stream, context):
    """Per layer, E e^{i psi_b} over every position of `stream` cut into windows of `context` bytes (the
    projected angles depend on the context: their law is the stream's)."""
    s = torch.from_numpy(np.asarray(stream).astype(np.int64))
    windows = len(s) // context
    tokens = s[:windows * context].view(windows, context)
    out = []
    with torch.no_grad():
        x = model.embed[tokens]
        for blk in model.layers:
            h = blk.ln1(x)
            psi = blk.attn.psi(h).double().reshape(-1, blk.attn.nb)
            out.append(torch.complex(psi.cos(), psi.sin()).mean(dim=0).numpy())
            x = blk(x, tokens, None, None)
    return out


def mixing_windows(source, eps=0.05, byte_freq=None, stream=None):
    """Every block's beta and mixing window, as a list of dicts (layer, block, frequency, beta, drift,
    mixing_window, source), for `source`: a SchemeAttention, a RoutelabModel, or a `routelab export`
    .safetensors path.

    rope: beta 1, never mixes (window -1). random: Example 1's sin(s f_b) / (s f_b). learned: |sum_x p(x)
    e^{i table[x, b]}| with p = byte_freq (or the byte frequencies of `stream`; uniform if neither). projected:
    the empirical E e^{i psi_b} over `stream` cut into training-length windows (a RoutelabModel and a stream
    are needed). Layers without angles have no rows."""
    from .model import RoutelabModel, from_safetensors
    if isinstance(source, (str, bytes)) or hasattr(source, "__fspath__"):
        source = from_safetensors(source, torch.float64)
    mods = [source] if isinstance(source, SchemeAttention) else [blk.attn for blk in source.layers]
    if byte_freq is None:
        byte_freq = byte_frequencies(stream) if stream is not None else np.full(256, 1.0 / 256)
    byte_freq = np.asarray(byte_freq, dtype=np.float64)
    harmonics = None
    rows = []
    for l, a in enumerate(mods):
        f = a.freqs.numpy()
        for b in range(a.nb if a.angle_kind != "none" else 0):
            if a.angle_kind == "rope":
                mean, drift, where = 1.0, f[b], "closed form"
            elif a.angle_kind == "random":
                x = a.angle_scale * f[b]
                mean, where = (math.sin(x) / x if x != 0 else 1.0), "closed form"
            elif a.angle_kind == "learned":
                col = a.angles.detach().double()[:, b].numpy()
                mean, where = complex(np.sum(byte_freq * np.exp(1j * col))), "table"
            else:
                if stream is None or not isinstance(source, RoutelabModel):
                    raise ValueError("projected angles depend on the context: pass the model and a byte stream")
                if harmonics is None:
                    harmonics = _projected_harmonics(source, stream, source.m["context"])
                mean, where = complex(harmonics[l][b]), "stream"
            beta = abs(mean)
            if a.angle_kind != "rope":
                drift = cmath.phase(mean)
            rows.append({"layer": a.layer if len(mods) == 1 else l, "block": b, "frequency": float(f[b]),
                         "beta": float(beta), "drift": float(drift), "mixing_window": mixing_window(beta, eps),
                         "source": where})
    return rows
