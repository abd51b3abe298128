#!/usr/bin/python3
"""PyTorch peer of routelab's byte-level transformer (lib/nn), for bench/run_train.py.

  /usr/bin/python3 bench/peers/train_torch.py --config FILE.toml [--steps N]
      [--threads 2] [--scheme rope|learned_qkv] [--out FILE.csv] [--data FILE]
      [--device cpu|cuda] [--tf32]

Reads [model], [train] and [data] from the same TOML file routelab's `train`
reads and trains the same model for N steps in float32 on the CPU, or with
--device cuda on the GPU (--tf32: TF32 tensor-core matmuls, as routelab's
`train --tf32`). On the GPU attention is torch's fused
scaled_dot_product_attention (flash attention where it applies), the
strongest plain-PyTorch peer; on the CPU it stays the explicit masked softmax
the CPU numbers were measured with. Prints
(stdout) a CSV: `step,loss,grad_norm,tokens_per_s,elapsed_s`, one row a step;
tokens_per_s is batch * context over that step's own wall time (sampling the
batch, forward, backward, clip, AdamW), elapsed_s cumulative. Diagnostics
(torch's build configuration, the BLAS libraries mapped into this process,
read from /proc/self/maps, and OpenBLAS's kernel) go to stderr as lines
starting with '#'; the driver checks the `# blas-lib: PATH` lines and refuses
to report when the reference BLAS is among them. `--info` prints only those
and the float32 matmul rate through torch (`# sgemm-gflops: X`).

The model (must match lib/nn exactly):
  vocab 256; wte (256 x C) tied with the output projection (no bias), no
  learned absolute positions; L blocks x = x + attn(ln1(x)); x = x + mlp(ln2(x));
  LayerNorm eps 1e-5 (weight, bias); qkv = Linear(C, 3C) split q, k, v, heads of
  hd = C/H contiguous in each; causal softmax(q k^T / sqrt(hd)) v; Linear(C, C);
  mlp Linear(C, 4C) -> GELU(tanh) -> Linear(4C, C); final LayerNorm, logits
  lnf(x) wte^T, mean cross-entropy.
  rope: pair j = coordinates (2j, 2j+1) of each head of q and k rotated by
  t f_j, f_j = base^(-2j/hd).
  learned_qkv: per layer a table A (256 x hd/2), theta_t = sum_{s<=t} A[x_s]
  (float64, wrapped mod 2 pi, cos/sin cast to float32); q, k rotated by theta;
  v rotated by +theta at its own position before the weighted sum, the head
  output of query i rotated by -theta_i. A is initialised U(-f_j, f_j) * scale
  (learned_init "uniform") or f_j ("rope") and is not decayed.
  AdamW (lr, betas, eps from [train]; weight decay on the 2-D weights: wte,
  qkv, attn proj, fc, fc proj), global-norm clip, linear warmup then cosine to
  lr * min_lr_ratio. Init GPT-2 style: N(0, 0.02), residual projections
  N(0, 0.02 / sqrt(2 L)), LayerNorm 1/0, biases 0.
"""
import argparse
import ctypes
import math
import os
import sys
import time

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = None

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def note(msg):
    for line in str(msg).splitlines():
        print("# " + line, file=sys.stderr, flush=True)


def blas_libs():
    """Shared objects mapped into this process whose name says BLAS."""
    libs = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6:
                p = parts[-1]
                base = os.path.basename(p)
                if ("blas" in base or "mkl_rt" in base) and p not in libs:
                    libs.append(p)
    return libs


def openblas_info(libs):
    for p in libs:
        if "openblas" in os.path.basename(p):
            try:
                lib = ctypes.CDLL(p)
                lib.openblas_get_corename.restype = ctypes.c_char_p
                lib.openblas_get_config.restype = ctypes.c_char_p
                return lib.openblas_get_corename().decode(), lib.openblas_get_config().decode()
            except (OSError, AttributeError):
                pass
    return None, None


# ---------------------------------------------------------------- model

def rotate(x, cos, sin):
    """Pairs (2j, 2j+1) of the last axis: (a, b) -> (a cos - b sin, a sin + b cos).
    x: (..., hd); cos, sin broadcast against (..., hd/2)."""
    a = x[..., 0::2]
    b = x[..., 1::2]
    return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)


class Block(nn.Module):
    def __init__(self, C, H, mlp_ratio, learned, freqs, angle_scale, learned_init):
        super().__init__()
        self.H = H
        self.ln1 = nn.LayerNorm(C, eps=1e-5)
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)
        self.ln2 = nn.LayerNorm(C, eps=1e-5)
        self.fc = nn.Linear(C, mlp_ratio * C)
        self.fcproj = nn.Linear(mlp_ratio * C, C)
        self.angles = None
        if learned:
            f = torch.tensor(freqs, dtype=torch.float64) * angle_scale
            if learned_init == "rope":
                tab = f.expand(256, -1).clone()
            else:
                tab = f * (2.0 * torch.rand(256, len(freqs), dtype=torch.float64) - 1.0)
            self.angles = nn.Parameter(tab.float())

    fused = False  # scaled_dot_product_attention (set for --device cuda)

    def attn(self, x, cos, sin, rotate_v):
        B, T, C = x.shape
        H = self.H
        hd = C // H
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, H, hd).transpose(1, 2)  # (B, H, T, hd)
        k = k.view(B, T, H, hd).transpose(1, 2)
        v = v.view(B, T, H, hd).transpose(1, 2)
        if cos is not None:
            q = rotate(q, cos, sin)
            k = rotate(k, cos, sin)
            if rotate_v:
                v = rotate(v, cos, sin)
        if Block.fused:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
            mask = torch.ones(T, T, dtype=torch.bool).triu_(1)
            att = att.masked_fill(mask, float("-inf")).softmax(dim=-1)
            y = att @ v
        if cos is not None and rotate_v:
            y = rotate(y, cos, -sin)
        y = y.transpose(1, 2).reshape(B, T, C)
        return self.proj(y)

    def forward(self, x, tokens, rope_cs):
        cos = sin = None
        rotate_v = False
        if self.angles is not None:
            theta = torch.remainder(self.angles[tokens].double().cumsum(dim=1), 2.0 * math.pi)  # (B, T, hd/2)
            cos = theta.cos().float().unsqueeze(1)  # (B, 1, T, hd/2)
            sin = theta.sin().float().unsqueeze(1)
            rotate_v = True
        elif rope_cs is not None:
            cos, sin = rope_cs
        x = x + self.attn(self.ln1(x), cos, sin, rotate_v)
        x = x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))
        return x


class Model(nn.Module):
    def __init__(self, m):
        super().__init__()
        C, H, L = m["d_model"], m["heads"], m["layers"]
        scheme = m.get("scheme", "rope")
        if scheme not in ("rope", "learned_qkv", "nope"):
            raise SystemExit(f"train_torch.py: the peer models the benchmark's schemes only (rope, learned_qkv, nope), not '{scheme}'")
        hd = C // H
        base = float(m.get("rope_base", 10000.0))
        self.freqs = [base ** (-2.0 * j / hd) for j in range(hd // 2)]
        self.scheme = scheme
        self.wte = nn.Embedding(256, C)
        learned = scheme == "learned_qkv"
        self.blocks = nn.ModuleList(
            Block(C, H, m.get("mlp_ratio", 4), learned, self.freqs, float(m.get("angle_scale", 1.0)),
                  m.get("learned_init", "uniform")) for _ in range(L))
        self.lnf = nn.LayerNorm(C, eps=1e-5)
        self._rope = {}
        resid = 0.02 / math.sqrt(2.0 * L)
        for name, p in self.named_parameters():
            if name.endswith("angles"):
                continue
            if p.dim() == 2:
                nn.init.normal_(p, 0.0, resid if (name.endswith("proj.weight")) else 0.02)
            elif "ln" in name and name.endswith("weight"):
                nn.init.ones_(p)
            else:
                nn.init.zeros_(p)

    def rope_cs(self, T):
        if self.scheme != "rope":
            return None
        if T not in self._rope:
            f = torch.tensor(self.freqs, dtype=torch.float64)
            theta = torch.remainder(torch.arange(T, dtype=torch.float64)[:, None] * f, 2.0 * math.pi)
            dev = self.wte.weight.device
            self._rope[T] = (theta.cos().float().to(dev), theta.sin().float().to(dev))  # (T, hd/2)
        return self._rope[T]

    def forward(self, tokens, targets):
        B, T = tokens.shape
        x = self.wte(tokens)
        cs = self.rope_cs(T)
        for blk in self.blocks:
            x = blk(x, tokens, cs)
        logits = self.lnf(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.view(B * T, -1), targets.reshape(B * T))


# ---------------------------------------------------------------- data, schedule

def load_corpus(cfg, explicit):
    cands = [explicit] if explicit else []
    corpus = cfg.get("data", {}).get("corpus", "data/brown")
    for d in (corpus, os.path.join(ROOT, corpus), os.path.join(ROOT, "data/brown"),
              os.path.join(ROOT, "tests/data/brown-slice")):
        cands.append(os.path.join(d, "train.txt"))
    for p in cands:
        if p and os.path.isfile(p) and os.path.getsize(p) > 0:
            with open(p, "rb") as f:
                data = f.read()
            note(f"data: {p} ({len(data)} bytes)")
            return torch.frombuffer(bytearray(data), dtype=torch.uint8)
    note("WARNING: no training text found (data/brown/train.txt, tests/data/brown-slice/train.txt); "
         "training on 1 MiB of random bytes: the speed is still meaningful, the loss is not")
    return torch.randint(0, 256, (1 << 20,), dtype=torch.uint8)


def lr_at(step, t):
    lr, warmup, steps = t["lr"], t["warmup"], t["steps"]
    if step < warmup:
        return lr * (step + 1) / warmup
    decay = steps - warmup
    if decay <= 1:
        return lr
    progress = min(1.0, (step - warmup) / (decay - 1))
    mn = lr * t["min_lr_ratio"]
    return mn + 0.5 * (lr - mn) * (1.0 + math.cos(math.pi * progress))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", required=True, help="routelab's run TOML ([model], [train], [data])")
    ap.add_argument("--steps", type=int, help="overrides [train] steps")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--scheme", help="overrides [model] scheme")
    ap.add_argument("--data", help="the training text (default: [data] corpus/train.txt)")
    ap.add_argument("--out", help="also write the CSV here")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--tf32", action="store_true", help="TF32 matmuls (cuda only)")
    ap.add_argument("--info", action="store_true",
                    help="print the diagnostics and torch's float32 matmul rate (GFLOP/s, n = 1024), then exit")
    a = ap.parse_args()

    if tomllib is None:
        sys.exit("train_torch.py: needs Python >= 3.11 (tomllib); use /usr/bin/python3")
    with open(a.config, "rb") as f:
        cfg = tomllib.load(f)
    m = dict(d_model=128, heads=4, layers=4, mlp_ratio=4, context=128, scheme="rope")
    m.update(cfg.get("model", {}))
    if a.scheme:
        m["scheme"] = a.scheme
    t = dict(batch=16, steps=1500, lr=1e-3, min_lr_ratio=0.1, warmup=100, weight_decay=0.1, beta1=0.9,
             beta2=0.95, eps=1e-8, grad_clip=1.0, seed=1)
    t.update(cfg.get("train", {}))
    if a.steps:
        t["steps"] = a.steps

    if a.device == "cuda" and not torch.cuda.is_available():
        sys.exit("train_torch.py: --device cuda: torch sees no CUDA device")
    if a.tf32 and a.device != "cuda":
        sys.exit("train_torch.py: --tf32 needs --device cuda")
    dev = torch.device(a.device)
    if a.device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = a.tf32
        torch.backends.cudnn.allow_tf32 = a.tf32
        Block.fused = True
        note(f"device: {torch.cuda.get_device_name(0)}, tf32 {a.tf32}, attention scaled_dot_product_attention")
    torch.set_num_threads(a.threads)
    torch.manual_seed(int(t["seed"]))
    torch.set_default_dtype(torch.float32)

    note(torch.__config__.show().strip())
    note(f"torch {torch.__version__}, threads {torch.get_num_threads()}, "
         f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}, "
         f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}, "
         f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE')}, "
         f"OPENBLAS_L2_SIZE={os.environ.get('OPENBLAS_L2_SIZE')}, "
         f"LD_LIBRARY_PATH={os.environ.get('LD_LIBRARY_PATH')}, LD_PRELOAD={os.environ.get('LD_PRELOAD')}")
    # The BLAS is loaded with torch; a first product makes sure it is mapped.
    torch.ones(8, 8) @ torch.ones(8, 8)
    libs = blas_libs()
    for p in libs:
        note(f"blas-lib: {os.path.realpath(p)}" + ("" if os.path.realpath(p) == p else f" (mapped as {p})"))
    if not libs:
        note("blas-lib: none")
    core, conf = openblas_info(libs)
    note(f"openblas-core: {core}")
    note(f"openblas-config: {conf}")
    if a.info:
        # float32 matrix-multiply rate through torch (its BLAS), n = 1024.
        n, reps = 1024, 10
        x, y = torch.randn(n, n), torch.randn(n, n)
        for _ in range(2):
            x @ y
        rates = []
        for _ in range(3):
            t0 = time.perf_counter()
            for _ in range(reps):
                x @ y
            rates.append(2.0 * n ** 3 * reps / (time.perf_counter() - t0) / 1e9)
        note(f"sgemm-gflops: {max(rates):.1f}")
        return

    model = Model(m).to(dev)
    decay = [p for n, p in model.named_parameters() if p.dim() == 2 and not n.endswith("angles")]
    other = [p for n, p in model.named_parameters() if not (p.dim() == 2 and not n.endswith("angles"))]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": t["weight_decay"]},
                             {"params": other, "weight_decay": 0.0}],
                            lr=t["lr"], betas=(t["beta1"], t["beta2"]), eps=t["eps"])
    nparams = sum(p.numel() for p in model.parameters())
    note(f"model: scheme {m['scheme']}, d_model {m['d_model']}, heads {m['heads']}, layers {m['layers']}, "
         f"mlp_ratio {m['mlp_ratio']}, context {m['context']}, batch {t['batch']}, {nparams} parameters")

    data = load_corpus(cfg, a.data).to(dev)
    B, T = int(t["batch"]), int(m["context"])
    if data.numel() < T + 2:
        sys.exit("train_torch.py: training text shorter than one window")
    offs = torch.arange(T + 1, device=dev)

    out = open(a.out, "w") if a.out else None
    header = "step,loss,grad_norm,tokens_per_s,elapsed_s"
    print(header, flush=True)
    if out:
        print(header, file=out)
    elapsed = 0.0
    for step in range(int(t["steps"])):
        t0 = time.perf_counter()
        starts = torch.randint(0, data.numel() - T - 1 + 1, (B, 1), device=dev)
        win = data[starts + offs].long()
        x, y = win[:, :-1], win[:, 1:]
        for g in opt.param_groups:
            g["lr"] = lr_at(step, t)
        loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if t["grad_clip"] > 0:
            gn = float(torch.nn.utils.clip_grad_norm_(model.parameters(), t["grad_clip"]))
        else:
            gn = float(torch.norm(torch.stack([p.grad.norm() for p in model.parameters()])))
        opt.step()
        if a.device == "cuda":
            torch.cuda.synchronize()  # the step's kernels are done before its time is read
        lv = loss.item()
        dt = time.perf_counter() - t0
        elapsed += dt
        row = f"{step},{lv:.6f},{gn:.6f},{B * T / dt:.1f},{elapsed:.4f}"
        print(row, flush=True)
        if out:
            print(row, file=out, flush=True)
    if out:
        out.close()


if __name__ == "__main__":
    main()
