"""The theory's prediction for a model trained anywhere: each block's step-angle law read off a module's angle
parameters, its first harmonic E e^{i psi_b} (modulus beta_b, argument the drift) and B.2's mixing window
w_eps(beta_b), past which block b's transport has decorrelated (docs/theory.md#theorem-1). The same numbers
`routelab probe` writes to its -angles CSV (lib/runs/probe.cpp angle_gaps), which the tests compare with.
"""
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


def token_frequencies(stream, vocab_size=256):
    """p(x) over a stream of token ids (bytes, a numpy array, a tensor or a list), as the probe weighs a learned
    table's rows."""
    if isinstance(stream, (bytes, bytearray)):
        ids = np.frombuffer(bytes(stream), dtype=np.uint8)
    elif isinstance(stream, torch.Tensor):
        ids = stream.detach().cpu().numpy()
    else:
        ids = np.asarray(stream)
    counts = np.bincount(ids.astype(np.int64).reshape(-1), minlength=vocab_size)
    if len(counts) > vocab_size:
        raise ValueError(f"the stream holds token {len(counts) - 1}; the vocabulary has {vocab_size}")
    return counts / counts.sum()


def byte_frequencies(stream):
    """token_frequencies over bytes."""
    return token_frequencies(stream, 256)


def attention_modules(model):
    """[(name, module)] of every routelab attention layer inside `model` (itself included), in named_modules()
    order."""
    return [(name, m) for name, m in model.named_modules() if isinstance(m, SchemeAttention)]


def _stream_harmonics(model, mods, stream, context):
    """E e^{i psi_b} over every position of `stream` cut into windows of `context` tokens, for each module
    whose angles depend on the context: model(windows) is called once, and each such module's step angles are
    read by a forward hook on it."""
    s = torch.as_tensor(np.asarray(stream).astype(np.int64), device="cpu")
    windows = len(s) // context
    if windows < 1:
        raise ValueError(f"the stream has {len(s)} tokens; one window of context {context} needs more")
    device = next(model.parameters()).device
    tokens = s[:windows * context].view(windows, context).to(device)
    sums, hooks = {}, []
    for name, a in mods:
        def hook(module, args, output, name=name):
            psi = module.angles.steps(args[0], None, 0, None).reshape(-1, module.nb)
            sums[name] = torch.complex(psi.cos(), psi.sin()).mean(dim=0).cpu().numpy()
        hooks.append(a.register_forward_hook(hook))
    try:
        with torch.no_grad():
            model(tokens)
    finally:
        for h in hooks:
            h.remove()
    missing = [name for name, _ in mods if name not in sums]
    if missing:
        raise ValueError(f"model(windows) did not call the attention layers {missing}")
    return sums


def mixing_windows(source, eps=0.05, byte_freq=None, stream=None, context=None):
    """Every block's beta and mixing window, as a list of dicts (layer, module, block, frequency, beta, drift,
    mixing_window, source), for `source`: any nn.Module holding routelab attention layers (every one inside it
    is read, in named_modules() order; layer counts them from 0), or a `routelab export` .safetensors path.

    rope: beta 1, never mixes (window -1). random: Example 1's sin(s f_b) / (s f_b). learned: |sum_x p(x)
    e^{i table[x, b]}| with p = byte_freq (token frequencies over the table's rows; or those of `stream`;
    uniform if neither). projected: the empirical E e^{i psi_b} over `stream` cut into windows of `context`
    tokens (a RoutelabModel's own context by default), through one call source(windows) that runs the layers.
    Layers without angles have no rows."""
    from .model import RoutelabModel, from_safetensors
    if isinstance(source, (str, bytes)) or hasattr(source, "__fspath__"):
        source = from_safetensors(source, torch.float64)
    if not isinstance(source, torch.nn.Module):
        raise TypeError(f"mixing_windows: a torch.nn.Module or a .safetensors path, not {type(source).__name__}")
    mods = [(name, a) for name, a in attention_modules(source) if a.angles is not None]
    stream_mods = [(name, a) for name, a in mods if a.angles.stream_law]
    harmonics = {}
    if stream_mods:
        if stream is None:
            raise ValueError("projected angles depend on the context: pass a token stream (stream=)")
        if context is None and isinstance(source, RoutelabModel):
            context = source.m["context"]
        if context is None:
            raise ValueError("projected angles: name the windows' length (context=) the model is called on")
        harmonics = _stream_harmonics(source, stream_mods, stream, int(context))
    rows = []
    for l, (name, a) in enumerate(mods):
        f = a.angles.frequencies().numpy()
        if a.angles.stream_law:
            beta, drift = np.abs(harmonics[name]), np.angle(harmonics[name])
        else:
            vocab = a.angles.vocab_size if hasattr(a.angles, "vocab_size") else 256
            if byte_freq is not None:
                p = np.asarray(byte_freq, dtype=np.float64)
            elif stream is not None:
                p = token_frequencies(stream, vocab)
            else:
                p = np.full(vocab, 1.0 / vocab)
            beta, drift = a.angles.harmonic(p)
        for b in range(a.nb):
            rows.append({"layer": l, "module": name, "block": b, "frequency": float(f[b]), "beta": float(beta[b]),
                         "drift": float(drift[b]), "mixing_window": mixing_window(beta[b], eps),
                         "source": a.angles.law_source})
    return rows
