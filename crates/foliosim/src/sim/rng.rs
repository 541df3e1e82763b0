//! Seeded randomness: the run's generator (xoshiro256**), glibc's rand() for tools whose picks must
//! be the real program's, and a Zipf sampler.

/// xoshiro256** seeded through splitmix64: fast, and the same stream on every machine.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

fn splitmix64(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut x = seed;
        Rng {
            s: [
                splitmix64(&mut x),
                splitmix64(&mut x),
                splitmix64(&mut x),
                splitmix64(&mut x),
            ],
        }
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, n), without bias (Lemire's multiply-and-reject).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        loop {
            let m = (self.next_u64() as u128) * (n as u128);
            let low = m as u64;
            if low >= n || low >= n.wrapping_neg() % n {
                return (m >> 64) as u64;
            }
        }
    }

    /// Uniform in [0, 1).
    #[inline]
    pub fn unit_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// glibc's random()/rand() with the default TYPE_3 state: r[i] = r[i-3] + r[i-31], output >> 1,
/// seeded by srand() through the 16807 LCG and 310 discarded outputs.
#[derive(Clone, Debug)]
pub struct GlibcRand {
    r: [i32; 34],
    i: usize,
}

impl GlibcRand {
    /// What a program gets from rand() when it never calls srand().
    pub fn default_seeded() -> GlibcRand {
        GlibcRand::new(1)
    }

    pub fn new(seed: u32) -> GlibcRand {
        let mut init = [0i32; 34];
        init[0] = if seed == 0 { 1 } else { seed as i32 };
        for i in 1..31 {
            // 16807 * r mod (2^31 - 1) by Schrage's method.
            let hi = init[i - 1] / 127_773;
            let lo = init[i - 1] % 127_773;
            let mut w = 16_807 * lo - 2_836 * hi;
            if w < 0 {
                w += 2_147_483_647;
            }
            init[i] = w;
        }
        for i in 31..34 {
            init[i] = init[i - 31];
        }
        let mut g = GlibcRand { r: init, i: 34 };
        for _ in 0..310 {
            g.step();
        }
        g
    }

    #[inline]
    fn step(&mut self) -> i32 {
        // A ring of the last 34 values: r[i-31] is 3 slots ahead of r[i], r[i-3] is 3 behind.
        let v = self.r[(self.i + 3) % 34].wrapping_add(self.r[(self.i + 31) % 34]);
        self.r[self.i % 34] = v;
        self.i += 1;
        v
    }

    /// The next rand() value in [0, RAND_MAX].
    pub fn next(&mut self) -> i32 {
        ((self.step() as u32) >> 1) as i32
    }
}

/// Zipf-distributed ranks over n items with exponent theta (rank 0 the most popular), by the
/// method of Gray et al., "Quickly generating billion-record synthetic databases" (as in YCSB).
#[derive(Clone, Debug)]
pub struct Zipf {
    n: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
}

fn zeta(n: u64, theta: f64) -> f64 {
    // Exact sum for small n; for large n the tail is integrated (Euler–Maclaurin) to stay O(1).
    const EXACT: u64 = 10_000;
    let m = n.min(EXACT);
    let mut s: f64 = (1..=m).map(|i| 1.0 / (i as f64).powf(theta)).sum();
    if n > EXACT {
        let (a, b) = (EXACT as f64 + 0.5, n as f64 + 0.5);
        s += if (theta - 1.0).abs() < 1e-12 {
            (b / a).ln()
        } else {
            (b.powf(1.0 - theta) - a.powf(1.0 - theta)) / (1.0 - theta)
        };
    }
    s
}

impl Zipf {
    pub fn new(n: u64, theta: f64) -> Zipf {
        let n = n.max(1);
        let zetan = zeta(n, theta);
        let zeta2 = zeta(2.min(n), theta);
        let alpha = 1.0 / (1.0 - theta);
        let eta = (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
        Zipf {
            n,
            theta,
            alpha,
            zetan,
            eta,
        }
    }

    pub fn sample(&self, rng: &mut Rng) -> u64 {
        let u = rng.unit_f64();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1.min(self.n - 1);
        }
        let r = (self.n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        r.min(self.n - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glibc_rand_default_sequence() {
        let mut g = GlibcRand::default_seeded();
        let first: Vec<i32> = (0..10).map(|_| g.next()).collect();
        assert_eq!(
            first,
            vec![
                1804289383, 846930886, 1681692777, 1714636915, 1957747793, 424238335, 719885386,
                1649760492, 596516649, 1189641421
            ]
        );
    }

    #[test]
    fn glibc_srand_42_matches_the_c_library() {
        // printf("%d", (srand(42), rand())) with glibc 2.36 on this machine.
        assert_eq!(GlibcRand::new(42).next(), 71876166);
    }

    #[test]
    fn glibc_rand_seed_zero_is_seed_one() {
        let (mut a, mut b) = (GlibcRand::new(0), GlibcRand::new(1));
        assert!((0..100).all(|_| a.next() == b.next()));
    }

    #[test]
    fn rng_is_deterministic_and_below_is_in_range() {
        let (mut a, mut b) = (Rng::new(42), Rng::new(42));
        for _ in 0..1000 {
            let x = a.below(7);
            assert_eq!(x, b.below(7));
            assert!(x < 7);
        }
        assert_ne!(Rng::new(1).next_u64(), Rng::new(2).next_u64());
    }

    #[test]
    fn zipf_rank0_frequency_matches_theory() {
        let z = Zipf::new(1000, 0.99);
        let mut rng = Rng::new(7);
        let draws = 200_000;
        let mut hits0 = 0;
        for _ in 0..draws {
            let r = z.sample(&mut rng);
            assert!(r < 1000);
            hits0 += (r == 0) as u32;
        }
        let expected = 1.0 / zeta(1000, 0.99);
        let got = hits0 as f64 / draws as f64;
        assert!(
            (got - expected).abs() / expected < 0.03,
            "got {got}, expected {expected}"
        );
    }
}
