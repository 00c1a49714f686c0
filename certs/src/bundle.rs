//! The certificate bundle as the Secret `kruise-webhook-certs` holds it (OpenKruise's name and keys,
//! spec/webhook-server.md section 6.3, plus our `ca-bundle.pem`), and the check of files on disk against it.

use std::collections::BTreeMap;

use crate::CertError;
use crate::pem::{self, decode_blocks, decode_certs, decode_key};

/// Name of the Secret that holds the one CA of the cluster (OpenKruise's).
pub const SECRET_NAME: &str = "kruise-webhook-certs";
/// Secret key of the signing CA's certificate.
pub const CA_CERT_KEY: &str = "ca-cert.pem";
/// Secret key of the signing CA's private key.
pub const CA_KEY_KEY: &str = "ca-key.pem";
/// Secret key of the serving certificate.
pub const CERT_KEY: &str = "cert.pem";
/// Secret key of the serving private key.
pub const KEY_KEY: &str = "key.pem";
/// Secret key duplicating [`CERT_KEY`] (written, never read, like OpenKruise).
pub const TLS_CRT_KEY: &str = "tls.crt";
/// Secret key duplicating [`KEY_KEY`] (written, never read, like OpenKruise).
pub const TLS_KEY_KEY: &str = "tls.key";
/// Our extra Secret key: the CAs the apiserver must trust (the caBundle).
pub const CA_BUNDLE_KEY: &str = "ca-bundle.pem";

/// Everything the Secret holds: the signing CA, the serving pair, and the caBundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertBundle {
    /// The current signing CA certificate (`ca-cert.pem`).
    pub ca_cert_pem: String,
    /// The current signing CA's private key (`ca-key.pem`); empty in external mode.
    pub ca_key_pem: String,
    /// The serving certificate (`cert.pem`, also written as `tls.crt`).
    pub cert_pem: String,
    /// The serving private key (`key.pem`, also written as `tls.key`).
    pub key_pem: String,
    /// What the apiserver must trust: `ca_cert_pem` plus, during a CA rotation, the previous CA(s).
    /// Stored under `ca-bundle.pem`; when that key is absent it equals `ca_cert_pem`.
    pub ca_bundle_pem: String,
}

impl CertBundle {
    /// Reads the Secret's data map. `Ok(None)` when any of `ca-cert.pem`, `ca-key.pem`, `cert.pem`,
    /// `key.pem` is missing or blank (OpenKruise's chart pre-creates the Secret empty). A `ca-bundle.pem`
    /// that lacks the current CA (e.g. OpenKruise rewrote the CA and left our key) gets it prepended.
    ///
    /// # Errors
    /// [`CertError`] when a present value is not UTF-8 or not the PEM it should be; the caller then
    /// treats the Secret as holding nothing usable (`plan(None, ..)`), as OpenKruise regenerates.
    pub fn from_secret_data(data: &BTreeMap<String, Vec<u8>>) -> Result<Option<Self>, CertError> {
        let text = |key: &str| -> Result<Option<String>, CertError> {
            match data.get(key) {
                None => Ok(None),
                Some(value) if value.iter().all(u8::is_ascii_whitespace) => Ok(None),
                Some(value) => {
                    String::from_utf8(value.clone())
                        .map(Some)
                        .map_err(|_| CertError::NotUtf8 {
                            key: key.to_owned(),
                        })
                }
            }
        };
        let (Some(ca_cert_pem), Some(ca_key_pem), Some(cert_pem), Some(key_pem)) = (
            text(CA_CERT_KEY)?,
            text(CA_KEY_KEY)?,
            text(CERT_KEY)?,
            text(KEY_KEY)?,
        ) else {
            return Ok(None);
        };
        let ca_ders = decode_certs(&ca_cert_pem, CA_CERT_KEY)?;
        decode_key(&ca_key_pem, CA_KEY_KEY)?;
        decode_certs(&cert_pem, CERT_KEY)?;
        decode_key(&key_pem, KEY_KEY)?;
        let ca_bundle_pem = match text(CA_BUNDLE_KEY)? {
            None => ca_cert_pem.clone(),
            Some(bundle) => {
                let bundle_ders = decode_certs(&bundle, CA_BUNDLE_KEY)?;
                match ca_ders.first() {
                    Some(ca) if !bundle_ders.contains(ca) => {
                        let mut fixed = pem::encode(pem::CERTIFICATE, ca);
                        fixed.push_str(&bundle);
                        if !fixed.ends_with('\n') {
                            fixed.push('\n');
                        }
                        fixed
                    }
                    _ => bundle,
                }
            }
        };
        Ok(Some(Self {
            ca_cert_pem,
            ca_key_pem,
            cert_pem,
            key_pem,
            ca_bundle_pem,
        }))
    }

    /// The Secret's data map: OpenKruise's six keys (`ca-key.pem`, `ca-cert.pem`, `key.pem`, `tls.key`,
    /// `cert.pem`, `tls.crt`) plus `ca-bundle.pem`.
    pub fn to_secret_data(&self) -> BTreeMap<String, Vec<u8>> {
        [
            (CA_KEY_KEY, &self.ca_key_pem),
            (CA_CERT_KEY, &self.ca_cert_pem),
            (KEY_KEY, &self.key_pem),
            (TLS_KEY_KEY, &self.key_pem),
            (CERT_KEY, &self.cert_pem),
            (TLS_CRT_KEY, &self.cert_pem),
            (CA_BUNDLE_KEY, &self.ca_bundle_pem),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value.clone().into_bytes()))
        .collect()
    }
}

/// Whether the files in the cert dir already hold what the Secret holds; the Secret wins, so `false`
/// means "rewrite the files from `secret`". Build `files` the way the server wrote them: `tls.crt` →
/// `cert_pem`, `tls.key` → `key_pem`, `ca.crt` → `ca_bundle_pem`, and `ca-cert.pem` / `ca-key.pem` →
/// `ca_cert_pem` / `ca_key_pem` or empty when those files are not written. PEM is compared by content
/// (labels and DER), so line endings and blank lines do not matter; the bundle as a set.
/// `None` (no files yet) and unreadable files are not up to date.
pub fn files_up_to_date(secret: &CertBundle, files: Option<&CertBundle>) -> bool {
    let Some(files) = files else {
        return false;
    };
    let optional = |ours: &str, theirs: &str| theirs.trim().is_empty() || same_pem(ours, theirs);
    same_pem(&secret.cert_pem, &files.cert_pem)
        && same_pem(&secret.key_pem, &files.key_pem)
        && same_cert_set(&secret.ca_bundle_pem, &files.ca_bundle_pem)
        && optional(&secret.ca_cert_pem, &files.ca_cert_pem)
        && optional(&secret.ca_key_pem, &files.ca_key_pem)
}

fn same_pem(a: &str, b: &str) -> bool {
    match (decode_blocks(a, "secret"), decode_blocks(b, "file")) {
        (Ok(a), Ok(b)) => !a.is_empty() && a == b,
        _ => false,
    }
}

fn same_cert_set(a: &str, b: &str) -> bool {
    match (decode_certs(a, "secret"), decode_certs(b, "file")) {
        (Ok(mut a), Ok(mut b)) => {
            a.sort();
            a.dedup();
            b.sort();
            b.dedup();
            a == b
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{T0, fresh, openkruise_secret_data};

    fn data(pairs: &[(&str, &str)]) -> BTreeMap<String, Vec<u8>> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.as_bytes().to_vec()))
            .collect()
    }

    #[test]
    fn an_empty_secret_holds_no_bundle() {
        assert_eq!(
            CertBundle::from_secret_data(&BTreeMap::new()).unwrap(),
            None
        );
        let blank = data(&[
            (CA_CERT_KEY, ""),
            (CA_KEY_KEY, ""),
            (CERT_KEY, "\n"),
            (KEY_KEY, ""),
        ]);
        assert_eq!(CertBundle::from_secret_data(&blank).unwrap(), None);
    }

    #[test]
    fn a_secret_missing_a_required_key_holds_no_bundle() {
        let full = fresh(T0).to_secret_data();
        for key in [CA_CERT_KEY, CA_KEY_KEY, CERT_KEY, KEY_KEY] {
            let mut partial = full.clone();
            partial.remove(key);
            assert_eq!(
                CertBundle::from_secret_data(&partial).unwrap(),
                None,
                "{key}"
            );
        }
    }

    #[test]
    fn garbage_in_a_secret_is_an_error_not_a_panic() {
        let full = fresh(T0).to_secret_data();
        for key in [CA_CERT_KEY, CA_KEY_KEY, CERT_KEY, KEY_KEY, CA_BUNDLE_KEY] {
            for garbage in [
                b"garbage".to_vec(),
                vec![0xff, 0xfe, 0x00],
                b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".to_vec(),
                b"-----BEGIN PRIVATE KEY-----\n!!!\n-----END PRIVATE KEY-----\n".to_vec(),
            ] {
                let mut broken = full.clone();
                broken.insert(key.to_owned(), garbage.clone());
                let result = CertBundle::from_secret_data(&broken);
                assert!(result.is_err(), "{key} = {garbage:?} gave {result:?}");
            }
        }
        let err = CertBundle::from_secret_data(&data(&[
            (CA_CERT_KEY, "x"),
            (CA_KEY_KEY, "x"),
            (CERT_KEY, "x"),
            (KEY_KEY, "x"),
        ]))
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "decoding ca-cert.pem PEM: no CERTIFICATE block found"
        );
    }

    #[test]
    fn writes_openkruises_six_keys_plus_the_bundle_and_reads_them_back() {
        let bundle = fresh(T0);
        let written = bundle.to_secret_data();
        assert_eq!(
            written.keys().map(String::as_str).collect::<Vec<_>>(),
            [
                "ca-bundle.pem",
                "ca-cert.pem",
                "ca-key.pem",
                "cert.pem",
                "key.pem",
                "tls.crt",
                "tls.key"
            ]
        );
        assert_eq!(written["tls.crt"], written["cert.pem"]);
        assert_eq!(written["tls.key"], written["key.pem"]);
        assert_eq!(
            CertBundle::from_secret_data(&written).unwrap(),
            Some(bundle)
        );
    }

    #[test]
    fn an_openkruise_secret_without_our_bundle_key_trusts_its_ca() {
        let bundle = CertBundle::from_secret_data(&openkruise_secret_data())
            .unwrap()
            .unwrap();
        assert_eq!(bundle.ca_bundle_pem, bundle.ca_cert_pem);
        assert!(
            bundle
                .ca_key_pem
                .starts_with("-----BEGIN RSA PRIVATE KEY-----")
        );
    }

    #[test]
    fn a_bundle_that_lacks_the_current_ca_gets_it_added() {
        let ours = fresh(T0);
        let theirs = fresh(T0);
        let mut written = ours.to_secret_data();
        written.insert(
            CA_BUNDLE_KEY.to_owned(),
            theirs.ca_cert_pem.clone().into_bytes(),
        );
        let read = CertBundle::from_secret_data(&written).unwrap().unwrap();
        let certs = decode_certs(&read.ca_bundle_pem, "bundle").unwrap();
        assert_eq!(certs.len(), 2);
        assert_eq!(certs[0], decode_certs(&ours.ca_cert_pem, "ca").unwrap()[0]);
        assert_eq!(
            certs[1],
            decode_certs(&theirs.ca_cert_pem, "ca").unwrap()[0]
        );
    }

    #[test]
    fn files_written_from_the_secret_are_up_to_date_whatever_the_line_endings() {
        let secret = fresh(T0);
        assert!(files_up_to_date(&secret, Some(&secret)));
        let on_disk = CertBundle {
            ca_cert_pem: String::new(),
            ca_key_pem: String::new(),
            cert_pem: secret.cert_pem.replace('\n', "\r\n"),
            key_pem: format!("\n{}\n", secret.key_pem),
            ca_bundle_pem: secret.ca_bundle_pem.clone(),
        };
        assert!(files_up_to_date(&secret, Some(&on_disk)));
    }

    #[test]
    fn files_with_another_ca_are_not_up_to_date_the_secret_wins() {
        let secret = fresh(T0);
        let files = fresh(T0);
        assert!(!files_up_to_date(&secret, Some(&files)));
        // Same serving pair, different caBundle on disk.
        let stale_ca = CertBundle {
            ca_bundle_pem: files.ca_bundle_pem.clone(),
            ca_cert_pem: files.ca_cert_pem.clone(),
            ..secret.clone()
        };
        assert!(!files_up_to_date(&secret, Some(&stale_ca)));
    }

    #[test]
    fn missing_or_unreadable_files_are_not_up_to_date() {
        let secret = fresh(T0);
        assert!(!files_up_to_date(&secret, None));
        let garbage = CertBundle {
            cert_pem: "garbage".to_owned(),
            ..secret.clone()
        };
        assert!(!files_up_to_date(&secret, Some(&garbage)));
    }
}
