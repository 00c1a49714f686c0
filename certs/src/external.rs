//! External certificates (DECISIONS 15; spec/webhook-server.md section 6.5): a cert dir or Secret in
//! cert-manager's layout (`tls.crt`, `tls.key`, `ca.crt`) that we check but never generate.

use crate::CertBundle;
use crate::CertError;
use crate::inspect::signed_by;
use crate::pem::{decode_certs, key_matches, load_key};

/// Checks an external certificate set and returns it as a bundle (`ca_key_pem` empty,
/// `ca_bundle_pem` = `ca_crt`). `tls_crt` may carry intermediates after the leaf; `tls_key` may be
/// PKCS#8, PKCS#1 or SEC1. Validity dates are not checked (no clock here).
///
/// # Errors
/// [`CertError`] when a PEM does not parse, the key does not match the leaf, or the leaf does not chain
/// (directly or through the intermediates of `tls_crt`) to a certificate of `ca_crt`.
pub fn from_external(tls_crt: &str, tls_key: &str, ca_crt: &str) -> Result<CertBundle, CertError> {
    let chain = decode_certs(tls_crt, "tls.crt")?;
    let key = load_key(tls_key, "tls.key")?;
    let roots = decode_certs(ca_crt, "ca.crt")?;
    let leaf = &chain[0];
    if !key_matches(&key, leaf) {
        return Err(CertError::KeyMismatch {
            what: "tls.key against tls.crt".to_owned(),
        });
    }
    let mut cert = leaf;
    // Each step moves to another intermediate, so the chain length bounds the walk.
    for _ in 0..chain.len() {
        if roots
            .iter()
            .any(|root| root == cert || signed_by(cert, root))
        {
            return Ok(CertBundle {
                ca_cert_pem: ca_crt.to_owned(),
                ca_key_pem: String::new(),
                cert_pem: tls_crt.to_owned(),
                key_pem: tls_key.to_owned(),
                ca_bundle_pem: ca_crt.to_owned(),
            });
        }
        match chain[1..]
            .iter()
            .find(|next| *next != cert && signed_by(cert, next))
        {
            Some(next) => cert = next,
            None => break,
        }
    }
    Err(CertError::Untrusted {
        what: "tls.crt".to_owned(),
        reason: "it does not chain to a certificate of ca.crt".to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{
        EXTERNAL_CA, EXTERNAL_TLS_CRT, EXTERNAL_TLS_KEY, OK_CA_CERT, OK_CERT, OK_KEY, T0, fresh,
    };
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    };

    #[test]
    fn a_cert_manager_dir_with_a_sec1_key_is_accepted() {
        let bundle = from_external(EXTERNAL_TLS_CRT, EXTERNAL_TLS_KEY, EXTERNAL_CA).unwrap();
        assert_eq!(bundle.ca_bundle_pem, EXTERNAL_CA);
        assert_eq!(bundle.ca_cert_pem, EXTERNAL_CA);
        assert!(bundle.ca_key_pem.is_empty());
        assert_eq!(bundle.cert_pem, EXTERNAL_TLS_CRT);
        assert_eq!(bundle.key_pem, EXTERNAL_TLS_KEY);
    }

    #[test]
    fn an_rsa_pkcs1_set_is_accepted() {
        assert!(from_external(OK_CERT, OK_KEY, OK_CA_CERT).is_ok());
    }

    #[test]
    fn a_key_of_another_cert_is_rejected() {
        let err = from_external(EXTERNAL_TLS_CRT, OK_KEY, EXTERNAL_CA).unwrap_err();
        assert_eq!(
            err.to_string(),
            "checking tls.key against tls.crt: the private key does not match the certificate"
        );
    }

    #[test]
    fn a_cert_that_does_not_chain_to_ca_crt_is_rejected() {
        let err = from_external(EXTERNAL_TLS_CRT, EXTERNAL_TLS_KEY, OK_CA_CERT).unwrap_err();
        assert_eq!(
            err.to_string(),
            "checking tls.crt: it does not chain to a certificate of ca.crt"
        );
        let ours = fresh(T0);
        assert!(from_external(&ours.cert_pem, &ours.key_pem, EXTERNAL_CA).is_err());
    }

    #[test]
    fn a_leaf_chains_through_intermediates_in_tls_crt() {
        let ca = |cn: &str| {
            let mut params = CertificateParams::default();
            params.distinguished_name.push(DnType::CommonName, cn);
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            params.key_usages = vec![KeyUsagePurpose::KeyCertSign];
            params
        };
        let root_key = KeyPair::generate().unwrap();
        let root_params = ca("root");
        let root = root_params.self_signed(&root_key).unwrap();
        let root_issuer = Issuer::new(root_params, root_key);
        let mid_key = KeyPair::generate().unwrap();
        let mid_params = ca("intermediate");
        let mid = mid_params.signed_by(&mid_key, &root_issuer).unwrap();
        let mid_issuer = Issuer::new(mid_params, mid_key);
        let leaf_key = KeyPair::generate().unwrap();
        let leaf = CertificateParams::new(vec!["localhost".to_owned()])
            .unwrap()
            .signed_by(&leaf_key, &mid_issuer)
            .unwrap();

        let chain = format!("{}{}", leaf.pem(), mid.pem());
        let key = leaf_key.serialize_pem();
        assert!(from_external(&chain, &key, &root.pem()).is_ok());
        // Without the intermediate the leaf does not reach the root.
        assert!(from_external(&leaf.pem(), &key, &root.pem()).is_err());
        // A self-signed leaf that is its own ca.crt is accepted.
        let own = fresh(T0);
        assert!(from_external(&own.ca_cert_pem, &own.ca_key_pem, &own.ca_cert_pem).is_ok());
    }

    #[test]
    fn garbage_external_files_are_errors() {
        assert!(from_external("x", EXTERNAL_TLS_KEY, EXTERNAL_CA).is_err());
        assert!(from_external(EXTERNAL_TLS_CRT, "x", EXTERNAL_CA).is_err());
        assert!(from_external(EXTERNAL_TLS_CRT, EXTERNAL_TLS_KEY, "").is_err());
    }
}
