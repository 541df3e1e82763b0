//! Seeded randomness. Every random choice in a run draws from an explicitly passed generator, so
//! `(scenario, profile, seed)` fixes the output:
//!
//! - [`Rng`]: the run's generator, xoshiro256** (Blackman & Vigna) seeded through splitmix64.
//! - [`GlibcRand`]: glibc's `rand()`/`random()`, bit for bit, for workload generators whose picks
//!   must be those of the real C program (e.g. thp_swap_allocator_test never calls `srand`).
//! - [`Zipf`]: Zipf-distributed ranks by Hörmann's rejection-inversion.
//!
//! No clock, no OS entropy, no hash-map order. `Zipf` uses `f64` `ln`/`exp`; these are the
//! platform's libm, so a sample could in principle differ across libm implementations in a last-ulp
//! tie (never across runs on one machine).

/// xoshiro256** seeded through splitmix64: fast, and the same stream on every machine.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

/// splitmix64 (Steele, Lea & Flood, "Fast splittable pseudorandom number generators", OOPSLA
/// 2014): spreads a 64-bit seed over xoshiro's 256-bit state, which must not be all zero.
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
        let s = [
            splitmix64(&mut x),
            splitmix64(&mut x),
            splitmix64(&mut x),
            splitmix64(&mut x),
        ];
        // splitmix64 is a bijection of a counter, so four consecutive outputs are never all zero.
        debug_assert!(s.iter().any(|&w| w != 0));
        Rng { s }
    }

    /// xoshiro256** (Blackman & Vigna, "Scrambled linear pseudorandom number generators", 2018).
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

    /// Uniform in [0, 1), from the top 53 bits.
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [0, n), without bias (Lemire, "Fast random integer generation in an interval",
    /// ACM TOMS 2019): multiply, and reject only the few low products that would bias the result.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "Rng::below(0)");
        let mut m = (self.next_u64() as u128) * (n as u128);
        if (m as u64) < n {
            let threshold = n.wrapping_neg() % n; // 2^64 mod n
            while (m as u64) < threshold {
                m = (self.next_u64() as u128) * (n as u128);
            }
        }
        (m >> 64) as u64
    }

    /// Uniform in [0, 1), with 53 random bits.
    #[inline]
    pub fn unit_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// glibc's `random()` / `rand()` with the default TYPE_3 state (what `initstate` gives for a
/// 128-byte state, and what `rand()` uses): 31 words of additive feedback,
/// `r[i] = r[i-3] + r[i-31]` (mod 2^32), each output being `r[i] >> 1` as an unsigned word.
/// `srand(seed)` fills the 31 words with the Park–Miller LCG `16807 * x mod (2^31 - 1)` (by
/// Schrage's method, as glibc's `__srandom_r` does) and then discards 310 outputs.
///
/// Modelled on glibc's stdlib/random_r.c: `fptr` starts 3 words ahead of `rptr` (SEP_3), both
/// wrap at the end of the 31-word table.
#[derive(Clone, Debug)]
pub struct GlibcRand {
    state: [i32; GLIBC_DEG],
    fptr: usize,
    rptr: usize,
}

const GLIBC_DEG: usize = 31; // DEG_3
const GLIBC_SEP: usize = 3; // SEP_3

impl GlibcRand {
    /// The largest value `next` returns (glibc's RAND_MAX).
    pub const RAND_MAX: i32 = i32::MAX;

    /// What a program gets from `rand()` when it never calls `srand()`: glibc's initial state is
    /// the one `srand(1)` produces.
    pub fn default_seeded() -> GlibcRand {
        GlibcRand::new(1)
    }

    /// The state after `srand(seed)`. glibc replaces seed 0 by 1.
    pub fn new(seed: u32) -> GlibcRand {
        let seed = if seed == 0 { 1 } else { seed };
        let mut state = [0i32; GLIBC_DEG];
        // glibc keeps the seed and the LCG word in int32_t, so a seed >= 2^31 starts negative;
        // Schrage's step below then behaves exactly as glibc's does on it.
        let mut word = seed as i32;
        state[0] = word;
        for slot in state.iter_mut().skip(1) {
            // 16807 * word mod (2^31 - 1) without overflowing 31 bits (Schrage's method).
            let hi = word / 127_773;
            let lo = word % 127_773;
            word = 16_807 * lo - 2_836 * hi;
            if word < 0 {
                word += 2_147_483_647;
            }
            *slot = word;
        }
        let mut g = GlibcRand {
            state,
            fptr: GLIBC_SEP,
            rptr: 0,
        };
        for _ in 0..10 * GLIBC_DEG {
            g.next();
        }
        g
    }

    /// The next `rand()` value, in [0, RAND_MAX].
    #[inline]
    #[allow(clippy::should_implement_trait)] // named after rand(); an endless stream, not an Iterator
    pub fn next(&mut self) -> i32 {
        let v = self.state[self.fptr].wrapping_add(self.state[self.rptr]);
        self.state[self.fptr] = v;
        self.fptr += 1;
        self.rptr += 1;
        if self.fptr == GLIBC_DEG {
            self.fptr = 0;
        } else if self.rptr == GLIBC_DEG {
            self.rptr = 0;
        }
        ((v as u32) >> 1) as i32
    }
}

/// Zipf-distributed ranks over `n` items: rank `k` (0-based) has probability proportional to
/// `1 / (k + 1)^theta`, so rank 0 is the most popular.
///
/// Sampled exactly by rejection-inversion (W. Hörmann and G. Derflinger, "Rejection-inversion to
/// generate variates from monotone discrete distributions", ACM TOMACS 6(3), 1996): invert the
/// integral `H` of the continuous hat `h(x) = x^-theta` and accept the rounded point unless it
/// falls in the small gap between hat and histogram. Setup and each sample are O(1) for any `n`
/// (the expected number of tries is below 1.1 for every theta), with no zeta(n) sum; theta == 1
/// and theta > 1 are handled by the same formulas. theta == 0 gives the uniform distribution.
#[derive(Clone, Debug)]
pub struct Zipf {
    n: u64,
    theta: f64,
    /// H(1.5) - h(1): the lower end of the inverted interval (it accounts for the whole of rank 1).
    h_integral_x1: f64,
    /// H(n + 0.5): the upper end.
    h_integral_n: f64,
    /// Points with `k - x <= s` are accepted without evaluating the histogram test.
    s: f64,
}

impl Zipf {
    /// Panics unless `theta` is finite and non-negative: a scenario's exponent is validated when
    /// it is parsed. `n` of 0 is taken as 1.
    pub fn new(n: u64, theta: f64) -> Zipf {
        assert!(
            theta.is_finite() && theta >= 0.0,
            "zipf exponent must be finite and >= 0, got {theta}"
        );
        let n = n.max(1);
        let mut z = Zipf {
            n,
            theta,
            h_integral_x1: 0.0,
            h_integral_n: 0.0,
            s: 0.0,
        };
        z.h_integral_x1 = z.h_integral(1.5) - 1.0;
        z.h_integral_n = z.h_integral(n as f64 + 0.5);
        z.s = 2.0 - z.h_integral_inverse(z.h_integral(2.5) - z.h(2.0));
        z
    }

    pub fn n(&self) -> u64 {
        self.n
    }

    pub fn theta(&self) -> f64 {
        self.theta
    }

    /// A rank in [0, n).
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        loop {
            // u uniform in (H(1.5) - 1, H(n + 0.5)]: unit_f64 never returns 1, and 0 maps to n.
            let u = self.h_integral_n + rng.unit_f64() * (self.h_integral_x1 - self.h_integral_n);
            let x = self.h_integral_inverse(u);
            let k = ((x + 0.5) as u64).clamp(1, self.n);
            let kf = k as f64;
            if kf - x <= self.s || u >= self.h_integral(kf + 0.5) - self.h(kf) {
                return k - 1;
            }
        }
    }

    /// The hat h(x) = x^-theta.
    #[inline]
    fn h(&self, x: f64) -> f64 {
        (-self.theta * x.ln()).exp()
    }

    /// H(x) = integral of h from 1 to x: (x^(1-theta) - 1) / (1 - theta), or ln x for theta 1,
    /// written so that it stays accurate as theta approaches 1.
    #[inline]
    fn h_integral(&self, x: f64) -> f64 {
        let log_x = x.ln();
        expm1_over_x((1.0 - self.theta) * log_x) * log_x
    }

    /// The inverse of H.
    #[inline]
    fn h_integral_inverse(&self, x: f64) -> f64 {
        // H is only defined where 1 + (1 - theta) x > 0; rounding can step just past it.
        let t = (x * (1.0 - self.theta)).max(-1.0);
        (ln1p_over_x(t) * x).exp()
    }
}

/// ln(1 + x) / x, continuous at 0.
#[inline]
fn ln1p_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// (e^x - 1) / x, continuous at 0.
#[inline]
fn expm1_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference values printed by a C program calling srand()/rand() against glibc 2.36
    /// (Debian 12), e.g. `srand(42); printf("%d\n", rand());`.
    #[test]
    fn glibc_rand_unseeded_matches_the_c_library() {
        let mut g = GlibcRand::default_seeded();
        let first: Vec<i32> = (0..10).map(|_| g.next()).collect();
        assert_eq!(
            first,
            [
                1804289383, 846930886, 1681692777, 1714636915, 1957747793, 424238335, 719885386,
                1649760492, 596516649, 1189641421
            ]
        );
    }

    #[test]
    fn glibc_srand_matches_the_c_library() {
        let cases: [(u32, [i32; 5]); 5] = [
            (42, [71876166, 708592740, 1483128881, 907283241, 442951012]),
            // srand(0) is srand(1)
            (
                0,
                [1804289383, 846930886, 1681692777, 1714636915, 1957747793],
            ),
            (
                12345,
                [383100999, 858300821, 357768173, 455528251, 133005921],
            ),
            // seeds >= 2^31 go negative in glibc's int32_t arithmetic
            (
                0xffff_ffff,
                [254925627, 1205188300, 366127624, 1401405153, 76053476],
            ),
            (
                0x8000_0000,
                [1336741213, 1210407648, 1447044896, 337392383, 82502902],
            ),
        ];
        for (seed, want) in cases {
            let mut g = GlibcRand::new(seed);
            let got: Vec<i32> = (0..5).map(|_| g.next()).collect();
            assert_eq!(got, want, "srand({seed})");
        }
        // Far into the stream (past several wraps of the table): srandom(7), the 1001st random().
        let mut g = GlibcRand::new(7);
        for _ in 0..1000 {
            g.next();
        }
        assert_eq!(g.next(), 363912548);
    }

    #[test]
    fn glibc_rand_stays_in_range() {
        let mut g = GlibcRand::new(3);
        assert!((0..100_000).all(|_| (0..=GlibcRand::RAND_MAX).contains(&g.next())));
    }

    #[test]
    fn rng_is_deterministic_and_below_is_in_range() {
        let (mut a, mut b) = (Rng::new(42), Rng::new(42));
        for n in 1..2000u64 {
            let x = a.below(n);
            assert_eq!(x, b.below(n));
            assert!(x < n);
        }
        assert_ne!(Rng::new(1).next_u64(), Rng::new(2).next_u64());
        let mut c = Rng::new(0);
        for _ in 0..1000 {
            let u = c.unit_f64();
            assert!((0.0..1.0).contains(&u));
        }
        // the largest bound, where nearly every product is rejected-or-kept at the edge
        assert!(c.below(u64::MAX) < u64::MAX);
    }

    /// xoshiro256** reference: state words 1, 2, 3, 4 give these outputs (the reference C code of
    /// Blackman & Vigna run with that state).
    #[test]
    fn xoshiro_matches_the_reference_step() {
        let mut r = Rng { s: [1, 2, 3, 4] };
        let got: Vec<u64> = (0..4).map(|_| r.next_u64()).collect();
        assert_eq!(got, [11520, 0, 1509978240, 1215971899390074240]);
    }

    #[test]
    fn below_is_roughly_uniform() {
        let mut r = Rng::new(9);
        let mut counts = [0u32; 6];
        for _ in 0..60_000 {
            counts[r.below(6) as usize] += 1;
        }
        assert!(
            counts.iter().all(|&c| (9_500..10_500).contains(&c)),
            "{counts:?}"
        );
    }

    fn zipf_probability(n: u64, theta: f64, rank: u64) -> f64 {
        let norm: f64 = (1..=n).map(|k| (k as f64).powf(-theta)).sum();
        ((rank + 1) as f64).powf(-theta) / norm
    }

    fn zipf_frequencies(n: u64, theta: f64, seed: u64, draws: u32, ranks: usize) -> Vec<f64> {
        let z = Zipf::new(n, theta);
        let mut rng = Rng::new(seed);
        let mut hits = vec![0u32; ranks];
        for _ in 0..draws {
            let r = z.sample(&mut rng);
            assert!(r < n, "rank {r} out of [0, {n})");
            if (r as usize) < ranks {
                hits[r as usize] += 1;
            }
        }
        hits.iter().map(|&h| h as f64 / draws as f64).collect()
    }

    #[test]
    fn zipf_rank0_frequency_matches_theory() {
        let got = zipf_frequencies(1000, 0.99, 7, 200_000, 1)[0];
        let want = zipf_probability(1000, 0.99, 0);
        assert!((got - want).abs() / want < 0.03, "got {got}, want {want}");
    }

    #[test]
    fn zipf_head_matches_theory_for_several_exponents() {
        // theta 1 exactly and theta > 1 are where the Gray et al. approximation breaks down.
        for theta in [0.0, 0.5, 0.9, 0.99, 1.0, 1.2, 2.0, 5.0] {
            let got = zipf_frequencies(500, theta, 11, 200_000, 4);
            for (rank, &g) in got.iter().enumerate() {
                let want = zipf_probability(500, theta, rank as u64);
                assert!(
                    (g - want).abs() < 0.005 + 0.03 * want,
                    "theta {theta} rank {rank}: got {g}, want {want}"
                );
            }
        }
    }

    #[test]
    fn zipf_tail_mass_matches_theory() {
        // The second half of the ranks carries the right share too, not just the head.
        let (n, theta) = (1000u64, 0.99);
        let z = Zipf::new(n, theta);
        let mut rng = Rng::new(5);
        let draws = 200_000;
        let tail = (0..draws).filter(|_| z.sample(&mut rng) >= n / 2).count() as f64 / draws as f64;
        let want: f64 = (n / 2..n).map(|k| zipf_probability(n, theta, k)).sum();
        assert!((tail - want).abs() / want < 0.03, "got {tail}, want {want}");
    }

    #[test]
    fn zipf_edge_sizes() {
        let mut rng = Rng::new(1);
        let one = Zipf::new(1, 0.99);
        assert!((0..1000).all(|_| one.sample(&mut rng) == 0));
        let zero = Zipf::new(0, 0.99);
        assert_eq!(zero.sample(&mut rng), 0);
        // Setup is O(1): a trillion items costs nothing to set up, and samples stay in range.
        let huge = Zipf::new(1 << 40, 0.99);
        assert!((0..10_000).all(|_| huge.sample(&mut rng) < 1 << 40));
        let huge1 = Zipf::new(u64::MAX, 1.0);
        assert!((0..10_000).all(|_| huge1.sample(&mut rng) < u64::MAX));
    }

    #[test]
    fn zipf_is_deterministic() {
        let z = Zipf::new(10_000, 0.9);
        let (mut a, mut b) = (Rng::new(3), Rng::new(3));
        assert!((0..10_000).all(|_| z.sample(&mut a) == z.sample(&mut b)));
    }
}
