//! Facts about one certificate ([`inspect`]) and the signature check every other module relies on.

use std::net::IpAddr;

use time::OffsetDateTime;
use x509_parser::certificate::X509Certificate;
use x509_parser::error::X509Error;
use x509_parser::extensions::GeneralName;

use crate::CertError;
use crate::pem::decode_certs;

/// What a certificate says about itself, read with x509-parser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertInfo {
    /// Start of validity.
    pub not_before: OffsetDateTime,
    /// End of validity.
    pub not_after: OffsetDateTime,
    /// The subject's first common name, if any.
    pub common_name: Option<String>,
    /// DNS subject alternative names, in certificate order.
    pub dns_names: Vec<String>,
    /// IP subject alternative names, in certificate order.
    pub ip_addresses: Vec<IpAddr>,
    /// Whether basicConstraints says CA.
    pub is_ca: bool,
    /// The serial number as colon-separated hex, for logs.
    pub serial: String,
    der: Vec<u8>,
}

impl CertInfo {
    /// Reads the facts of one DER certificate.
    ///
    /// # Errors
    /// [`X509Error`] when the DER is not a certificate.
    pub(crate) fn from_der(der: &[u8]) -> Result<Self, X509Error> {
        let cert = parse_der(der)?;
        let mut dns_names = Vec::new();
        let mut ip_addresses = Vec::new();
        if let Ok(Some(san)) = cert.subject_alternative_name() {
            for name in &san.value.general_names {
                match name {
                    GeneralName::DNSName(dns) => dns_names.push((*dns).to_owned()),
                    GeneralName::IPAddress(bytes) => {
                        if let Ok(v4) = <[u8; 4]>::try_from(*bytes) {
                            ip_addresses.push(IpAddr::from(v4));
                        } else if let Ok(v6) = <[u8; 16]>::try_from(*bytes) {
                            ip_addresses.push(IpAddr::from(v6));
                        }
                    }
                    _ => {}
                }
            }
        }
        Ok(Self {
            not_before: cert.validity().not_before.to_datetime(),
            not_after: cert.validity().not_after.to_datetime(),
            common_name: cert
                .subject()
                .iter_common_name()
                .next()
                .and_then(|cn| cn.as_str().ok())
                .map(str::to_owned),
            dns_names,
            ip_addresses,
            is_ca: cert.is_ca(),
            serial: cert.raw_serial_as_string(),
            der: der.to_vec(),
        })
    }

    /// The certificate's DER encoding.
    pub fn der(&self) -> &[u8] {
        &self.der
    }

    /// Whether `ca` issued this certificate: issuer name equals `ca`'s subject and the signature verifies
    /// with `ca`'s public key (ring). Validity dates are not looked at.
    pub fn issued_by(&self, ca: &CertInfo) -> bool {
        signed_by(&self.der, &ca.der)
    }

    /// Whether `at` lies within `[not_before, not_after)`.
    pub fn valid_at(&self, at: OffsetDateTime) -> bool {
        self.not_before <= at && at < self.not_after
    }
}

/// Facts about the first certificate of a PEM text: validity, subject CN, SANs; see
/// [`CertInfo::issued_by`] for the issuer check.
///
/// # Errors
/// [`CertError`] when the text holds no certificate or one that does not parse.
pub fn inspect(cert_pem: &str) -> Result<CertInfo, CertError> {
    let ders = decode_certs(cert_pem, "certificate")?;
    // decode_certs returns at least one certificate and has parsed each.
    let first = ders.first().ok_or(CertError::NoPem {
        what: "certificate".to_owned(),
        expected: crate::pem::CERTIFICATE,
    })?;
    CertInfo::from_der(first).map_err(|source| CertError::Certificate {
        what: "certificate".to_owned(),
        source,
    })
}

/// Every certificate of a PEM text, as [`CertInfo`].
pub(crate) fn inspect_all(pem: &str, what: &str) -> Result<Vec<CertInfo>, CertError> {
    decode_certs(pem, what)?
        .iter()
        .map(|der| {
            CertInfo::from_der(der).map_err(|source| CertError::Certificate {
                what: what.to_owned(),
                source,
            })
        })
        .collect()
}

/// Parses one DER certificate (trailing bytes are ignored, as x509-parser does).
pub(crate) fn parse_der(der: &[u8]) -> Result<X509Certificate<'_>, X509Error> {
    x509_parser::parse_x509_certificate(der)
        .map(|(_, cert)| cert)
        .map_err(|e| match e {
            x509_parser::nom::Err::Error(e) | x509_parser::nom::Err::Failure(e) => e,
            x509_parser::nom::Err::Incomplete(_) => X509Error::InvalidCertificate,
        })
}

/// Whether the certificate `cert_der` names `ca_der`'s subject as issuer and carries a signature
/// that verifies with `ca_der`'s public key.
pub(crate) fn signed_by(cert_der: &[u8], ca_der: &[u8]) -> bool {
    let (Ok(cert), Ok(ca)) = (parse_der(cert_der), parse_der(ca_der)) else {
        return false;
    };
    cert.issuer().as_raw() == ca.subject().as_raw()
        && cert.verify_signature(Some(ca.public_key())).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{EXTERNAL_CA, OK_CA_CERT, OK_CERT};
    use time::macros::datetime;

    #[test]
    fn reads_the_facts_of_an_openkruise_serving_cert() {
        let info = inspect(OK_CERT).unwrap();
        assert_eq!(
            info.common_name.as_deref(),
            Some("kruise-webhook-service.kruise-system.svc")
        );
        assert_eq!(
            info.dns_names,
            ["localhost", "kruise-webhook-service.kruise-system.svc"]
        );
        assert!(info.ip_addresses.is_empty());
        assert!(!info.is_ca);
        assert!(info.not_before < info.not_after);
        assert!(info.valid_at(info.not_before));
        assert!(!info.valid_at(info.not_after));
        assert!(!info.valid_at(datetime!(2000-01-01 0:00 UTC)));
    }

    #[test]
    fn tells_which_ca_issued_a_certificate() {
        let cert = inspect(OK_CERT).unwrap();
        let ca = inspect(OK_CA_CERT).unwrap();
        let other = inspect(EXTERNAL_CA).unwrap();
        assert!(ca.is_ca);
        assert_eq!(ca.common_name.as_deref(), Some("webhook-cert-ca"));
        assert!(cert.issued_by(&ca));
        assert!(ca.issued_by(&ca), "a root is self-signed");
        assert!(!cert.issued_by(&other));
        assert!(!ca.issued_by(&cert));
    }

    #[test]
    fn inspecting_garbage_is_an_error() {
        assert!(inspect("").is_err());
        assert!(inspect("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n").is_err());
        assert!(!signed_by(b"junk", b"junk"));
    }
}
