//! The flags `/readyz` reads besides the certificate and the caches (DECISIONS 22): whether this replica is
//! shutting down, and whether our caBundle was seen in place in the webhook configurations. Shutdown and
//! the certificate manager ([`crate::certs`]) set them; the probe handlers ([`super::health`]) read them.

use std::sync::atomic::{AtomicBool, Ordering};

/// What one look at our webhook configurations found, ordered so that the worst of several looks is their
/// `max` (DECISIONS 22).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CaBundleSeen {
    /// Every served webhook of ours carries our caBundle (or the configuration is not installed).
    InPlace,
    /// The configuration could not be read (API server unreachable, 5xx, ...): the last verdict stands.
    Unread,
    /// A served webhook of ours carries another caBundle, or none: the API server cannot call us.
    Wrong,
}

/// Flags readiness is computed from.
#[derive(Debug)]
pub struct Readiness {
    /// Set on SIGTERM: the apiserver should stop sending us reviews.
    pub shutting_down: AtomicBool,
    /// Whether the API server trusts us: false from [`Readiness::await_ca_bundle`] until our caBundle is seen
    /// in place, and again whenever it is seen wrong; true where no configuration is ours to judge (standalone).
    ca_bundle_in_place: AtomicBool,
}

impl Default for Readiness {
    fn default() -> Self {
        Self {
            shutting_down: AtomicBool::new(false),
            ca_bundle_in_place: AtomicBool::new(true),
        }
    }
}

impl Readiness {
    /// Marks the start of shutdown.
    pub fn begin_shutdown(&self) {
        self.shutting_down.store(true, Ordering::Release);
    }

    /// In a cluster: not ready until a look at the webhook configurations sees our caBundle in place.
    pub fn await_ca_bundle(&self) {
        self.ca_bundle_in_place.store(false, Ordering::Release);
    }

    /// Records a look at the webhook configurations. Only what was seen changes the verdict: once the
    /// caBundle was seen in place, an API server that cannot be reached does not make us unready (every
    /// replica would leave the Service at once on an API server blip); a caBundle seen wrong does.
    pub fn observe_ca_bundle(&self, seen: CaBundleSeen) {
        match seen {
            CaBundleSeen::InPlace => self.ca_bundle_in_place.store(true, Ordering::Release),
            CaBundleSeen::Wrong => self.ca_bundle_in_place.store(false, Ordering::Release),
            CaBundleSeen::Unread => {}
        }
    }

    /// Whether the readiness check `ca-bundle-injected` passes.
    pub fn ca_bundle_in_place(&self) -> bool {
        self.ca_bundle_in_place.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unread_configuration_keeps_the_last_verdict_and_only_a_wrong_one_unreadies() {
        let readiness = Readiness::default();
        assert!(
            readiness.ca_bundle_in_place(),
            "standalone: nothing to wait for"
        );
        readiness.await_ca_bundle();
        assert!(!readiness.ca_bundle_in_place());
        readiness.observe_ca_bundle(CaBundleSeen::Unread);
        assert!(!readiness.ca_bundle_in_place(), "never seen in place yet");
        readiness.observe_ca_bundle(CaBundleSeen::InPlace);
        assert!(readiness.ca_bundle_in_place());
        readiness.observe_ca_bundle(CaBundleSeen::Unread);
        assert!(readiness.ca_bundle_in_place(), "API server unreachable");
        readiness.observe_ca_bundle(CaBundleSeen::Wrong);
        assert!(!readiness.ca_bundle_in_place());
        readiness.observe_ca_bundle(CaBundleSeen::Unread);
        assert!(!readiness.ca_bundle_in_place(), "seen wrong stays wrong");
        // Several configurations: the worst look counts.
        let looks = [
            CaBundleSeen::InPlace,
            CaBundleSeen::Wrong,
            CaBundleSeen::Unread,
        ];
        assert_eq!(looks.into_iter().max(), Some(CaBundleSeen::Wrong));
        assert_eq!(
            [CaBundleSeen::InPlace, CaBundleSeen::Unread]
                .into_iter()
                .max(),
            Some(CaBundleSeen::Unread)
        );
    }
}
