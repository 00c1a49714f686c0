//! Carrying a [`CertPlan`] out in memory: CA and serving-certificate generation with rcgen on ring.
//! Keys are random (ECDSA P-256; ring cannot generate RSA); nothing else is: `now` comes in.

use std::net::IpAddr;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, PKCS_ECDSA_P256_SHA256, SanType,
};
use time::OffsetDateTime;

use crate::bundle::{CA_CERT_KEY, CA_KEY_KEY};
use crate::inspect::{CertInfo, parse_der, signed_by};
use crate::pem::{self, decode_certs, key_matches, load_key};
use crate::{CLOCK_SKEW, CertBundle, CertError, CertPlan, Policy};

/// Subject CN of the CA, OpenKruise's (spec/webhook-server.md section 6.3).
pub const CA_COMMON_NAME: &str = "webhook-cert-ca";

/// Carries the plan out in memory and returns the bundle to write to the Secret. Key generation is
/// random; there is no I/O and no clock (`now` comes in). `current` must be the bundle `plan` saw.
///
/// # Errors
/// [`CertError::MissingCurrent`] when a plan that builds on the current bundle gets none;
/// [`CertError::CaUnusable`] (and the key and PEM errors) when the current CA cannot sign;
/// [`CertError::Generate`] when rcgen fails.
pub fn execute(
    plan: &CertPlan,
    current: Option<&CertBundle>,
    now: OffsetDateTime,
    policy: &Policy,
) -> Result<CertBundle, CertError> {
    let need = || current.ok_or(CertError::MissingCurrent { plan: plan.name() });
    match plan {
        CertPlan::Keep => need().cloned(),
        CertPlan::Fresh | CertPlan::Replace { .. } => {
            let (ca_cert_pem, ca_key_pem) = new_ca(now, policy)?;
            let signer = CaSigner::load(&ca_cert_pem, &ca_key_pem)?;
            let (cert_pem, key_pem) = signer.issue_serving(now, policy)?;
            Ok(CertBundle {
                ca_bundle_pem: ca_cert_pem.clone(),
                ca_cert_pem,
                ca_key_pem,
                cert_pem,
                key_pem,
            })
        }
        CertPlan::ReissueServing { .. } | CertPlan::PromoteNewCa => {
            let current = need()?;
            let signer = CaSigner::load(&current.ca_cert_pem, &current.ca_key_pem)?;
            let (cert_pem, key_pem) = signer.issue_serving(now, policy)?;
            Ok(CertBundle {
                cert_pem,
                key_pem,
                ..current.clone()
            })
        }
        CertPlan::StartCaRotation { .. } => {
            let current = need()?;
            // Keep trusting every CA that still can vouch for a served certificate: the bundle's
            // unexpired CAs and the current one (it signed the certificate that stays in service).
            let mut trusted: Vec<Vec<u8>> = Vec::new();
            let carried = decode_certs(&current.ca_bundle_pem, "the caBundle")?
                .into_iter()
                .chain(decode_certs(&current.ca_cert_pem, CA_CERT_KEY)?);
            for der in carried {
                let unexpired = CertInfo::from_der(&der).is_ok_and(|ca| now < ca.not_after);
                if unexpired && !trusted.contains(&der) {
                    trusted.push(der);
                }
            }
            let (ca_cert_pem, ca_key_pem) = new_ca(now, policy)?;
            let mut ca_bundle_pem: String = trusted
                .iter()
                .map(|der| pem::encode(pem::CERTIFICATE, der))
                .collect();
            ca_bundle_pem.push_str(&ca_cert_pem);
            Ok(CertBundle {
                ca_cert_pem,
                ca_key_pem,
                ca_bundle_pem,
                ..current.clone()
            })
        }
        CertPlan::FinishCaRotation => {
            let current = need()?;
            Ok(CertBundle {
                ca_bundle_pem: current.ca_cert_pem.clone(),
                ..current.clone()
            })
        }
    }
}

/// A fresh ECDSA P-256 key and certificate parameters whose subject is just `common_name`.
fn fresh_key_and_params(common_name: &str) -> Result<(KeyPair, CertificateParams), rcgen::Error> {
    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    Ok((key, params))
}

/// A new self-signed CA as (certificate PEM, PKCS#8 key PEM): CN `webhook-cert-ca`, CA, may sign
/// certificates and CRLs, valid `ca_validity` from now (back-dated by [`CLOCK_SKEW`]). The serial is
/// rcgen's default, a hash of the fresh random public key, so it is random too.
fn new_ca(now: OffsetDateTime, policy: &Policy) -> Result<(String, String), CertError> {
    let generate = |source| CertError::Generate {
        what: "the CA",
        source,
    };
    let (key, mut params) = fresh_key_and_params(CA_COMMON_NAME).map_err(generate)?;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params.not_before = now - CLOCK_SKEW;
    params.not_after = now + policy.ca_validity;
    let cert = params.self_signed(&key).map_err(generate)?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// A CA that has been checked able to sign: a CA certificate, its key, and a trial signature that
/// verifies against the certificate.
pub(crate) struct CaSigner {
    issuer: Issuer<'static, KeyPair>,
    not_after: OffsetDateTime,
    has_key_id: bool,
}

impl CaSigner {
    /// Loads the CA from its PEMs and proves it can sign. Any failure means the CA is unusable
    /// (DECISIONS 15: the plan then rotates it).
    pub(crate) fn load(ca_cert_pem: &str, ca_key_pem: &str) -> Result<Self, CertError> {
        let unusable = |reason: String| CertError::CaUnusable { reason };
        let ca_der = decode_certs(ca_cert_pem, CA_CERT_KEY)?
            .into_iter()
            .next()
            .ok_or_else(|| unusable("ca-cert.pem holds no certificate".to_owned()))?;
        let ca = parse_der(&ca_der).map_err(|source| CertError::Certificate {
            what: CA_CERT_KEY.to_owned(),
            source,
        })?;
        if !ca.is_ca() {
            return Err(unusable(
                "ca-cert.pem is not a CA certificate (basicConstraints CA is not set)".to_owned(),
            ));
        }
        if let Ok(Some(usage)) = ca.key_usage()
            && !usage.value.key_cert_sign()
        {
            return Err(unusable(
                "ca-cert.pem's key usage does not allow signing certificates".to_owned(),
            ));
        }
        // rcgen re-encodes the issuer name and panics on an empty RDN; only single-valued RDNs round-trip.
        if ca.subject().iter().any(|rdn| rdn.iter().count() != 1) {
            return Err(unusable(
                "ca-cert.pem's subject has an empty or multi-valued RDN".to_owned(),
            ));
        }
        let key = load_key(ca_key_pem, CA_KEY_KEY)?;
        if !key_matches(&key, &ca_der) {
            return Err(CertError::KeyMismatch {
                what: "ca-key.pem against ca-cert.pem".to_owned(),
            });
        }
        let has_key_id = ca
            .iter_extensions()
            .any(|ext| ext.oid == x509_parser::oid_registry::OID_X509_EXT_SUBJECT_KEY_IDENTIFIER);
        let not_after = ca.validity().not_after.to_datetime();
        let issuer = Issuer::from_ca_cert_der(&ca_der.as_slice().into(), key)
            .map_err(|e| unusable(format!("reading ca-cert.pem as an issuer: {e}")))?;
        let signer = Self {
            issuer,
            not_after,
            has_key_id,
        };
        signer.prove(&ca_der)?;
        Ok(signer)
    }

    /// Signs a throw-away certificate (for the CA's own public key) and checks it verifies against the
    /// CA certificate with the same issuer name, so a CA we cannot really sign with is found before use.
    fn prove(&self, ca_der: &[u8]) -> Result<(), CertError> {
        let mut params = CertificateParams::default();
        params.distinguished_name = DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::CommonName, "kruise-certs signing check");
        let trial = params
            .signed_by(self.issuer.key(), &self.issuer)
            .map_err(|e| CertError::CaUnusable {
                reason: format!("a trial signature failed: {e}"),
            })?;
        if signed_by(trial.der(), ca_der) {
            Ok(())
        } else {
            Err(CertError::CaUnusable {
                reason: "a trial signature does not verify against ca-cert.pem".to_owned(),
            })
        }
    }

    /// A new serving pair as (certificate PEM, PKCS#8 key PEM): CN and SANs from the policy (IP
    /// literals as IP SANs), server auth, valid from `now - CLOCK_SKEW` for `serving_validity` but never
    /// past the CA.
    pub(crate) fn issue_serving(
        &self,
        now: OffsetDateTime,
        policy: &Policy,
    ) -> Result<(String, String), CertError> {
        let generate = |source| CertError::Generate {
            what: "the serving certificate",
            source,
        };
        let (key, mut params) =
            fresh_key_and_params(policy.common_name.as_str()).map_err(generate)?;
        params.subject_alt_names = policy
            .dns_names
            .iter()
            .map(|name| match name.parse::<IpAddr>() {
                Ok(ip) => Ok(SanType::IpAddress(ip)),
                Err(_) => name.clone().try_into().map(SanType::DnsName),
            })
            .collect::<Result<_, _>>()
            .map_err(generate)?;
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.not_before = now - CLOCK_SKEW;
        params.not_after = (now + policy.serving_validity).min(self.not_after);
        params.use_authority_key_identifier_extension = self.has_key_id;
        let cert = params.signed_by(&key, &self.issuer).map_err(generate)?;
        Ok((cert.pem(), key.serialize_pem()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inspect::inspect;
    use crate::testutil::{OK_CA_CERT, OK_CA_KEY, T0, fresh, policy};
    use time::Duration;
    use x509_parser::extensions::ParsedExtension;

    #[test]
    fn a_new_ca_has_openkruises_name_ca_constraints_and_ten_years() {
        let bundle = fresh(T0);
        let ca = inspect(&bundle.ca_cert_pem).unwrap();
        assert_eq!(ca.common_name.as_deref(), Some(CA_COMMON_NAME));
        assert!(ca.is_ca);
        assert_eq!(ca.not_before, T0 - CLOCK_SKEW);
        assert_eq!(ca.not_after, T0 + Duration::days(3650));
        let der = decode_certs(&bundle.ca_cert_pem, "ca").unwrap();
        let parsed = parse_der(&der[0]).unwrap();
        let usage = parsed.key_usage().unwrap().unwrap().value;
        assert!(usage.key_cert_sign() && usage.crl_sign() && usage.digital_signature());
        assert!(bundle.ca_key_pem.starts_with("-----BEGIN PRIVATE KEY-----"));
        assert_eq!(bundle.ca_bundle_pem, bundle.ca_cert_pem);
    }

    #[test]
    fn a_serving_cert_has_the_policy_names_ip_sans_and_server_auth() {
        let mut policy = Policy::new("svc.ns.svc", ["svc.ns", "10.0.0.5", "::1"]);
        policy.serving_validity = Duration::days(365);
        let bundle = execute(&CertPlan::Fresh, None, T0, &policy).unwrap();
        let cert = inspect(&bundle.cert_pem).unwrap();
        assert_eq!(cert.common_name.as_deref(), Some("svc.ns.svc"));
        assert_eq!(cert.dns_names, ["localhost", "svc.ns.svc", "svc.ns"]);
        assert_eq!(
            cert.ip_addresses,
            [
                "10.0.0.5".parse::<IpAddr>().unwrap(),
                "::1".parse::<IpAddr>().unwrap()
            ]
        );
        assert!(!cert.is_ca);
        assert_eq!(cert.not_before, T0 - CLOCK_SKEW);
        assert_eq!(cert.not_after, T0 + Duration::days(365));
        assert!(cert.issued_by(&inspect(&bundle.ca_cert_pem).unwrap()));
        assert!(bundle.key_pem.starts_with("-----BEGIN PRIVATE KEY-----"));

        let der = decode_certs(&bundle.cert_pem, "cert").unwrap();
        let parsed = parse_der(&der[0]).unwrap();
        let usage = parsed.key_usage().unwrap().unwrap().value;
        assert!(usage.digital_signature() && usage.key_encipherment());
        assert!(!usage.key_cert_sign());
        let eku = parsed.extended_key_usage().unwrap().unwrap().value;
        assert!(eku.server_auth);
        let has_aki = parsed.iter_extensions().any(|e| {
            matches!(
                e.parsed_extension(),
                ParsedExtension::AuthorityKeyIdentifier(_)
            )
        });
        assert!(has_aki);
    }

    #[test]
    fn a_serving_cert_never_outlives_its_ca() {
        let mut policy = policy();
        policy.ca_validity = Duration::days(100);
        let bundle = execute(&CertPlan::Fresh, None, T0, &policy).unwrap();
        let ca = inspect(&bundle.ca_cert_pem).unwrap();
        let cert = inspect(&bundle.cert_pem).unwrap();
        assert_eq!(cert.not_after, ca.not_after);
    }

    #[test]
    fn plans_that_build_on_the_current_bundle_need_one() {
        for plan in [
            CertPlan::Keep,
            CertPlan::ReissueServing {
                reason: String::new(),
            },
            CertPlan::StartCaRotation {
                reason: String::new(),
            },
            CertPlan::PromoteNewCa,
            CertPlan::FinishCaRotation,
        ] {
            let err = execute(&plan, None, T0, &policy()).unwrap_err();
            assert!(
                matches!(err, CertError::MissingCurrent { .. }),
                "{plan:?}: {err}"
            );
        }
    }

    #[test]
    fn an_openkruise_rsa_ca_can_sign() {
        let signer = CaSigner::load(OK_CA_CERT, OK_CA_KEY).unwrap();
        let (cert_pem, _) = signer.issue_serving(T0, &policy()).unwrap();
        let cert = inspect(&cert_pem).unwrap();
        assert!(cert.issued_by(&inspect(OK_CA_CERT).unwrap()));
    }

    #[test]
    fn a_ca_whose_key_belongs_elsewhere_is_unusable() {
        let other = fresh(T0);
        let err = CaSigner::load(OK_CA_CERT, &other.ca_key_pem)
            .err()
            .expect("a mismatched key must not sign");
        assert!(matches!(err, CertError::KeyMismatch { .. }), "{err}");
    }

    #[test]
    fn a_leaf_certificate_cannot_act_as_ca() {
        let bundle = fresh(T0);
        let err = CaSigner::load(&bundle.cert_pem, &bundle.key_pem)
            .err()
            .expect("a leaf must not sign");
        assert_eq!(
            err.to_string(),
            "signing with the CA: ca-cert.pem is not a CA certificate (basicConstraints CA is not set)"
        );
    }
}
