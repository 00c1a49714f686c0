//! rustls server configuration with a hot-swappable certificate: every handshake reads the current one,
//! so rotation needs no restart and no connection is refused while it happens (DECISIONS 15).

use std::sync::Arc;

use arc_swap::ArcSwapOption;
use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

/// Why a certificate could not be installed.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The PEM holds no certificate.
    #[error("no CERTIFICATE in the serving certificate PEM")]
    NoCertificate,
    /// The key does not parse or is of an unsupported type.
    #[error("serving key: {0}")]
    Key(String),
    /// The certificate PEM does not parse.
    #[error("serving certificate: {0}")]
    Certificate(String),
}

/// The serving certificate every handshake uses; swapped atomically.
#[derive(Debug, Default)]
pub struct CertStore {
    current: ArcSwapOption<CertifiedKey>,
    generation: std::sync::atomic::AtomicU64,
}

impl CertStore {
    /// Parses PEM certificate chain + key and makes them the certificate of every new handshake.
    ///
    /// # Errors
    /// [`TlsError`] when either PEM is unusable; the previous certificate stays in place.
    pub fn install(&self, cert_pem: &[u8], key_pem: &[u8]) -> Result<(), TlsError> {
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem)
            .collect::<Result<_, _>>()
            .map_err(|e| TlsError::Certificate(e.to_string()))?;
        if chain.is_empty() {
            return Err(TlsError::NoCertificate);
        }
        let key =
            PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| TlsError::Key(e.to_string()))?;
        let signer = rustls::crypto::ring::sign::any_supported_type(&key)
            .map_err(|e| TlsError::Key(e.to_string()))?;
        self.current
            .store(Some(Arc::new(CertifiedKey::new(chain, signer))));
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::Release);
        Ok(())
    }

    /// True once a certificate is installed.
    pub fn loaded(&self) -> bool {
        self.current.load().is_some()
    }

    /// How many certificates were installed so far.
    pub fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::Acquire)
    }
}

#[derive(Debug)]
struct Resolver(Arc<CertStore>);

impl ResolvesServerCert for Resolver {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.0.current.load_full()
    }
}

/// TLS 1.2 and 1.3 only, ALPN h2 then http/1.1, no client certificates, ring provider.
pub fn server_config(store: Arc<CertStore>) -> Arc<ServerConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .expect("ring supports TLS 1.2 and 1.3")
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(Resolver(store)));
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Arc::new(config)
}

/// A client configuration that trusts only the CAs in `ca_pem` (ring provider, TLS 1.2/1.3), offering the
/// given ALPN protocols: how the apiserver (and our tests and load bench) talk to this server.
///
/// # Errors
/// [`TlsError::Certificate`] when the PEM holds no usable certificate.
pub fn client_config(ca_pem: &[u8], alpn: &[&[u8]]) -> Result<rustls::ClientConfig, TlsError> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem) {
        let cert = cert.map_err(|e| TlsError::Certificate(e.to_string()))?;
        roots
            .add(cert)
            .map_err(|e| TlsError::Certificate(e.to_string()))?;
    }
    if roots.is_empty() {
        return Err(TlsError::NoCertificate);
    }
    let mut provider = rustls::crypto::ring::default_provider();
    // The suites in the order Go's crypto/tls (the apiserver's) offers them on AES hardware: AES-128-GCM
    // first (rustls puts AES-256-GCM first); this server follows the client's order.
    provider
        .cipher_suites
        .sort_by_key(|s| s.suite() != rustls::CipherSuite::TLS13_AES_128_GCM_SHA256);
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| TlsError::Certificate(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(config)
}
