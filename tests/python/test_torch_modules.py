"""routelab.torch's modules on their own (issues 37, 53): decoding in pieces against the full forward, backward
against finite differences, bfloat16 at 64x the training length against float64, the (batch, time, heads,
head_dim) functions against the modules, the modules as PyTorch users hold them (nn.Linear projections, bias,
dtype, dropout, masks and padded batches, every tensor on the input's device), random angles fresh in
training and fixed in eval, any vocabulary for learned angles, and the mixing windows of any model. Parity with
`routelab eval` is test_torch_parity.py's.

  PYTHONPATH=python /usr/bin/python3 tests/python/test_torch_modules.py
  ROUTELAB_TEST_DEVICE=cuda PYTHONPATH=python python3 tests/python/test_torch_modules.py   # also on a GPU
"""
import math
import os
import sys
import unittest

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

import routelab.torch as rt

# Every scheme, the Householder ones in both beta modes.
VARIANTS = [(s, "path") for s in rt.SCHEMES]
VARIANTS += [(s, "reflection") for s in rt.SCHEMES if rt.SCHEMES[s].steps != "none"]
TRAIN_LEN = 16
DEVICE = os.environ.get("ROUTELAB_TEST_DEVICE")  # another device to run every module on, against the CPU


def tiny(scheme, beta="path", dtype=torch.float64, d_model=24, heads=3, layers=2, seed=5, shared=False):
    """A small RoutelabModel in eval mode, biases away from zero so a term that forgot one shows."""
    torch.manual_seed(0)
    m = rt.RoutelabModel({"d_model": d_model, "heads": heads, "layers": layers, "mlp_ratio": 2,
                          "context": TRAIN_LEN, "scheme": scheme, "householder_beta": beta, "rope_base": 10000.0,
                          "angle_scale": 1.0, "learned_shared": shared}, seed=seed, dtype=dtype)
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return m.eval()


def layer(scheme, beta="path", dtype=torch.float64, **kw):
    torch.manual_seed(1)
    a = rt.attention_for_scheme(scheme, 12, 3, householder_beta=beta, dtype=dtype, **kw)
    with torch.no_grad():
        for p in a.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return a.eval()


def worst(a, b):
    return (a - b).abs().max().item()


class DecodingMatchesFullForward(unittest.TestCase):
    def test_every_scheme_token_by_token_and_in_pieces(self):
        tokens = torch.randint(0, 256, (2, 13), generator=torch.Generator().manual_seed(1))
        for scheme, beta in VARIANTS + [("learned_qkv", "shared")]:
            for dtype, tol in ((torch.float64, 1e-12), (torch.float32, 2e-5)):
                with self.subTest(scheme=scheme, beta=beta, dtype=dtype):
                    m = tiny(scheme, "path" if beta == "shared" else beta, dtype, shared=beta == "shared")
                    with torch.no_grad():
                        full = m(tokens)
                        cache = m.new_cache()
                        pieces = [m(tokens[:, :4], cache)] + [m(tokens[:, t:t + 1], cache) for t in range(4, 9)]
                        pieces.append(m(tokens[:, 9:], cache))
                    got = torch.cat(pieces, dim=1)
                    err = (full - got).abs().max().item() / full.abs().max().item()
                    self.assertLess(err, tol)

    def test_padded_rows_in_pieces(self):
        """Padding that a piece boundary cuts through (the pieces' masks the full mask's slices) decodes to the
        full padded forward at the real positions: the cache keeps which keys were padding and, for PaTH's
        convolution, the last real inputs."""
        T = 9
        g = torch.Generator().manual_seed(12)
        h = torch.randn(2, T, 12, dtype=torch.float64, generator=g)
        tokens = torch.randint(0, 256, (2, T), generator=g)
        pad = torch.zeros(2, T, dtype=torch.bool)
        pad[0, 3:6] = True
        pad[1, :2] = True
        for scheme, beta in VARIANTS:
            with self.subTest(scheme=scheme, beta=beta):
                a = layer(scheme, beta)
                with torch.no_grad():
                    full = a(h, tokens, key_padding_mask=pad)
                    cache = a.new_cache()
                    got = torch.cat([a(h[:, i:j], tokens[:, i:j], cache, key_padding_mask=pad[:, i:j])
                                     for i, j in ((0, 4), (4, 5), (5, 7), (7, T))], dim=1)
                self.assertLess(worst(got[~pad], full[~pad]), 1e-12)

    def test_a_wrong_cache_is_caught(self):
        # The comparison above can fail: a decode whose cache forgot the running angle sum differs, and so does
        # one whose cache forgot PaTH's convolution input (the two positions before the piece).
        tokens = torch.randint(0, 256, (1, 6), generator=torch.Generator().manual_seed(2))
        for scheme, forget in (("learned_qkv", "angle_sum"), ("path_qkv", "conv")):
            with self.subTest(scheme=scheme):
                m = tiny(scheme)
                with torch.no_grad():
                    full = m(tokens)
                    cache = m.new_cache()
                    m(tokens[:, :3], cache)
                    for c in cache:
                        setattr(c, forget, None)
                    late = m(tokens[:, 3:], cache)
                self.assertGreater((full[:, 3:] - late).abs().max().item(), 1e-3)


class BackwardMatchesFiniteDifferences(unittest.TestCase):
    def test_every_scheme(self):
        tokens = torch.randint(0, 256, (2, 7), generator=torch.Generator().manual_seed(3))
        targets = torch.roll(tokens, -1, dims=1)
        for scheme, beta in VARIANTS:
            with self.subTest(scheme=scheme, beta=beta):
                m = tiny(scheme, beta, d_model=8, heads=2, layers=1)
                params = list(m.parameters())
                loss = m.losses(tokens, targets).mean()
                grads = torch.autograd.grad(loss, params)
                g = torch.Generator().manual_seed(4)
                direction = [torch.randn(p.shape, generator=g, dtype=p.dtype) for p in params]
                analytic = sum((gr * d).sum() for gr, d in zip(grads, direction)).item()
                eps = 1e-6

                def at(t):
                    with torch.no_grad():
                        for p, d in zip(params, direction):
                            p.add_(t * d)
                        out = m.losses(tokens, targets).mean().item()
                        for p, d in zip(params, direction):
                            p.sub_(t * d)
                    return out
                numeric = (at(eps) - at(-eps)) / (2 * eps)
                self.assertLess(abs(numeric - analytic), 1e-6 * max(1.0, abs(analytic)), (numeric, analytic))


class Precision(unittest.TestCase):
    def test_bfloat16_at_64x_the_training_length(self):
        """Angles summed in float64 and cos/sin formed before the cast keep bfloat16's error at the level of its
        rounding at every position; angles formed in bfloat16 (the naive way) lose the position."""
        T, H, hd = 64 * TRAIN_LEN, 2, 8
        g = torch.Generator().manual_seed(6)
        q, k, v = (torch.randn(1, T, H, hd, generator=g, dtype=torch.float64) for _ in range(3))
        theta = torch.arange(T, dtype=torch.float64)[None, :, None] * rt.rope_frequencies(hd)[None, None, :]
        exact = rt.accumulated_rotary_attention(q, k, v, theta, transport_values=True)
        bf = [x.to(torch.bfloat16) for x in (q, k, v)]
        ours = rt.accumulated_rotary_attention(*bf, theta, transport_values=True).double()
        naive = rt.accumulated_rotary_attention(*bf, theta.to(torch.bfloat16), transport_values=True).double()
        late = slice(T - TRAIN_LEN, T)
        ours_err = (ours - exact)[:, late].abs().max().item()
        naive_err = (naive - exact)[:, late].abs().max().item()
        early_err = (ours - exact)[:, :TRAIN_LEN].abs().max().item()
        self.assertLess(ours_err, 0.05)
        self.assertLess(ours_err, 3 * max(early_err, 1e-2))  # no growth with position
        self.assertGreater(naive_err, 5 * ours_err)

    def test_angles_are_accumulated_in_float64(self):
        a = rt.AccumulatedRotaryAttention(8, 2, angles="random", dtype=torch.float32)
        th = a.theta(torch.zeros(1, 5, 8), None, None, rt.EVAL_PASS)
        self.assertEqual(th.dtype, torch.float64)

    def test_a_bfloat16_module_keeps_its_frequencies(self):
        # .to(bfloat16) casts parameters; the frequencies are no buffer, so RoPE's angles stay float64.
        a = rt.RotaryAttention(8, 2).to(torch.bfloat16)
        self.assertFalse(any(b.dtype == torch.bfloat16 and b.is_floating_point() for b in a.buffers()))
        self.assertEqual(a.theta(torch.zeros(1, 5, 8, dtype=torch.bfloat16), None, None, None).dtype, torch.float64)


def split(a, h):
    B, T, C = h.shape
    return [lin(h).view(B, T, a.heads, a.head_dim) for lin in (a.wq, a.wk, a.wv)]


class FunctionsMatchModules(unittest.TestCase):
    def test_accumulated_rotary_attention(self):
        for scheme in ("rope_qkv", "learned_qkv_forget", "random_qkv_alibi", "projected_qk", "alibi"):
            with self.subTest(scheme=scheme):
                m = tiny(scheme, layers=1)
                a = m.layers[0].attn
                tokens = torch.randint(0, 256, (2, 9), generator=torch.Generator().manual_seed(7))
                h = m.layers[0].ln1(m.embed(tokens))
                q, k, v = split(a, h)
                theta = a.theta(h, tokens, None, rt.EVAL_PASS) if a.angles is not None else None
                log_forget = torch.nn.functional.logsigmoid(a.forget(h)) if a.forget is not None else None
                o = rt.accumulated_rotary_attention(q, k, v, theta, transport_values=a.transport_values,
                                                    slopes=rt.alibi_slopes(a.heads) if a.alibi else None,
                                                    log_forget=log_forget)
                got = a.wo(o.reshape(h.shape))
                self.assertLess(worst(got, a(h, tokens)), 1e-12)

    def test_householder_attention(self):
        for scheme, beta in (("householder_qk", "path"), ("householder_qkv", "reflection"), ("path_qkv", "path"),
                             ("path_qk_forget", "path")):
            with self.subTest(scheme=scheme):
                a = layer(scheme, beta)
                h = torch.randn(2, 11, 12, dtype=torch.float64, generator=torch.Generator().manual_seed(8))
                q, k, v = split(a, h)
                w, b = a.steps(h)
                log_forget = torch.nn.functional.logsigmoid(a.forget(h)) if a.forget is not None else None
                o = rt.householder_attention_reference(q, k, v, w, b, log_forget,
                                                       transport_values=a.transport_values)
                self.assertLess(worst(a.wo(o.reshape(h.shape)), a(h)), 1e-12)

    def test_path_directions_are_a_causal_depthwise_conv1d(self):
        """PaTH's directions: silu of PyTorch's Conv1d (groups = channels, padding taps - 1, the first T outputs:
        flash-linear-attention's ShortConvolution) over w2 w1 h, each head's slice made a unit vector."""
        a = layer("path_qk", "path")
        h = torch.randn(2, 9, 12, dtype=torch.float64, generator=torch.Generator().manual_seed(13))
        s = a.steps
        z = s.w2(s.w1(h)).transpose(1, 2)  # (B, C, T)
        taps = s.conv.shape[1]
        y = torch.nn.functional.conv1d(z, s.conv[:, None, :], padding=taps - 1, groups=12)[..., :9]
        d = torch.nn.functional.silu(y).transpose(1, 2).reshape(2, 9, 3, 4)
        w, _ = s(h)
        self.assertLess(worst(w, d / d.norm(dim=-1, keepdim=True)), 1e-14)
        # Rank min(32, d_model), as lib/nn/scheme.h's path_rank.
        self.assertEqual(tuple(s.w1.weight.shape), (12, 12))
        self.assertEqual(tuple(rt.PathSteps(64, 2).w2.weight.shape), (64, 32))


class AsPyTorchUsersHoldThem(unittest.TestCase):
    def test_projections_are_linear_layers(self):
        a = rt.AccumulatedRotaryAttention(16, 2, angles="projected", forget_gate=True)
        linears = {name for name, m in a.named_modules() if isinstance(m, nn.Linear)}
        self.assertTrue({"wq", "wk", "wv", "wo", "angles.psi", "forget"} <= linears, linears)
        hh = rt.HouseholderAttention(16, 2)
        self.assertTrue({"steps.direction", "steps.size"} <=
                        {name for name, m in hh.named_modules() if isinstance(m, nn.Linear)})
        path = rt.HouseholderAttention(16, 2, steps="path", forget_gate=True)
        self.assertTrue({"steps.w1", "steps.w2", "steps.size", "forget"} <=
                        {name for name, m in path.named_modules() if isinstance(m, nn.Linear)})
        self.assertIsNone(rt.RotaryAttention(16, 2, bias=False).wq.bias)
        self.assertEqual(rt.RotaryAttention(16, 2, dtype=torch.float64).wo.weight.dtype, torch.float64)

    def test_export_names_map_to_the_modules(self):
        m = tiny("householder_qkv", layers=1)
        names = set(m.export_parameters())
        self.assertIn("layers.0.attn.wq", names)
        self.assertIn("layers.0.householder.u", names)
        self.assertIs(m.export_parameters()["layers.0.attn.bq"], m.layers[0].attn.wq.bias)

    def test_dropout_only_in_training(self):
        a = rt.AccumulatedRotaryAttention(12, 3, angles="learned", dropout=0.5)
        h = torch.randn(2, 6, 12)
        tokens = torch.randint(0, 256, (2, 6))
        a.eval()
        self.assertEqual(worst(a(h, tokens), a(h, tokens)), 0.0)
        a.train()
        torch.manual_seed(3)
        y1 = a(h, tokens)
        torch.manual_seed(4)
        self.assertGreater(worst(y1, a(h, tokens)), 1e-4)
        with self.assertRaises(ValueError):
            rt.RotaryAttention(12, 3, dropout=1.0)

    def test_padded_batches_left_and_right(self):
        """A padded row's real positions give the unpadded row's outputs (for every scheme whose angles do not
        depend on the absolute position's random draw), padding on the left or the right, and inside the row
        for the schemes whose terms are sums of steps (not RoPE's or ALiBi's positions)."""
        T, P = 7, 3
        g = torch.Generator().manual_seed(9)
        h = torch.randn(2, T, 12, dtype=torch.float64, generator=g)
        tokens = torch.randint(0, 256, (2, T), generator=g)
        junk = torch.randn(2, P, 12, dtype=torch.float64, generator=g)
        junk_tokens = torch.randint(0, 256, (2, P), generator=g)
        for scheme, beta in VARIANTS:
            s = rt.SCHEMES[scheme]
            if s.angles == "random":
                continue
            a = layer(scheme, beta)
            want = a(h, tokens)
            # Padding inside a row (packed sequences): only where a position's terms are its steps alone.
            sides = ("left", "right") + (("inside",) if s.angles not in ("rope",) and not s.alibi else ())
            for side in sides:
                with self.subTest(scheme=scheme, beta=beta, side=side):
                    at = {"left": 0, "right": T, "inside": 3}[side]
                    hp = torch.cat((h[:, :at], junk, h[:, at:]), 1)
                    tp = torch.cat((tokens[:, :at], junk_tokens, tokens[:, at:]), 1)
                    pad = torch.zeros(2, T + P, dtype=torch.bool)
                    pad[:, at:at + P] = True
                    got = a(hp, tp, key_padding_mask=pad)
                    self.assertLess(worst(got[:, ~pad[0]], want), 1e-12)
                    # Planted: without the mask a row padded on the left or inside differs.
                    if side != "right":
                        self.assertGreater(worst(a(hp, tp)[:, ~pad[0]], want), 1e-6)

    def test_padding_keeps_gradients_finite(self):
        a = rt.AccumulatedRotaryAttention(12, 3, angles="learned")
        h = torch.randn(2, 5, 12, requires_grad=True)
        pad = torch.tensor([[True, True, False, False, False], [False] * 5])
        a(h, torch.randint(0, 256, (2, 5)), key_padding_mask=pad).sum().backward()
        self.assertTrue(torch.isfinite(h.grad).all())
        self.assertTrue(all(torch.isfinite(p.grad).all() for p in a.parameters()))

    def test_attn_mask_beside_causal(self):
        a = layer("learned_qkv_alibi")
        h = torch.randn(1, 6, 12, dtype=torch.float64)
        tokens = torch.randint(0, 256, (1, 6))
        # A float mask of -inf on key 2 equals a bool mask without it, and both differ from no mask.
        blocked = torch.ones(6, 6, dtype=torch.bool)
        blocked[:, 2] = False
        additive = torch.zeros(6, 6, dtype=torch.float64).masked_fill(~blocked, float("-inf"))
        x, y = a(h, tokens, attn_mask=blocked), a(h, tokens, attn_mask=additive)
        self.assertLess(worst(x, y), 1e-14)
        self.assertGreater(worst(x, a(h, tokens)), 1e-6)
        # Non-causal: a rotary layer attends both ways; a forget gate refuses.
        self.assertGreater(worst(a(h, tokens, causal=False), a(h, tokens)), 1e-6)
        with self.assertRaises(ValueError):
            layer("learned_qkv_forget")(h, tokens, causal=False)


class RandomAngles(unittest.TestCase):
    def test_fresh_in_training_fixed_in_eval(self):
        a = rt.AccumulatedRotaryAttention(12, 3, angles="random")
        h = torch.randn(2, 6, 12)
        a.train()
        torch.manual_seed(7)
        y1, y2 = a(h), a(h)
        self.assertGreater(worst(y1, y2), 1e-4)
        torch.manual_seed(7)
        self.assertEqual(worst(a(h), y1), 0.0)  # torch.manual_seed reproduces the draws
        a.eval()
        self.assertEqual(worst(a(h), a(h)), 0.0)
        theta = a.theta(h, None, None, rt.EVAL_PASS)
        self.assertEqual(worst(a.theta(h, None, None, None), theta), 0.0)  # eval's pass is EVAL_PASS

    def test_layers_built_alike_differ_and_reload_the_same(self):
        torch.manual_seed(0)
        a, b = (rt.AccumulatedRotaryAttention(12, 3, angles="random") for _ in range(2))
        h = torch.zeros(1, 4, 12)
        self.assertGreater(worst(a.eval().theta(h, None, None, None), b.eval().theta(h, None, None, None)), 1e-3)
        c = rt.AccumulatedRotaryAttention(12, 3, angles="random").eval()
        c.load_state_dict(a.state_dict())
        self.assertEqual(worst(c.theta(h, None, None, None), a.theta(h, None, None, None)), 0.0)
        # Explicit seed and layer: routelab's streams (the parity test's).
        x = rt.AccumulatedRotaryAttention(12, 3, angles="random", seed=5, layer=1).eval()
        y = rt.AccumulatedRotaryAttention(12, 3, angles="random", seed=5, layer=1).eval()
        self.assertEqual(worst(x.theta(h, None, None, None), y.theta(h, None, None, None)), 0.0)

    def test_a_model_in_training_draws_one_fresh_pass(self):
        m = tiny("random_qkv").train()
        tokens = torch.randint(0, 256, (2, 8))
        self.assertGreater(worst(m(tokens), m(tokens)), 1e-4)
        m.eval()
        self.assertEqual(worst(m(tokens), m(tokens, pass_id=rt.EVAL_PASS)), 0.0)


class LearnedAnglesOfAnyVocabulary(unittest.TestCase):
    def test_bpe_ids(self):
        a = rt.AccumulatedRotaryAttention(12, 3, angles="learned", vocab_size=50257).eval()
        self.assertEqual(tuple(a.angles.table.shape), (50257, 2))
        tokens = torch.tensor([[50256, 1000, 7, 40000]])
        y = a(torch.randn(1, 4, 12), tokens)
        self.assertEqual(y.shape, (1, 4, 12))
        rows = rt.mixing_windows(a, stream=tokens.reshape(-1))
        with torch.no_grad():
            want = abs(torch.exp(1j * a.angles.table[tokens[0]].double()).mean(dim=0))
        self.assertLess(max(abs(r["beta"] - want[r["block"]].item()) for r in rows), 1e-12)
        with self.assertRaises((IndexError, RuntimeError)):
            rt.AccumulatedRotaryAttention(12, 3, angles="learned")(torch.randn(1, 1, 12), torch.tensor([[300]]))


class MixingWindows(unittest.TestCase):
    def test_closed_forms(self):
        self.assertEqual(rt.mixing_window(0.0, 0.05), 1)
        self.assertEqual(rt.mixing_window(1.0, 0.05), -1)
        # beta^n <= eps first at n = ceil(log(1/eps)/log(1/beta)).
        self.assertEqual(rt.mixing_window(0.5, 0.05), 5)
        rows = rt.mixing_windows(rt.AccumulatedRotaryAttention(8, 2, angles="random", angle_scale=2.0), eps=0.05)
        f = rt.rope_frequencies(4).tolist()
        for r in rows:
            x = 2.0 * f[r["block"]]
            self.assertAlmostEqual(r["beta"], math.sin(x) / x, places=15)
        self.assertTrue(all(r["mixing_window"] == -1 for r in rt.mixing_windows(rt.RotaryAttention(8, 2))))

    def test_learned_table_of_one_angle_per_block(self):
        # Every byte steps block b by c_b: beta = 1, drift c_b.
        a = rt.AccumulatedRotaryAttention(8, 2, angles="learned")
        with torch.no_grad():
            a.angles.table.copy_(torch.tensor([0.1, -0.2]).expand(256, 2))
        rows = rt.mixing_windows(a)
        self.assertAlmostEqual(rows[0]["drift"], 0.1, places=6)
        self.assertAlmostEqual(rows[1]["beta"], 1.0, places=12)

    def test_any_model_holding_the_layers(self):
        """A user's model, its attention layers nested anywhere, projected angles included: every layer is read,
        and the projected ones from the stream through one call of the model."""
        class Block(nn.Module):
            def __init__(self, attn):
                super().__init__()
                self.norm, self.mixer = nn.LayerNorm(16), attn

            def forward(self, x, tokens):
                return x + self.mixer(self.norm(x), tokens)

        class UserModel(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(256, 16)
                self.blocks = nn.ModuleDict({"a": Block(rt.AccumulatedRotaryAttention(16, 2, angles="learned")),
                                             "b": Block(rt.AccumulatedRotaryAttention(16, 2, angles="projected"))})
                self.head = nn.Linear(16, 256)

            def forward(self, tokens):
                x = self.embed(tokens)
                for blk in self.blocks.values():
                    x = blk(x, tokens)
                return self.head(x)

        torch.manual_seed(0)
        model = UserModel().eval()
        stream = torch.randint(0, 256, (400,))
        rows = rt.mixing_windows(model, stream=stream, context=32)
        self.assertEqual([(r["layer"], r["module"]) for r in rows if r["block"] == 0],
                         [(0, "blocks.a.mixer"), (1, "blocks.b.mixer")])
        # The projected layer's beta: E e^{i psi} over the stream's windows, psi read at that layer's input.
        with torch.no_grad():
            x = model.embed(stream[:384].view(12, 32))
            x = model.blocks["a"](x, stream[:384].view(12, 32))
            psi = model.blocks["b"].mixer.angles.psi(model.blocks["b"].norm(x)).double().reshape(-1, 4)
            want = torch.complex(psi.cos(), psi.sin()).mean(dim=0).abs()
        got = [r["beta"] for r in rows if r["layer"] == 1]
        self.assertLess(max(abs(g - w.item()) for g, w in zip(got, want)), 1e-12)
        with self.assertRaises(ValueError):
            rt.mixing_windows(model, stream=stream)  # projected angles need the windows' length


FACTORIES = {"zeros", "ones", "empty", "full", "arange", "tensor", "eye", "randn", "rand", "randint", "linspace",
             "as_tensor", "zeros_like", "ones_like"}
PACKAGE = os.path.dirname(os.path.abspath(rt.__file__))
TORCH = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep


class FactoriesWithoutDevice(TorchFunctionMode):
    """Records every torch factory call made from routelab.torch's files without a device (a tensor that would
    land on the default device, whatever the input's)."""

    def __init__(self):
        super().__init__()
        self.found = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name in FACTORIES and not name.endswith("_like") and kwargs.get("device") is None:
            caller = sys._getframe(1)
            while caller is not None and os.path.abspath(caller.f_code.co_filename).startswith(TORCH):
                caller = caller.f_back  # torch's own dispatch (overrides.py)
            if caller is not None and os.path.abspath(caller.f_code.co_filename).startswith(PACKAGE):
                self.found.append(f"{os.path.basename(caller.f_code.co_filename)}:{caller.f_lineno} torch.{name}")
        return func(*args, **kwargs)


def exercise(a, h, tokens):
    """Every path of a module: plain, padded, with a mask, decoding in pieces, and backward."""
    T = h.shape[1]
    out = [a(h, tokens)]
    pad = torch.zeros(h.shape[:2], dtype=torch.bool, device=h.device)
    pad[0, 0] = True
    out.append(a(h, tokens, key_padding_mask=pad))
    out.append(a(h, tokens, attn_mask=torch.ones(T, T, dtype=torch.bool, device=h.device)))
    cache = a.new_cache()
    out.append(torch.cat([a(h[:, :3], tokens[:, :3], cache), a(h[:, 3:4], tokens[:, 3:4], cache),
                          a(h[:, 4:], tokens[:, 4:], cache, key_padding_mask=pad[:, 4:])], dim=1))
    a.train()
    out.append(a(h, tokens))
    a.eval()
    sum(o.sum() for o in out[:-1]).backward()
    return out[:-1]


class EveryTensorOnTheInputsDevice(unittest.TestCase):
    def test_no_factory_call_without_a_device(self):
        h = torch.randn(2, 6, 12)
        tokens = torch.randint(0, 256, (2, 6))
        layers = [layer(scheme, beta, dtype=torch.float32) for scheme, beta in VARIANTS]  # built where torch says
        m = tiny("random_qkv", layers=1)
        mode = FactoriesWithoutDevice()
        with mode:
            for a in layers:
                exercise(a, h, tokens)
            rt.evaluate(m, torch.randint(0, 256, (100,)).numpy(), 16)
            rt.householder_attention(*(torch.randn(1, 5, 2, 4) for _ in range(4)), torch.rand(1, 5, 2),
                                     torch.rand(1, 5, 2).log(), transport_values=True, chunk=2)
        self.assertEqual(mode.found, [])

    def test_the_recorder_sees_a_missing_device(self):
        # Planted: a factory call from the package's folder is seen.
        mode = FactoriesWithoutDevice()
        code = compile("torch.zeros(3)", os.path.join(PACKAGE, "planted.py"), "exec")
        with mode:
            exec(code, {"torch": torch})
        self.assertEqual(len(mode.found), 1)

    @unittest.skipUnless(DEVICE, "ROUTELAB_TEST_DEVICE names no other device (scripts/device-check.sh sets cuda)")
    def test_every_module_on_the_device_against_the_cpu(self):
        rt.philox.self_test(DEVICE)
        g = torch.Generator().manual_seed(11)
        h = torch.randn(2, 6, 12, dtype=torch.float64, generator=g)
        tokens = torch.randint(0, 256, (2, 6), generator=g)
        for scheme, beta in VARIANTS:
            with self.subTest(scheme=scheme, beta=beta):
                a = layer(scheme, beta)
                cpu = exercise(a, h.clone().requires_grad_(True), tokens)
                b = layer(scheme, beta).to(DEVICE)
                hd = h.to(DEVICE).requires_grad_(True)
                dev = exercise(b, hd, tokens.to(DEVICE))
                for x, y in zip(cpu, dev):
                    self.assertEqual(y.device.type, torch.device(DEVICE).type)
                    self.assertLess(worst(x, y.cpu()), 1e-10)
                for (name, p), q in zip(a.named_parameters(), b.parameters()):
                    self.assertLess(worst(p.grad, q.grad.cpu()), 1e-9, name)


if __name__ == "__main__":
    unittest.main()
