"""Philox4x32-10 (Salmon et al., SC'11) in numpy, and routelab's streams on it (lib/rng/stream.h).

A draw is a pure function of (seed, stream, counter): the 64-bit seed is the
key (low word first), the 128-bit counter holds the 64-bit block number (low
words) and the 64-bit stream id (high words). One block gives four 32-bit
words; uniform() takes two words w0, w1 as the 64 bits w0 | w1 << 32 and maps
their top 53 bits to ((bits >> 11) + 1/2) 2^-53, in (0, 1).

    PYTHONPATH=python /usr/bin/python3 -m routelab.torch.philox      # the known-answer test
"""
import sys

import numpy as np

M0, M1 = 0xD2511F53, 0xCD9E8D57  # multipliers
W0, W1 = 0x9E3779B9, 0xBB67AE85  # Weyl key increments
MASK32 = 0xFFFFFFFF
MASK64 = (1 << 64) - 1


def philox4x32_10(ctr, key):
    """ctr: 4 arrays of uint32 (broadcast together), key: 2 arrays or ints. Returns the 4 output words (uint64
    arrays holding 32-bit values)."""
    c = [np.asarray(x, dtype=np.uint64) & np.uint64(MASK32) for x in ctr]
    k0 = np.asarray(key[0], dtype=np.uint64) & np.uint64(MASK32)
    k1 = np.asarray(key[1], dtype=np.uint64) & np.uint64(MASK32)
    for r in range(10):
        if r > 0:
            k0 = (k0 + np.uint64(W0)) & np.uint64(MASK32)
            k1 = (k1 + np.uint64(W1)) & np.uint64(MASK32)
        p0 = c[0] * np.uint64(M0)  # exact: both factors below 2^32
        p1 = c[2] * np.uint64(M1)
        hi0, lo0 = p0 >> np.uint64(32), p0 & np.uint64(MASK32)
        hi1, lo1 = p1 >> np.uint64(32), p1 & np.uint64(MASK32)
        c = [hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0]
    return c


def stream_words(seed, streams, nwords, first=0):
    """Words first .. first + nwords - 1 of each stream id in `streams` (a list of ints): an array
    (len(streams), nwords) of uint64 holding 32-bit words, as routelab's Stream(seed, stream).next_u32() gives
    them (word w is word w % 4 of block w // 4)."""
    b0 = first // 4
    nblocks = (first + nwords + 3) // 4 - b0
    s = np.array([x & MASK64 for x in streams], dtype=np.uint64)[:, None]
    block = np.arange(b0, b0 + nblocks, dtype=np.uint64)[None, :]
    out = philox4x32_10([block & np.uint64(MASK32), block >> np.uint64(32), s & np.uint64(MASK32),
                         s >> np.uint64(32)], [seed & MASK32, (seed >> 32) & MASK32])
    words = np.stack(out, axis=-1).reshape(len(streams), 4 * nblocks)
    return words[:, first - 4 * b0:first - 4 * b0 + nwords]


def stream_uniforms(seed, streams, n, first=0):
    """Uniforms first .. first + n - 1 in (0, 1) of each stream: Stream::uniforms (uniform i from words 2i,
    2i + 1), so a decoder can draw position t's angles on their own."""
    w = stream_words(seed, streams, 2 * n, 2 * first)
    bits = w[:, 0::2] | (w[:, 1::2] << np.uint64(32))
    return ((bits >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0 ** -53


# Random123's kat_vectors, philox4x32 10 rounds: counter, key, output.
KNOWN_ANSWERS = [
    ((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
    ((0xffffffff,) * 4, (0xffffffff,) * 2, (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
    ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
     (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1)),
]


def self_test():
    """Raises AssertionError unless every known answer comes out."""
    for ctr, key, want in KNOWN_ANSWERS:
        got = tuple(int(x) for x in philox4x32_10(ctr, key))
        assert got == want, f"philox4x32-10 {ctr} {key}: got {[hex(x) for x in got]}, want {[hex(x) for x in want]}"
    # Stream (seed 0, stream 0) starts with block 0 under key 0: the zero vector.
    assert tuple(int(x) for x in stream_words(0, [0], 4)[0]) == KNOWN_ANSWERS[0][2]
    return True


if __name__ == "__main__":
    self_test()
    print("philox4x32-10: the 3 known-answer vectors of Random123 match")
    sys.exit(0)
