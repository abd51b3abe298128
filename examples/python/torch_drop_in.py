#!/usr/bin/python3
"""routelab's accumulated-angle attention dropped into a small PyTorch model: train it a few steps on bytes,
decode token by token with the cache (the full forward's outputs), and read its blocks' mixing windows.

  PYTHONPATH=build/python /usr/bin/python3 examples/python/torch_drop_in.py

Needs only torch and numpy (routelab.torch is pure Python). Run by the test command
(ctest -R python_example_torch_drop_in); exits 1 if decoding departs from the full forward.
"""
import os
import sys

import torch
from torch import nn

from routelab.torch import AccumulatedRotaryAttention, mixing_windows


class TinyByteModel(nn.Module):
    def __init__(self, d_model=32, heads=4, layers=2):
        super().__init__()
        self.embed = nn.Embedding(256, d_model)
        self.norms = nn.ModuleList(nn.LayerNorm(d_model) for _ in range(layers))
        # Learned accumulated angles with transported values (routelab's learned_qkv), one per layer.
        self.attn = nn.ModuleList(AccumulatedRotaryAttention(d_model, heads, angles="learned", layer=l)
                                  for l in range(layers))
        self.out = nn.Linear(d_model, 256)

    def forward(self, tokens, cache=None):
        x = self.embed(tokens)
        for l, (norm, attn) in enumerate(zip(self.norms, self.attn)):
            x = x + attn(norm(x), tokens, None if cache is None else cache[l])
        return self.out(x)


def main():
    torch.manual_seed(0)
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "..", "tests", "data", "brown-slice", "train.txt"), "rb") as f:
        data = torch.tensor(list(f.read()[:20000]), dtype=torch.long)
    model = TinyByteModel()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    T = 32
    for step in range(30):
        starts = torch.randint(0, len(data) - T - 1, (8,))
        x = torch.stack([data[s:s + T] for s in starts])
        y = torch.stack([data[s + 1:s + T + 1] for s in starts])
        loss = nn.functional.cross_entropy(model(x).reshape(-1, 256), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 9:
            print(f"step {step + 1}: loss {loss.item():.3f}")

    model.eval()
    tokens = data[:48][None]
    with torch.no_grad():
        full = model(tokens)
        cache = [a.new_cache() for a in model.attn]
        steps = torch.cat([model(tokens[:, t:t + 1], cache) for t in range(tokens.shape[1])], dim=1)
    err = (full - steps).abs().max().item()
    print(f"token-by-token decoding against the full forward: largest difference {err:.2e}")

    for l, a in enumerate(model.attn):
        rows = mixing_windows(a, eps=0.05, stream=data.numpy())
        print(f"layer {l}: beta per block {[round(r['beta'], 3) for r in rows]}, "
              f"mixing windows {[r['mixing_window'] for r in rows]}")
    return 0 if err < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
