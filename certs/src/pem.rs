//! PEM and DER plumbing: decoding PEM blocks, encoding certificates, and loading the private-key
//! encodings a Secret or a cert dir may hold into a ring-backed [`KeyPair`].
//!
//! ring reads only PKCS#8, so OpenKruise's PKCS#1 `RSA PRIVATE KEY` (spec/webhook-server.md section 6.3)
//! and cert-manager's SEC1 `EC PRIVATE KEY` are wrapped into PKCS#8 in memory first (DECISIONS 15).

use rcgen::{KeyPair, PKCS_ECDSA_P256_SHA256, PKCS_ECDSA_P384_SHA384, PKCS_RSA_SHA256};
use x509_parser::pem::Pem;

use crate::CertError;
use crate::inspect::parse_der;

/// The PEM label of a certificate.
pub(crate) const CERTIFICATE: &str = "CERTIFICATE";
const KEY_LABELS: &str = "PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY";

/// One decoded PEM block.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Block {
    pub(crate) label: String,
    pub(crate) der: Vec<u8>,
}

/// Every PEM block of `text`, in order; text outside blocks is ignored.
pub(crate) fn decode_blocks(text: &str, what: &str) -> Result<Vec<Block>, CertError> {
    Pem::iter_from_buffer(text.as_bytes())
        .map(|block| {
            block
                .map(|pem| Block {
                    label: pem.label,
                    der: pem.contents,
                })
                .map_err(|source| CertError::Pem {
                    what: what.to_owned(),
                    source,
                })
        })
        .collect()
}

/// The DER of every certificate in `text` (at least one); any other block is an error.
pub(crate) fn decode_certs(text: &str, what: &str) -> Result<Vec<Vec<u8>>, CertError> {
    let blocks = decode_blocks(text, what)?;
    if blocks.is_empty() {
        return Err(CertError::NoPem {
            what: what.to_owned(),
            expected: CERTIFICATE,
        });
    }
    blocks
        .into_iter()
        .map(|block| {
            if block.label != CERTIFICATE {
                return Err(CertError::UnexpectedPem {
                    what: what.to_owned(),
                    label: block.label,
                    expected: CERTIFICATE,
                });
            }
            parse_der(&block.der).map_err(|source| CertError::Certificate {
                what: what.to_owned(),
                source,
            })?;
            Ok(block.der)
        })
        .collect()
}

/// How a private key is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyEncoding {
    /// `PRIVATE KEY`: PKCS#8, what we generate.
    Pkcs8,
    /// `RSA PRIVATE KEY`: PKCS#1, what OpenKruise writes.
    Pkcs1,
    /// `EC PRIVATE KEY`: SEC1, what cert-manager writes for ECDSA keys.
    Sec1,
}

/// A private key as found in PEM, not yet loaded.
#[derive(Debug, Clone)]
pub(crate) struct PrivateKey {
    pub(crate) encoding: KeyEncoding,
    pub(crate) der: Vec<u8>,
}

/// The first private-key block of `text`. Other blocks (e.g. OpenSSL's `EC PARAMETERS`) are skipped.
pub(crate) fn decode_key(text: &str, what: &str) -> Result<PrivateKey, CertError> {
    decode_blocks(text, what)?
        .into_iter()
        .find_map(|block| {
            let encoding = match block.label.as_str() {
                "PRIVATE KEY" => KeyEncoding::Pkcs8,
                "RSA PRIVATE KEY" => KeyEncoding::Pkcs1,
                "EC PRIVATE KEY" => KeyEncoding::Sec1,
                _ => return None,
            };
            Some(PrivateKey {
                encoding,
                der: block.der,
            })
        })
        .ok_or_else(|| CertError::NoPem {
            what: what.to_owned(),
            expected: KEY_LABELS,
        })
}

/// Decodes and loads the private key in `text`.
pub(crate) fn load_key(text: &str, what: &str) -> Result<KeyPair, CertError> {
    key_pair(&decode_key(text, what)?, what)
}

/// Loads a private key with ring, wrapping PKCS#1 and SEC1 into PKCS#8 first.
pub(crate) fn key_pair(key: &PrivateKey, what: &str) -> Result<KeyPair, CertError> {
    let to_error = |source| CertError::Key {
        what: what.to_owned(),
        source,
    };
    match key.encoding {
        KeyEncoding::Pkcs8 => KeyPair::try_from(key.der.as_slice()).map_err(to_error),
        KeyEncoding::Pkcs1 => {
            let pkcs8 = pkcs8_wrap(RSA_ENCRYPTION, &key.der);
            KeyPair::from_pkcs8_der_and_sign_algo(&pkcs8.as_slice().into(), &PKCS_RSA_SHA256)
                .map_err(to_error)
        }
        KeyEncoding::Sec1 => {
            // SEC1 may omit the curve, so try the two curves ring signs with.
            let p256 = pkcs8_wrap(&ec_algorithm(OID_P256), &key.der);
            KeyPair::from_pkcs8_der_and_sign_algo(&p256.as_slice().into(), &PKCS_ECDSA_P256_SHA256)
                .or_else(|_| {
                    let p384 = pkcs8_wrap(&ec_algorithm(OID_P384), &key.der);
                    KeyPair::from_pkcs8_der_and_sign_algo(
                        &p384.as_slice().into(),
                        &PKCS_ECDSA_P384_SHA384,
                    )
                })
                .map_err(to_error)
        }
    }
}

/// Whether `key` is the private half of the certificate's public key.
pub(crate) fn key_matches(key: &KeyPair, cert_der: &[u8]) -> bool {
    parse_der(cert_der).is_ok_and(|cert| {
        key.public_key_raw() == cert.public_key().subject_public_key.data.as_ref()
    })
}

/// AlgorithmIdentifier { rsaEncryption, NULL }.
const RSA_ENCRYPTION: &[u8] = &[
    0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00,
];
/// OBJECT IDENTIFIER id-ecPublicKey (1.2.840.10045.2.1).
const OID_EC_PUBLIC_KEY: &[u8] = &[0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
/// OBJECT IDENTIFIER prime256v1 (1.2.840.10045.3.1.7).
const OID_P256: &[u8] = &[0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
/// OBJECT IDENTIFIER secp384r1 (1.3.132.0.34).
const OID_P384: &[u8] = &[0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22];

/// AlgorithmIdentifier { id-ecPublicKey, curve }.
fn ec_algorithm(curve: &[u8]) -> Vec<u8> {
    der_tlv(0x30, &[OID_EC_PUBLIC_KEY, curve].concat())
}

/// PKCS#8 PrivateKeyInfo: SEQUENCE { INTEGER 0, algorithm, OCTET STRING inner }.
fn pkcs8_wrap(algorithm: &[u8], inner: &[u8]) -> Vec<u8> {
    let body = [&[0x02, 0x01, 0x00][..], algorithm, &der_tlv(0x04, inner)].concat();
    der_tlv(0x30, &body)
}

/// One DER tag-length-value with a definite length (short or long form).
fn der_tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    match u8::try_from(content.len()) {
        Ok(short) if short < 0x80 => out.push(short),
        _ => {
            let len = content.len().to_be_bytes();
            let significant = &len[len.iter().take_while(|b| **b == 0).count()..];
            // At most size_of::<usize>() bytes, so the count fits the 7-bit length-of-length.
            out.push(0x80 | significant.len() as u8);
            out.extend_from_slice(significant);
        }
    }
    out.extend_from_slice(content);
    out
}

/// PEM text for one DER object: base64 in 64-column lines, LF endings, final newline.
pub(crate) fn encode(label: &str, der: &[u8]) -> String {
    let config = ::pem::EncodeConfig::new().set_line_ending(::pem::LineEnding::LF);
    ::pem::encode_config(&::pem::Pem::new(label, der), config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{EXTERNAL_TLS_CRT, EXTERNAL_TLS_KEY, OK_CERT, OK_KEY};

    #[test]
    fn encodes_pem_that_decodes_back_for_every_padding_length() {
        for len in [0usize, 1, 2, 3, 47, 48, 49, 200] {
            let der: Vec<u8> = (0..len).map(|i| (i * 37 % 256) as u8).collect();
            let text = encode("TEST", &der);
            let blocks = decode_blocks(&text, "test").unwrap();
            assert_eq!(blocks.len(), 1, "len {len}");
            assert_eq!(blocks[0].label, "TEST");
            assert_eq!(blocks[0].der, der, "len {len}");
            assert!(text.lines().all(|l| l.len() <= 64), "len {len}");
        }
    }

    #[test]
    fn der_lengths_use_the_long_form_above_127_bytes() {
        assert_eq!(der_tlv(0x04, &[7; 3]), vec![0x04, 3, 7, 7, 7]);
        let long = der_tlv(0x04, &[0; 0x80]);
        assert_eq!(&long[..3], &[0x04, 0x81, 0x80]);
        let longer = der_tlv(0x04, &[0; 0x1234]);
        assert_eq!(&longer[..4], &[0x04, 0x82, 0x12, 0x34]);
    }

    #[test]
    fn loads_an_openkruise_pkcs1_rsa_key_through_a_pkcs8_wrapper() {
        let key = decode_key(OK_KEY, "key.pem").unwrap();
        assert_eq!(key.encoding, KeyEncoding::Pkcs1);
        let pair = key_pair(&key, "key.pem").unwrap();
        assert_eq!(pair.algorithm(), &PKCS_RSA_SHA256);
        let cert = decode_certs(OK_CERT, "cert.pem").unwrap();
        assert!(key_matches(&pair, &cert[0]));
    }

    #[test]
    fn loads_a_cert_manager_sec1_ec_key_through_a_pkcs8_wrapper() {
        let key = decode_key(EXTERNAL_TLS_KEY, "tls.key").unwrap();
        assert_eq!(key.encoding, KeyEncoding::Sec1);
        let pair = key_pair(&key, "tls.key").unwrap();
        assert_eq!(pair.algorithm(), &PKCS_ECDSA_P256_SHA256);
        let cert = decode_certs(EXTERNAL_TLS_CRT, "tls.crt").unwrap();
        assert!(key_matches(&pair, &cert[0]));
    }

    #[test]
    fn a_key_of_another_certificate_does_not_match() {
        let pair = load_key(EXTERNAL_TLS_KEY, "tls.key").unwrap();
        let cert = decode_certs(OK_CERT, "cert.pem").unwrap();
        assert!(!key_matches(&pair, &cert[0]));
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let garbage = [
            "",
            "hello",
            "-----BEGIN CERTIFICATE-----\nnot base64 at all!\n-----END CERTIFICATE-----\n",
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
            "-----BEGIN CERTIFICATE-----\nAAAA\n",
            "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n",
            "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n",
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
            "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
        ];
        for text in garbage {
            assert!(decode_certs(text, "x").is_err(), "{text:?}");
            assert!(load_key(text, "x").is_err(), "{text:?}");
        }
        // A certificate where a key is expected and the reverse.
        assert!(load_key(OK_CERT, "x").is_err());
        assert!(decode_certs(OK_KEY, "x").is_err());
    }
}
