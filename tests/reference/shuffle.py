#!/usr/bin/python3
"""Independent reference of ptqkit's sample order (ptq::data::shuffled_order): a from-scratch
MT19937-64 (Matsumoto & Nishimura's 64-bit Mersenne Twister, as std::mt19937_64) and
Fisher-Yates from i = n-1 down to 1 with j uniform in [0, i] by rejection sampling.

usage: shuffle.py N SEED   -> prints the permutation, comma-separated
"""
import sys

MASK = (1 << 64) - 1


class MT19937_64:
    def __init__(self, seed):
        self.mt = [0] * 312
        self.mt[0] = seed & MASK
        for i in range(1, 312):
            prev = self.mt[i - 1]
            self.mt[i] = (6364136223846793005 * (prev ^ (prev >> 62)) + i) & MASK
        self.index = 312

    def twist(self):
        upper, lower = 0xFFFFFFFF80000000, 0x7FFFFFFF
        for i in range(312):
            x = (self.mt[i] & upper) | (self.mt[(i + 1) % 312] & lower)
            xa = x >> 1
            if x & 1:
                xa ^= 0xB5026F5AA96619E9
            self.mt[i] = self.mt[(i + 156) % 312] ^ xa
        self.index = 0

    def __call__(self):
        if self.index >= 312:
            self.twist()
        y = self.mt[self.index]
        self.index += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        y ^= y >> 43
        return y & MASK


def uniform_below(gen, bound):
    rem = (1 << 64) % bound
    while True:
        r = gen()
        if r < (1 << 64) - rem:
            return r % bound


def shuffled(n, seed):
    order = list(range(n))
    gen = MT19937_64(seed)
    for i in range(n - 1, 0, -1):
        j = uniform_below(gen, i + 1)
        order[i], order[j] = order[j], order[i]
    return order


if __name__ == "__main__":
    g = MT19937_64(5489)
    for _ in range(9999):
        g()
    assert g() == 9981545732273789042, "MT19937-64 self-check (C++ [rand.predef]) failed"
    print(",".join(str(v) for v in shuffled(int(sys.argv[1]), int(sys.argv[2]))))
