"""routelab.torch's functions for use inside someone else's attention (issue 53): accumulated_rotary_attention in
both layouts, with per-head angles, causal, attn_mask, scale and a decoding offset; the pieces (accumulate, wrap,
cos/sin, rotate) around one's own softmax attention, in both pair conventions; householder_attention's blocked
form against the position-by-position reference, outputs and every gradient, on odd shapes. Each comparison
has a planted error beside it that must fail it.

  PYTHONPATH=python /usr/bin/python3 tests/python/test_torch_functions.py
"""
import math
import unittest

import torch

import routelab.torch as rt

F64 = torch.float64


def qkv(B, T, H, D, seed, dtype=F64):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(B, T, H, D, generator=g, dtype=dtype) for _ in range(3)]


def steps(B, T, H, D, seed, dtype=F64):
    """Unit directions, sizes in (0, 2) and log forget gates, (B, T, H, ...)."""
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(B, T, H, D, generator=g, dtype=dtype)
    w = w / w.norm(dim=-1, keepdim=True)
    beta = 2.0 * torch.rand(B, T, H, generator=g, dtype=dtype)
    log_forget = torch.nn.functional.logsigmoid(torch.randn(B, T, H, generator=g, dtype=dtype) + 2.0)
    return w, beta, log_forget


def angles(B, T, nb, seed, H=None):
    g = torch.Generator().manual_seed(seed)
    shape = (B, T, nb) if H is None else (B, T, H, nb)
    return rt.accumulate(torch.rand(*shape, generator=g, dtype=F64) * 2.0 - 1.0)


def written_out(q, k, v, theta, transport_values=False, causal=True):
    """The definition in plain loops of tensors, (B, T, H, hd), shared angles: the reference."""
    B, T, H, D = q.shape
    out = torch.zeros_like(q)
    for b in range(B):
        for h in range(H):
            for i in range(T):
                def turn(x, t, sign=1.0):
                    y = x.clone()
                    for j in range(D // 2):
                        c, s = math.cos(sign * theta[b, t, j]), math.sin(sign * theta[b, t, j])
                        y[2 * j], y[2 * j + 1] = x[2 * j] * c - x[2 * j + 1] * s, x[2 * j] * s + x[2 * j + 1] * c
                    return y
                qi = turn(q[b, i, h], i)
                keys = range(i + 1) if causal else range(T)
                s = torch.stack([qi @ turn(k[b, j, h], j) for j in keys]) / math.sqrt(D)
                p = s.softmax(0)
                vs = [turn(v[b, j, h], j) if transport_values else v[b, j, h] for j in keys]
                o = sum(pj * vj for pj, vj in zip(p, vs))
                out[b, i, h] = turn(o, i, -1.0) if transport_values else o
    return out


def worst(a, b):
    return (a - b).abs().max().item()


class AccumulatedRotaryAttention(unittest.TestCase):
    def test_against_the_definition_written_out(self):
        q, k, v = qkv(2, 6, 2, 4, 1)
        th = angles(2, 6, 2, 2)
        for tv in (False, True):
            for causal in (True, False):
                with self.subTest(transport_values=tv, causal=causal):
                    got = rt.accumulated_rotary_attention(q, k, v, th, transport_values=tv, causal=causal)
                    self.assertLess(worst(got, written_out(q, k, v, th, tv, causal)), 1e-13)
        # Planted: the angles of one position off by 0.1 show.
        bad = th.clone()
        bad[:, 3] += 0.1
        self.assertGreater(worst(rt.accumulated_rotary_attention(q, k, v, bad), written_out(q, k, v, th)), 1e-3)

    def test_both_layouts(self):
        q, k, v = qkv(2, 7, 3, 8, 3)
        th = angles(2, 7, 4, 4)
        bthd = rt.accumulated_rotary_attention(q, k, v, th, transport_values=True)
        t = lambda x: x.transpose(1, 2)  # noqa: E731
        bhtd = rt.accumulated_rotary_attention(t(q), t(k), t(v), th, transport_values=True, layout="bhtd")
        self.assertEqual(bhtd.shape, (2, 3, 7, 8))
        self.assertLess(worst(t(bhtd), bthd), 1e-14)

    def test_a_layout_mixup_is_one_line(self):
        q, k, v = qkv(2, 7, 3, 8, 3)
        th = angles(2, 7, 4, 4)
        t = lambda x: x.transpose(1, 2)  # noqa: E731
        with self.assertRaises(ValueError) as e:
            rt.accumulated_rotary_attention(t(q), t(k), t(v), th)  # SDPA's layout, the default's name
        self.assertIn("layout bthd", str(e.exception))
        self.assertNotIn("\n", str(e.exception))
        with self.assertRaises(ValueError) as e:
            rt.accumulated_rotary_attention(q, k, v, th, layout="bsnd")
        self.assertIn("bthd", str(e.exception))

    def test_per_head_angles(self):
        q, k, v = qkv(2, 5, 3, 4, 5)
        th = angles(2, 5, 2, 6, H=3)  # (B, T, H, nb)
        got = rt.accumulated_rotary_attention(q, k, v, th, transport_values=True)
        for h in range(3):
            one = rt.accumulated_rotary_attention(q[:, :, h:h + 1], k[:, :, h:h + 1], v[:, :, h:h + 1], th[:, :, h],
                                                  transport_values=True)
            self.assertLess(worst(got[:, :, h:h + 1], one), 1e-14)
        # In bhtd per-head angles are (B, H, T, nb).
        t = lambda x: x.transpose(1, 2)  # noqa: E731
        bhtd = rt.accumulated_rotary_attention(t(q), t(k), t(v), t(th), transport_values=True, layout="bhtd")
        self.assertLess(worst(t(bhtd), got), 1e-14)
        # The same angles for every head are the shared angles.
        shared = angles(2, 5, 2, 7)
        a = rt.accumulated_rotary_attention(q, k, v, shared)
        b = rt.accumulated_rotary_attention(q, k, v, shared[:, :, None].expand(2, 5, 3, 2))
        self.assertLess(worst(a, b), 1e-15)

    def test_masks_scale_and_offset(self):
        q, k, v = qkv(2, 9, 2, 4, 8)
        th = angles(2, 9, 2, 9)
        full = rt.accumulated_rotary_attention(q, k, v, th, transport_values=True)
        # A bool mask of the causal pattern, with causal off, is causal; a float one with -inf the same.
        tril = torch.ones(9, 9, dtype=torch.bool).tril()
        self.assertLess(worst(rt.accumulated_rotary_attention(q, k, v, th, transport_values=True, causal=False,
                                                              attn_mask=tril), full), 1e-14)
        additive = torch.zeros(9, 9, dtype=F64).masked_fill(~tril, float("-inf"))
        self.assertLess(worst(rt.accumulated_rotary_attention(q, k, v, th, transport_values=True, causal=False,
                                                              attn_mask=additive), full), 1e-14)
        # scale: q scaled by c at the default scale.
        c = 0.37
        a = rt.accumulated_rotary_attention(q, k, v, th, scale=c)
        b = rt.accumulated_rotary_attention(q * (c * 2.0), k, v, th)  # default 1/sqrt(4)
        self.assertLess(worst(a, b), 1e-13)
        # Decoding: the last 3 queries against every key and its angles are the full result's last rows.
        last = rt.accumulated_rotary_attention(q[:, 6:], k, v, th, transport_values=True)
        self.assertLess(worst(last, full[:, 6:]), 1e-14)
        mid = rt.accumulated_rotary_attention(q[:, 3:5], k[:, :5], v[:, :5], th[:, :5], transport_values=True,
                                              offset=3)
        self.assertLess(worst(mid, full[:, 3:5]), 1e-14)
        # Planted: the wrong offset differs.
        self.assertGreater(worst(rt.accumulated_rotary_attention(q[:, 6:], k, v, th, transport_values=True,
                                                                 offset=5), full[:, 6:]), 1e-3)

    def test_a_query_with_no_key_gives_zeros_and_finite_gradients(self):
        q, k, v = qkv(1, 4, 1, 4, 10)
        q.requires_grad_(True)
        pad = torch.tensor([[True, True, False, False]])
        o = rt.accumulated_rotary_attention(q, k, v, angles(1, 4, 2, 11), key_padding_mask=pad)
        self.assertTrue(torch.all(o[:, :2] == 0))
        o.sum().backward()
        self.assertTrue(torch.isfinite(q.grad).all())

    def test_alibi_and_forget_gate_terms(self):
        q, k, v = qkv(1, 6, 2, 4, 12)
        slopes = rt.alibi_slopes(2)
        lf = steps(1, 6, 2, 4, 13)[2]
        got = rt.accumulated_rotary_attention(q, k, v, None, slopes=slopes, log_forget=lf)
        i = torch.arange(6, dtype=F64)
        cum = torch.cumsum(lf, dim=1).transpose(1, 2)  # (B, H, T)
        bias = -slopes[:, None, None] * (i[:, None] - i[None, :]) + cum[0, :, :, None] - cum[0, :, None, :]
        mask = torch.zeros(6, 6, dtype=F64).masked_fill(~torch.ones(6, 6, dtype=torch.bool).tril(), float("-inf"))
        s = q.transpose(1, 2) @ k.transpose(1, 2).transpose(-1, -2) / 2.0 + bias + mask
        want = (s.softmax(-1) @ v.transpose(1, 2)).transpose(1, 2)
        self.assertLess(worst(got, want), 1e-14)


def rotate_half(x):
    """Llama's rotate_half."""
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


class PiecesForYourOwnAttention(unittest.TestCase):
    def test_angles_wrap_cos_sin_rotate_around_your_own_softmax(self):
        """docs/python.md's custom attention: step angles -> accumulate -> cos_sin (wrapped in float64) -> rotate
        q, k, v -> any attention -> rotate back. Here the attention is written out as softmax(q k^T / sqrt(d))."""
        B, T, H, D = 2, 8, 2, 6
        q, k, v = (x.transpose(1, 2) for x in qkv(B, T, H, D, 14))  # (B, H, T, D), SDPA's layout
        psi = torch.rand(B, T, D // 2, generator=torch.Generator().manual_seed(15), dtype=F64)
        theta = rt.accumulate(psi)  # (B, T, D/2) float64, unwrapped
        cos, sin = rt.cos_sin(theta[:, None], q.dtype)  # (B, 1, T, D/2): one angle per pair, shared by heads
        qr, kr, vr = (rt.rotate(x, cos, sin) for x in (q, k, v))
        s = (qr @ kr.transpose(-1, -2)) / math.sqrt(D)
        s = s.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))
        o = rt.rotate(s.softmax(-1) @ vr, cos, -sin)
        want = rt.accumulated_rotary_attention(q, k, v, theta, transport_values=True, layout="bhtd")
        self.assertLess(worst(o, want), 1e-14)

    def test_half_pairs_are_llamas_rotate_half(self):
        x = torch.randn(3, 5, 8, dtype=F64, generator=torch.Generator().manual_seed(16))
        theta = torch.rand(3, 5, 4, dtype=F64, generator=torch.Generator().manual_seed(17)) * 10
        cos, sin = rt.cos_sin(theta, F64)
        llama = x * torch.cat((cos, cos), -1) + rotate_half(x) * torch.cat((sin, sin), -1)
        self.assertLess(worst(rt.rotate(x, cos, sin, "half"), llama), 1e-14)
        # Interleaved pairs are half pairs of the coordinates reordered (0, 2, 4, 6, 1, 3, 5, 7).
        order = torch.tensor([0, 2, 4, 6, 1, 3, 5, 7])
        inv = torch.argsort(order)
        self.assertLess(worst(rt.rotate(x, cos, sin), rt.rotate(x[..., order], cos, sin, "half")[..., inv]), 1e-15)
        # Planted: the conventions differ.
        self.assertGreater(worst(rt.rotate(x, cos, sin), llama), 1e-2)
        with self.assertRaises(ValueError):
            rt.rotate(x, cos, sin, "adjacent")

    def test_wrap_keeps_long_angles(self):
        big = torch.tensor([1e6 + 0.25, -3e5 - 1.0], dtype=F64)
        w = rt.wrap(big)
        self.assertTrue(torch.all(w.abs() <= math.pi))
        self.assertLess(worst(torch.cos(w), torch.cos(big)), 1e-9)


@unittest.skipUnless(rt.rotary.FUSED, "PyTorch 1.13 has no scaled_dot_product_attention (scripts/device-check.sh "
                                     "runs this where PyTorch 2 is)")
class FusedAgainstWrittenOut(unittest.TestCase):
    def test_masks_padding_bias_and_offset(self):
        q, k, v = (x.transpose(1, 2) for x in qkv(2, 9, 3, 4, 30))
        bias = torch.randn(1, 3, 4, 9, dtype=F64)
        pad = torch.zeros(2, 9, dtype=torch.bool)
        pad[0, :6] = True  # query rows of row 0 that see no key
        bool_mask = torch.rand(4, 9, generator=torch.Generator().manual_seed(31)) > 0.3
        float_mask = torch.zeros(4, 9, dtype=F64).masked_fill(~bool_mask, float("-inf"))
        cases = [dict(), dict(bias=bias), dict(key_padding_mask=pad), dict(attn_mask=bool_mask, causal=False),
                 dict(attn_mask=float_mask, bias=bias), dict(scale=0.3, key_padding_mask=pad)]
        for kw in cases:
            with self.subTest(kw=sorted(kw)):
                got = rt.attend(q[:, :, 5:], k, v, offset=5, **kw)
                rt.rotary.FUSED = False
                try:
                    want = rt.attend(q[:, :, 5:], k, v, offset=5, **kw)
                finally:
                    rt.rotary.FUSED = True
                self.assertLess(worst(got, want), 1e-12)


class HouseholderBlockedAgainstReference(unittest.TestCase):
    # (B, T, H, D, chunk): one position, chunks that do not divide T, one chunk, many chunks.
    SHAPES = [(1, 1, 1, 4, 4), (2, 7, 3, 6, 3), (2, 13, 2, 4, 4), (1, 37, 2, 8, 8), (1, 64, 1, 4, 64),
              (2, 50, 2, 6, 16)]

    def compare(self, transport_values, forget, tol_out, tol_grad, dtype=F64, plant=False):
        for B, T, H, D, C in self.SHAPES:
            with self.subTest(T=T, chunk=C, transport_values=transport_values, forget=forget, dtype=dtype):
                q, k, v = qkv(B, T, H, D, T, dtype)
                w, beta, lf = steps(B, T, H, D, T + 1, dtype)
                ins = [q, k, v, w, beta] + ([lf] if forget else [])
                for x in ins:
                    x.requires_grad_(True)
                kw = dict(transport_values=transport_values)
                a = rt.householder_attention(*ins, chunk=C, **kw)
                ref_ins = ins if not plant else ins[:4] + [beta.detach() * 0.9] + ins[5:]
                b = rt.householder_attention_reference(*ref_ins, **kw)
                g = torch.randn(a.shape, dtype=dtype, generator=torch.Generator().manual_seed(0))
                ga = torch.autograd.grad((a * g).sum(), ins)
                gb = torch.autograd.grad((b * g).sum(), ins, allow_unused=True)
                gb = [torch.zeros_like(x) if y is None else y for x, y in zip(ins, gb)]  # T = 1 takes no step
                rms = lambda x: x.pow(2).mean().sqrt().item()  # noqa: E731
                err = rms(a - b) / rms(b)
                if plant:
                    self.assertGreater(err, tol_out)
                    continue
                self.assertLess(err, tol_out)
                for name, x, y in zip("q k v w beta log_forget".split(), ga, gb):
                    self.assertLess(rms(x - y) / max(rms(y), 1e-30), tol_grad, name)

    def test_outputs_and_gradients_float64(self):
        for tv in (False, True):
            for forget in (False, True):
                self.compare(tv, forget, 1e-12, 1e-11)

    def test_float32(self):
        self.compare(True, True, 2e-5, 2e-4, torch.float32)

    def test_a_changed_step_fails(self):
        # Planted: the reference's step sizes scaled by 0.9.
        for T in (7, 37):
            self.SHAPES = [s for s in HouseholderBlockedAgainstReference.SHAPES if s[1] == T]
            self.compare(True, False, 1e-6, 0, plant=True)

    def test_the_chunk_does_not_change_the_result(self):
        q, k, v = qkv(1, 100, 2, 8, 20)
        w, beta, lf = steps(1, 100, 2, 8, 21)
        outs = [rt.householder_attention(q, k, v, w, beta, lf, transport_values=True, chunk=c) for c in (1, 7, 64, 100)]
        for o in outs[1:]:
            self.assertLess(worst(o, outs[0]), 1e-12)

    def test_reflections_and_identities(self):
        # beta = 0 everywhere: plain causal attention; beta = 2: reflections, an orthogonal transport.
        q, k, v = qkv(1, 20, 2, 4, 22)
        w, beta, _ = steps(1, 20, 2, 4, 23)
        plain = rt.accumulated_rotary_attention(q, k, v)
        self.assertLess(worst(rt.householder_attention(q, k, v, w, beta * 0), plain), 1e-14)
        refl = rt.householder_attention(q, k, v, w, beta * 0 + 2, transport_values=True, chunk=8)
        ref = rt.householder_attention_reference(q, k, v, w, beta * 0 + 2, transport_values=True)
        self.assertLess(worst(refl, ref), 1e-12)

    def test_layouts_and_padding(self):
        q, k, v = qkv(2, 11, 2, 4, 24)
        w, beta, lf = steps(2, 11, 2, 4, 25)
        t = lambda x: x.transpose(1, 2)  # noqa: E731
        a = rt.householder_attention(q, k, v, w, beta, lf, transport_values=True, chunk=4)
        b = rt.householder_attention(t(q), t(k), t(v), t(w), t(beta), t(lf), transport_values=True, chunk=4,
                                     layout="bhtd")
        self.assertLess(worst(t(b), a), 1e-14)
        # 3 positions of padding inside the row (packed sequences), and on the left: the padded row's real
        # positions are the unpadded row's; a padded query that sees no key gives zeros.
        for at in (4, 0):
            with self.subTest(padding_at=at):
                padq = lambda x: torch.cat((x[:, :at], torch.randn(2, 3, *x.shape[2:], dtype=F64), x[:, at:]),  # noqa
                                           dim=1)
                mask = torch.zeros(2, 14, dtype=torch.bool)
                mask[:, at:at + 3] = True
                wp = padq(w)
                wp = wp / wp.norm(dim=-1, keepdim=True)
                got = rt.householder_attention(padq(q), padq(k), padq(v), wp, padq(beta).abs(), padq(lf) - 5.0 * mask[..., None],
                                               transport_values=True, key_padding_mask=mask, chunk=4)
                self.assertLess(worst(got[:, ~mask[0]], a), 1e-13)
                if at == 0:
                    self.assertTrue(torch.all(got[:, :3] == 0))


if __name__ == "__main__":
    unittest.main()
