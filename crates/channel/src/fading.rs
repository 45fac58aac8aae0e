//! Small-scale fading (docs/models/channel.md §7, optional): Rayleigh in NLOS, Rician
//! with K = 9 dB in LOS, time-correlated with Clarke's autocorrelation
//! J0(2π f_d Δt), f_d = v·f_c/c (Clarke, "A statistical theory of
//! mobile-radio reception", Bell Syst. Tech. J. 47(6), 1968).
//!
//! The diffuse part is a sum of M complex sinusoids with equally spaced
//! arrival angles under one random rotation and independent random phases
//! (Pop & Beaulieu, "Limitations of sum-of-sinusoids fading channel
//! simulators", IEEE Trans. Commun. 49(4), 2001):
//!
//!   h_d(s) = M^(−1/2) Σₙ exp(j(k·s·cos αₙ + φₙ)),  αₙ = (2πn + θ)/M,
//!
//! with k = 2π f_c / c. It is written as a function of the distance s the UE
//! has travelled rather than of time: for constant speed s = v·t, so the
//! phase k·s·cos αₙ = 2π f_d t cos αₙ and the autocorrelation is
//! E[h_d(t) h_d*(t+Δt)] = E_θ[(1/M) Σₙ exp(−j 2π f_d Δt cos αₙ)] = J0(2π f_d Δt)
//! exactly (θ uniform makes the angles uniform on the circle), while a UE that
//! stops keeps a frozen channel instead of a Doppler it no longer has. A
//! single realisation's time average is the M-point rectangle rule of the
//! same integral, which for a periodic integrand is accurate to ≈ 2·J_M(2π f_d Δt).
//!
//! In LOS a specular component with random arrival angle θ₀ and phase φ₀ is
//! added: h = √(K/(K+1))·exp(j(k·s·cos θ₀ + φ₀)) + √(1/(K+1))·h_d, so
//! E|h|² = 1 in both states and F = 10 log10 |h|² has mean power 0 dB.
//! One diffuse process serves both states, so a LOS/NLOS switch changes the
//! fading statistics without a jump in the scattered field.

use rand_core::RngCore;
use std::f64::consts::TAU;

use crate::error::ConfigError;
use crate::rng::uniform01;
use crate::units::{lin_to_db, SPEED_OF_LIGHT_MPS};

/// Fading parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct FadingConfig {
    /// Rician K-factor in LOS, dB (docs/models/channel.md §7: 9 dB).
    pub k_factor_db: f64,
    /// Number M of sinusoids in the diffuse sum: cost per sample is M
    /// sin/cos pairs; 16 gives a near-Gaussian field and an autocorrelation
    /// accurate to < 10⁻³ for f_d·Δt ≤ 1.
    pub sinusoids: usize,
}

impl Default for FadingConfig {
    fn default() -> Self {
        FadingConfig { k_factor_db: 9.0, sinusoids: 16 }
    }
}

/// One link's fading realisation: all randomness is drawn at construction,
/// after which the gain is a pure function of (LOS state, distance travelled).
#[derive(Clone, Debug)]
pub struct Fading {
    /// Per sinusoid: (k·cos αₙ in rad/m, φₙ).
    diffuse: Vec<(f64, f64)>,
    /// Specular component: (k·cos θ₀, φ₀).
    specular: (f64, f64),
    /// √(K/(K+1)) and √(1/(K+1)).
    amp_los: f64,
    amp_diffuse_los: f64,
}

impl Fading {
    /// Draw a realisation from the link's `fading` stream: θ, then φ₁..φ_M,
    /// then θ₀ and φ₀ (M + 3 uniforms).
    pub fn new(config: &FadingConfig, fc_ghz: f64, rng: &mut impl RngCore) -> Result<Self, ConfigError> {
        if !config.k_factor_db.is_finite() {
            return Err(ConfigError::new("fading.k_factor_db", config.k_factor_db, "a finite number"));
        }
        if config.sinusoids == 0 {
            return Err(ConfigError::new("fading.sinusoids", config.sinusoids, "at least 1"));
        }
        let wavenumber = TAU * fc_ghz * 1e9 / SPEED_OF_LIGHT_MPS;
        let m = config.sinusoids as f64;
        let theta = TAU * uniform01(rng);
        let diffuse = (0..config.sinusoids)
            .map(|n| {
                let alpha = (TAU * n as f64 + theta) / m;
                (wavenumber * alpha.cos(), TAU * uniform01(rng))
            })
            .collect();
        let specular = (wavenumber * (TAU * uniform01(rng)).cos(), TAU * uniform01(rng));
        let k = 10f64.powf(config.k_factor_db / 10.0);
        Ok(Fading { diffuse, specular, amp_los: (k / (k + 1.0)).sqrt(), amp_diffuse_los: (1.0 / (k + 1.0)).sqrt() })
    }

    /// Complex gain h at route position `travelled_m`.
    fn gain(&self, los: bool, travelled_m: f64) -> (f64, f64) {
        let (mut re, mut im) = (0.0, 0.0);
        for &(kc, phi) in &self.diffuse {
            let (s, c) = (kc * travelled_m + phi).sin_cos();
            re += c;
            im += s;
        }
        let norm = 1.0 / (self.diffuse.len() as f64).sqrt();
        if !los {
            return (re * norm, im * norm);
        }
        let a = self.amp_diffuse_los * norm;
        let (s, c) = (self.specular.0 * travelled_m + self.specular.1).sin_cos();
        (self.amp_los * c + a * re, self.amp_los * s + a * im)
    }

    /// Power gain F = 10 log10 |h|² in dB.
    pub fn gain_db(&self, los: bool, travelled_m: f64) -> f64 {
        let (re, im) = self.gain(los, travelled_m);
        lin_to_db(re * re + im * im)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// Bessel J0 by its power series Σ (−1)^k (x/2)^{2k} / (k!)², accurate to
    /// ~1e-12 for the |x| ≤ 10 used here.
    fn j0(x: f64) -> f64 {
        let q = -(x * x) / 4.0;
        let (mut term, mut sum) = (1.0, 1.0);
        for k in 1..60 {
            term *= q / (k * k) as f64;
            sum += term;
        }
        sum
    }

    #[test]
    fn j0_reference_values() {
        assert!((j0(0.0) - 1.0).abs() < 1e-15);
        assert!((j0(2.404825557695773)).abs() < 1e-12);
        assert!((j0(1.0) - 0.7651976865579666).abs() < 1e-12);
    }

    #[test]
    fn autocorrelation_follows_clarke() {
        // v = 1.5 m/s at 28 GHz: f_d = 140 Hz. Sample every 125 µs for 20 s
        // (2 800 Doppler periods) and average the normalised sample
        // autocorrelation Re Σ h(t) h*(t+τ) / Σ |h(t)|² over 8 seeds.
        // Error budget: the M = 16 rectangle rule of J0's integral is off by
        // ≈ 2·J_16(2π f_d τ) < 10⁻⁵ for f_d τ ≤ 1; the cross terms between
        // sinusoids n ≠ m, whose Doppler frequencies differ by Δf, average
        // over the window T to ≈ 1/(2π Δf T) each, weighted 1/M — below 10⁻³
        // unless two of them nearly coincide (Δf < 0.1 Hz, rare for a
        // random rotation θ). Observed errors are ≈ 5·10⁻⁵; the tolerance
        // of 0.01 leaves room for an unlucky θ yet fails for a wrong Doppler
        // (a 5 % error in f_d moves J0 by > 0.02 at f_d τ = 0.25).
        let fd = 1.5 * 28e9 / SPEED_OF_LIGHT_MPS;
        let dt = 125e-6;
        let n = 160_000usize;
        for lag_fd in [0.05f64, 0.1, 0.25, 0.5, 1.0] {
            let lag = (lag_fd / fd / dt).round() as usize;
            let tau = lag as f64 * dt;
            let mut acc = 0.0;
            let seeds = 8;
            for seed in 0..seeds {
                let f = Fading::new(&FadingConfig::default(), 28.0, &mut Xoshiro256PlusPlus::seed_from_u64(seed)).unwrap();
                let h: Vec<(f64, f64)> = (0..n).map(|i| f.gain(false, 1.5 * i as f64 * dt)).collect();
                let (mut num, mut pow) = (0.0, 0.0);
                for i in 0..n - lag {
                    let (a, b) = (h[i], h[i + lag]);
                    num += a.0 * b.0 + a.1 * b.1;
                    pow += a.0 * a.0 + a.1 * a.1;
                }
                acc += num / pow;
            }
            let r = acc / seeds as f64;
            let expected = j0(TAU * fd * tau);
            assert!((r - expected).abs() < 0.01, "f_d·τ = {lag_fd}: {r} vs {expected}");
        }
    }

    #[test]
    fn mean_power_is_one_and_rayleigh_fades_deeply() {
        // Average over 20 realisations × 2 000 wavelengths of route: the
        // standard error of the mean power is ≈ 1 %, tolerance 5 %.
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
        let lambda = SPEED_OF_LIGHT_MPS / 28e9;
        let (mut p_los, mut p_nlos, mut below, mut count) = (0.0, 0.0, 0usize, 0usize);
        for _ in 0..20 {
            let f = Fading::new(&FadingConfig::default(), 28.0, &mut rng).unwrap();
            for i in 0..20_000 {
                let s = i as f64 * lambda / 10.0;
                p_los += 10f64.powf(f.gain_db(true, s) / 10.0);
                let g = 10f64.powf(f.gain_db(false, s) / 10.0);
                p_nlos += g;
                below += (g < 0.1) as usize;
                count += 1;
            }
        }
        let (p_los, p_nlos) = (p_los / count as f64, p_nlos / count as f64);
        assert!((p_los - 1.0).abs() < 0.05, "Rician mean power {p_los}");
        assert!((p_nlos - 1.0).abs() < 0.05, "Rayleigh mean power {p_nlos}");
        // Rayleigh: P(|h|² < 0.1) = 1 − e^−0.1 ≈ 0.095.
        let frac = below as f64 / count as f64;
        assert!((frac - 0.095).abs() < 0.02, "deep-fade fraction {frac}");
    }

    #[test]
    fn frozen_when_not_moving_and_reproducible() {
        let f = Fading::new(&FadingConfig::default(), 28.0, &mut Xoshiro256PlusPlus::seed_from_u64(1)).unwrap();
        let g = Fading::new(&FadingConfig::default(), 28.0, &mut Xoshiro256PlusPlus::seed_from_u64(1)).unwrap();
        assert_eq!(f.gain_db(true, 3.25), g.gain_db(true, 3.25));
        assert_eq!(f.gain_db(false, 0.0), f.gain_db(false, 0.0));
        let e = Fading::new(&FadingConfig { k_factor_db: 9.0, sinusoids: 0 }, 28.0, &mut Xoshiro256PlusPlus::seed_from_u64(1));
        assert!(e.is_err());
    }
}
