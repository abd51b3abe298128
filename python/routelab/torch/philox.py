"""Philox4x32-10 (Salmon et al., SC'11) in torch ops, and routelab's streams on it (lib/rng/stream.h), on any
device: the words are computed in int64 tensors on the device asked for, so a module on `cuda` draws its
random angles there, the same numbers as routelab's C++ and as the CPU.

A draw is a pure function of (seed, stream, counter): the 64-bit seed is the key (low word first), the 128-bit
counter holds the 64-bit block number (low words) and the 64-bit stream id (high words). One block gives four
32-bit words; uniform() takes two words w0, w1 as the 64 bits w0 | w1 << 32 and maps their top 53 bits to
((bits >> 11) + 1/2) 2^-53, in (0, 1).

    PYTHONPATH=python /usr/bin/python3 -m routelab.torch.philox      # the known-answer test
"""
import sys

import torch

M0, M1 = 0xD2511F53, 0xCD9E8D57  # multipliers
W0, W1 = 0x9E3779B9, 0xBB67AE85  # Weyl key increments
MASK32 = 0xFFFFFFFF
MASK64 = (1 << 64) - 1


def _mulhilo(a, m):
    """(hi, lo) 32-bit words of a * m for a an int64 tensor of 32-bit values and m a 32-bit constant: the product
    in 16-bit halves, so no partial sum leaves int64."""
    a_lo, a_hi = a & 0xFFFF, a >> 16
    m_lo, m_hi = m & 0xFFFF, m >> 16
    mid = a_hi * m_lo + a_lo * m_hi  # < 2^33
    lo = a_lo * m_lo + ((mid & 0xFFFF) << 16)  # < 2^33
    hi = a_hi * m_hi + (mid >> 16) + (lo >> 32)
    return hi & MASK32, lo & MASK32


def philox4x32_10(ctr, key):
    """ctr: 4 int64 tensors of 32-bit values (broadcast together); key: 2 ints. Returns the 4 output words
    (int64 tensors holding 32-bit values)."""
    c = list(ctr)
    k0, k1 = key[0] & MASK32, key[1] & MASK32
    for r in range(10):
        if r > 0:
            k0, k1 = (k0 + W0) & MASK32, (k1 + W1) & MASK32
        hi0, lo0 = _mulhilo(c[0], M0)
        hi1, lo1 = _mulhilo(c[2], M1)
        c = [hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0]
    return c


def stream_words(seed, streams, nwords, first=0, device=None):
    """Words first .. first + nwords - 1 of each stream id in `streams` (a list of ints): an int64 tensor
    (len(streams), nwords) of 32-bit words on `device`, as routelab's Stream(seed, stream).next_u32() gives them
    (word w is word w % 4 of block w // 4)."""
    b0 = first // 4
    nblocks = (first + nwords + 3) // 4 - b0
    s = [x & MASK64 for x in streams]
    s_lo = torch.tensor([x & MASK32 for x in s], dtype=torch.int64, device=device)[:, None]
    s_hi = torch.tensor([x >> 32 for x in s], dtype=torch.int64, device=device)[:, None]
    block = torch.arange(b0, b0 + nblocks, dtype=torch.int64, device=device)[None, :]
    out = philox4x32_10([block & MASK32, block >> 32, s_lo, s_hi], [seed & MASK32, (seed >> 32) & MASK32])
    out = [x.expand(len(s), nblocks) for x in out]
    words = torch.stack(out, dim=-1).reshape(len(s), 4 * nblocks)
    return words[:, first - 4 * b0:first - 4 * b0 + nwords]


def stream_uniforms(seed, streams, n, first=0, device=None):
    """Uniforms first .. first + n - 1 in (0, 1), float64 (len(streams), n) on `device`, of each stream:
    Stream::uniforms (uniform i from words 2i, 2i + 1), so a decoder can draw position t's angles on their own."""
    w = stream_words(seed, streams, 2 * n, 2 * first, device)
    top53 = (w[:, 1::2] << 21) | (w[:, 0::2] >> 11)  # (w0 | w1 << 32) >> 11, in int64 without overflow
    return (top53.double() + 0.5) * 2.0 ** -53


# Random123's kat_vectors, philox4x32 10 rounds: counter, key, output.
KNOWN_ANSWERS = [
    ((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
    ((0xffffffff,) * 4, (0xffffffff,) * 2, (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
    ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
     (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1)),
]


def self_test(device=None):
    """Raises AssertionError unless every known answer comes out on `device`."""
    for ctr, key, want in KNOWN_ANSWERS:
        got = tuple(int(x) for x in philox4x32_10([torch.tensor(x, dtype=torch.int64, device=device) for x in ctr],
                                                   key))
        assert got == want, f"philox4x32-10 {ctr} {key}: got {[hex(x) for x in got]}, want {[hex(x) for x in want]}"
    # Stream (seed 0, stream 0) starts with block 0 under key 0: the zero vector.
    assert tuple(int(x) for x in stream_words(0, [0], 4, device=device)[0]) == KNOWN_ANSWERS[0][2]
    return True


if __name__ == "__main__":
    self_test()
    print("philox4x32-10: the 3 known-answer vectors of Random123 match")
    sys.exit(0)
