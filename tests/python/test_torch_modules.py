"""routelab.torch's modules on their own (issue 37): decoding in pieces against the full forward, backward
against finite differences, bfloat16 at 64x the training length against float64, the (batch, time, heads,
head_dim) function against the module, and the mixing windows' closed forms. Parity with `routelab eval` is
test_torch_parity.py's."""
import math
import unittest

import torch

import routelab.torch as rt

# Every scheme, the Householder ones in both beta modes.
VARIANTS = [(s, "path") for s in rt.SCHEMES] + [(s, "reflection") for s in rt.SCHEMES if rt.SCHEMES[s][4]]
TRAIN_LEN = 16


def tiny(scheme, beta="path", dtype=torch.float64, d_model=24, heads=3, layers=2, seed=5, shared=False):
    torch.manual_seed(0)
    m = rt.RoutelabModel({"d_model": d_model, "heads": heads, "layers": layers, "mlp_ratio": 2,
                          "context": TRAIN_LEN, "scheme": scheme, "householder_beta": beta, "rope_base": 10000.0,
                          "angle_scale": 1.0, "learned_shared": shared}, seed=seed, dtype=dtype)
    # Biases away from zero, so a term that forgot one shows.
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return m


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


class FunctionMatchesModule(unittest.TestCase):
    def test_batch_time_heads_head_dim(self):
        for scheme in ("rope_qkv", "learned_qkv_forget", "random_qkv_alibi", "projected_qk"):
            with self.subTest(scheme=scheme):
                m = tiny(scheme, layers=1)
                a = m.layers[0].attn
                tokens = torch.randint(0, 256, (2, 9), generator=torch.Generator().manual_seed(7))
                h = m.layers[0].ln1(m.embed[tokens])
                B, T, C = h.shape
                split = lambda x: x.view(B, T, a.heads, a.head_dim)  # noqa: E731
                q, k, v = split(h @ a.wq.T + a.bq), split(h @ a.wk.T + a.bk), split(h @ a.wv.T + a.bv)
                theta = a.theta(h, tokens, None, rt.EVAL_PASS)
                log_forget = torch.nn.functional.logsigmoid(a.forget(h)) if a.forget_gate else None
                o = rt.accumulated_rotary_attention(q, k, v, theta, transport_values=a.transport_values,
                                                    slopes=a.slopes, log_forget=log_forget)
                got = o.reshape(B, T, C) @ a.wo.T + a.bo
                self.assertLess((got - a(h, tokens)).abs().max().item(), 1e-12)


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
            a.angles.copy_(torch.tensor([0.1, -0.2]).expand(256, 2))
        rows = rt.mixing_windows(a)
        self.assertAlmostEqual(rows[0]["drift"], 0.1, places=6)
        self.assertAlmostEqual(rows[1]["beta"], 1.0, places=12)


if __name__ == "__main__":
    unittest.main()
