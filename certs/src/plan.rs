//! The pure rotation plan (STYLE.md section 6: `certs/` decides, `src/` acts; DECISIONS 15). The
//! rotation stages are described in the crate documentation; [`plan`] reads them from the bundle.

use std::fmt;

use time::OffsetDateTime;

use crate::bundle::{CA_CERT_KEY, CERT_KEY, KEY_KEY};
use crate::inspect::{CertInfo, inspect_all};
use crate::issue::CaSigner;
use crate::pem::{decode_certs, key_matches, load_key};
use crate::{CLOCK_SKEW, CertBundle, Policy};

/// What to do with the certificates; [`plan`] decides, [`crate::execute`] carries it out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CertPlan {
    /// Everything is valid and in its final stage: nothing to write.
    Keep,
    /// Nothing usable exists: a new CA and serving certificate; the bundle is the new CA only.
    Fresh,
    /// The serving certificate is expired, near expiry, misses a policy name, does not match its key or
    /// is not signed by a trusted CA: a new one from the current CA; CA and bundle unchanged.
    ReissueServing {
        /// Why the serving certificate is replaced.
        reason: String,
    },
    /// The current CA is near expiry (less than `serving_validity + renew_before` left) or unusable but
    /// still valid: a new CA becomes `ca-cert.pem`, the bundle holds the old CA(s) and the new one, and
    /// the serving certificate (signed by the old CA) stays in service.
    StartCaRotation {
        /// Why the CA is replaced.
        reason: String,
    },
    /// The new CA has been in the bundle for `propagation`: issue the serving certificate from it.
    /// Both CAs stay in the bundle.
    PromoteNewCa,
    /// A serving certificate from the current CA has existed for `propagation`: the bundle becomes the
    /// current CA only (older and expired CAs leave). Also the repair of an unreadable caBundle.
    FinishCaRotation,
    /// The CA expired (or cannot sign and the serving certificate is broken too): like [`CertPlan::Fresh`];
    /// no overlap is possible because nothing in service can stay trusted.
    Replace {
        /// Why everything is replaced.
        reason: String,
    },
}

impl CertPlan {
    /// Whether carrying the plan out changes the Secret (everything but [`CertPlan::Keep`]).
    pub fn changes_secret(&self) -> bool {
        !matches!(self, Self::Keep)
    }

    /// A short stable name for logs and metrics, e.g. `start_ca_rotation`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Keep => "keep",
            Self::Fresh => "fresh",
            Self::ReissueServing { .. } => "reissue_serving",
            Self::StartCaRotation { .. } => "start_ca_rotation",
            Self::PromoteNewCa => "promote_new_ca",
            Self::FinishCaRotation => "finish_ca_rotation",
            Self::Replace { .. } => "replace",
        }
    }
}

impl fmt::Display for CertPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ReissueServing { reason }
            | Self::StartCaRotation { reason }
            | Self::Replace { reason } => write!(f, "{}: {reason}", self.name()),
            _ => f.write_str(self.name()),
        }
    }
}

/// Decides what to do with the certificates in `current` at `now`. Pure: no I/O, no clock; a trial
/// signature proves the CA usable (its only randomness is the signature nonce, not the outcome).
/// Assumes `ca_bundle_pem` contains `ca_cert_pem`, as [`CertBundle::from_secret_data`] ensures.
pub fn plan(current: Option<&CertBundle>, now: OffsetDateTime, policy: &Policy) -> CertPlan {
    let Some(bundle) = current else {
        return CertPlan::Fresh;
    };
    let ca = match inspect_all(&bundle.ca_cert_pem, CA_CERT_KEY) {
        Ok(mut cas) => cas.swap_remove(0),
        Err(e) => {
            return CertPlan::Replace {
                reason: e.to_string(),
            };
        }
    };
    if now >= ca.not_after {
        return CertPlan::Replace {
            reason: format!("the CA expired at {}", ca.not_after),
        };
    }
    if ca.not_before > now + CLOCK_SKEW {
        return CertPlan::Replace {
            reason: format!("the CA is not valid before {}", ca.not_before),
        };
    }
    // An unreadable caBundle trusts nothing, so replacing it by the current CA breaks nothing.
    let Ok(in_bundle) = decode_certs(&bundle.ca_bundle_pem, "the caBundle") else {
        return CertPlan::FinishCaRotation;
    };
    let others: Vec<Vec<u8>> = in_bundle
        .into_iter()
        .filter(|der| der != ca.der())
        .collect();
    let previous: Vec<CertInfo> = others
        .iter()
        .filter_map(|der| CertInfo::from_der(der).ok())
        .filter(|prev| prev.valid_at(now))
        .collect();

    let serving = Serving::check(bundle, now, policy);
    let signer = serving.info.as_ref().and_then(|cert| {
        if cert.issued_by(&ca) {
            Some(Signer::Current)
        } else if previous.iter().any(|prev| cert.issued_by(prev)) {
            Some(Signer::Previous)
        } else {
            None
        }
    });
    let broken = serving.broken.clone().or_else(|| {
        signer
            .is_none()
            .then(|| "the serving certificate is not signed by a CA of the bundle".to_owned())
    });

    if let Err(unusable) = CaSigner::load(&bundle.ca_cert_pem, &bundle.ca_key_pem) {
        return match broken {
            Some(serving) => CertPlan::Replace {
                reason: format!("{unusable}; {serving}"),
            },
            // The served certificate stays trusted while a new CA takes over.
            None => CertPlan::StartCaRotation {
                reason: unusable.to_string(),
            },
        };
    }
    if let Some(reason) = broken {
        return CertPlan::ReissueServing { reason };
    }
    match signer {
        // Mid-rotation: wait until every apiserver trusts the new CA, then serve a certificate from it.
        // A stale (not broken) serving certificate waits too: promotion replaces it anyway.
        Some(Signer::Previous) => {
            if now >= ca.not_before + CLOCK_SKEW + policy.propagation {
                CertPlan::PromoteNewCa
            } else {
                CertPlan::Keep
            }
        }
        _ => {
            if ca.not_after - now < policy.serving_validity + policy.renew_before {
                return CertPlan::StartCaRotation {
                    reason: format!(
                        "the CA expires at {}, too soon to sign a full-length serving certificate",
                        ca.not_after
                    ),
                };
            }
            if let Some(reason) = serving.stale {
                return CertPlan::ReissueServing { reason };
            }
            let issued = serving
                .info
                .map_or(now, |cert| cert.not_before + CLOCK_SKEW);
            if !others.is_empty() && now >= issued + policy.propagation {
                CertPlan::FinishCaRotation
            } else {
                CertPlan::Keep
            }
        }
    }
}

/// Which CA of the bundle signed the serving certificate.
enum Signer {
    /// `ca-cert.pem`.
    Current,
    /// Another, still valid CA of the caBundle: a rotation is under way.
    Previous,
}

/// The serving certificate's state: `broken` must be fixed now, `stale` at the next good moment.
struct Serving {
    info: Option<CertInfo>,
    broken: Option<String>,
    stale: Option<String>,
}

impl Serving {
    fn check(bundle: &CertBundle, now: OffsetDateTime, policy: &Policy) -> Self {
        let broken = |reason: String| Self {
            info: None,
            broken: Some(reason),
            stale: None,
        };
        let der = match decode_certs(&bundle.cert_pem, CERT_KEY) {
            Ok(ders) => ders.into_iter().next().unwrap_or_default(),
            Err(e) => return broken(e.to_string()),
        };
        let info = match CertInfo::from_der(&der) {
            Ok(info) => info,
            Err(e) => return broken(format!("parsing cert.pem: {e}")),
        };
        match load_key(&bundle.key_pem, KEY_KEY) {
            Ok(key) if key_matches(&key, &der) => {}
            Ok(_) => return broken("key.pem does not match cert.pem".to_owned()),
            Err(e) => return broken(e.to_string()),
        }
        let broken = if now >= info.not_after {
            Some(format!(
                "the serving certificate expired at {}",
                info.not_after
            ))
        } else if info.not_before > now + CLOCK_SKEW {
            Some(format!(
                "the serving certificate is not valid before {}",
                info.not_before
            ))
        } else {
            None
        };
        let uncovered = policy.uncovered_names(&info.dns_names, &info.ip_addresses);
        let stale = if info.not_after - now < policy.renew_before {
            Some(format!(
                "the serving certificate expires at {}, within the renewal window",
                info.not_after
            ))
        } else if !uncovered.is_empty() {
            Some(format!(
                "the serving certificate does not cover {}",
                uncovered.join(", ")
            ))
        } else if info.common_name.as_deref() != Some(policy.common_name.as_str()) {
            Some(format!(
                "the serving certificate's common name is {:?}, not {:?}",
                info.common_name.as_deref().unwrap_or_default(),
                policy.common_name
            ))
        } else {
            None
        };
        Self {
            info: Some(info),
            broken,
            stale,
        }
    }
}

#[cfg(test)]
mod tests;
