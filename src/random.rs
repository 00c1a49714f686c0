//! A random draw for what must not move in step across replicas or requests: the jitter of retries (status
//! writes, the PUB status controller) and the draw a decision is given ([`crate::server::admission::Env`]).
//! Its own module, below everything that draws, so that none of them imports another for it.

/// A uniform draw from [0, 1): std's per-instance random hasher keys are the entropy (no extra crate).
pub fn random_unit() -> f64 {
    use std::hash::BuildHasher;
    let bits = std::collections::hash_map::RandomState::new().hash_one(0u8) >> 11;
    bits as f64 / (1u64 << 53) as f64
}
