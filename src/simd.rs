//! The SIMD level the encoder, the scanner and the UTF-8 conversion may use.
//!
//! Every kernel that needs a CPU feature asks `allows(level)` as well as the
//! CPU, so one setting lowers the whole library to a level: the best the CPU
//! has by default, or the level named by the `TOKENSMITH_SIMD` environment
//! variable (`scalar`, `avx2`, `avx512`; read once, at the first question),
//! or by `set_level` (tests). That is how the scalar and AVX2 paths of the
//! whole encoder are run on a machine with AVX-512: every level must give
//! the same ids, and the exactness suites run at `scalar` in CI.
//!
//! A level above what the CPU has changes nothing: each kernel still checks
//! its own features. `scalar` means the target's baseline (SSE2 on x86_64).
//! Models built before a change may keep the strategy they chose when they
//! were built; set the level before building tokenizers.

use std::sync::atomic::{AtomicU8, Ordering};

/// How far the library may go beyond the target's baseline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// The baseline only (portable code; SSE2 on x86_64)
    Scalar = 0,
    /// AVX2 (and the SSE levels below it)
    Avx2 = 1,
    /// AVX-512 (the kernels each check the extensions they use)
    Avx512 = 2,
}

impl Level {
    /// Every level, lowest first.
    pub const ALL: [Level; 3] = [Level::Scalar, Level::Avx2, Level::Avx512];

    /// The name `TOKENSMITH_SIMD` takes.
    pub fn name(self) -> &'static str {
        match self {
            Level::Scalar => "scalar",
            Level::Avx2 => "avx2",
            Level::Avx512 => "avx512",
        }
    }

    /// The level of a name, if it is one.
    pub fn parse(name: &str) -> Option<Level> {
        Level::ALL
            .into_iter()
            .find(|l| l.name().eq_ignore_ascii_case(name.trim()))
    }

    fn from_u8(v: u8) -> Level {
        match v {
            0 => Level::Scalar,
            1 => Level::Avx2,
            _ => Level::Avx512,
        }
    }
}

/// The environment variable that caps the level.
pub const ENV: &str = "TOKENSMITH_SIMD";

/// `UNREAD` until the environment is read; then a `Level` as `u8`.
const UNREAD: u8 = u8::MAX;
static CAP: AtomicU8 = AtomicU8::new(UNREAD);

/// The cap `TOKENSMITH_SIMD` names: `Ok(None)` when unset, `Err` with the
/// value when it names no level.
pub fn env_level() -> Result<Option<Level>, String> {
    match std::env::var(ENV) {
        Ok(v) if v.trim().is_empty() => Ok(None),
        Ok(v) => Level::parse(&v).map(Some).ok_or(v),
        Err(_) => Ok(None),
    }
}

/// The level in force (a cap; the CPU may have less).
#[inline]
pub fn level() -> Level {
    let v = CAP.load(Ordering::Relaxed);
    if v != UNREAD {
        return Level::from_u8(v);
    }
    // A bad value is refused where the library is loaded (the Python module
    // checks `env_level`); here it means no cap.
    let cap = env_level().ok().flatten().unwrap_or(Level::Avx512);
    CAP.store(cap as u8, Ordering::Relaxed);
    cap
}

/// Whether kernels of `l` may run (if the CPU has their features).
#[inline]
pub fn allows(l: Level) -> bool {
    level() >= l
}

/// Caps the level (`None`: the CPU's best); returns the cap before.
pub fn set_level(l: Option<Level>) -> Level {
    let before = level();
    CAP.store(l.unwrap_or(Level::Avx512) as u8, Ordering::Relaxed);
    before
}

/// The best level this CPU has, whatever the cap.
pub fn detected() -> Level {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx2") {
            return Level::Avx512;
        }
        if std::is_x86_feature_detected!("avx2") {
            return Level::Avx2;
        }
    }
    Level::Scalar
}

/// The level kernels really run at: the cap, or less if the CPU has less.
pub fn effective() -> Level {
    level().min(detected())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_bad_names_are_none() {
        for l in Level::ALL {
            assert_eq!(Level::parse(l.name()), Some(l));
            assert_eq!(Level::parse(&l.name().to_uppercase()), Some(l));
        }
        assert_eq!(Level::parse("sse9"), None);
        assert_eq!(Level::parse(""), None);
    }

    #[test]
    fn levels_are_ordered() {
        assert!(Level::Scalar < Level::Avx2 && Level::Avx2 < Level::Avx512);
    }
}
