//! Replicas of the server served over TLS, and the keep-alive connections the kube-apiserver holds to them:
//! the harness of the benches that send reviews with a status commit to two replicas sharing the stand-in
//! API server (tests/common/apiserver.rs). Included by `#[path]` (benches pub_gate and workloadspread).

use std::sync::Arc;
use std::time::Duration;

use kruise_webhook::AppState;
use kruise_webhook::cache::{Cluster, LiveCache};
use kruise_webhook::config::ServeConfig;
use kruise_webhook::server::tls::{CertStore, client_config, server_config};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A serving certificate for the replicas (the standalone server writes one), and a client configuration
/// that trusts its CA and offers HTTP/1.1.
pub async fn certificate() -> (Arc<CertStore>, Arc<rustls::ClientConfig>) {
    kruise_webhook::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = ServeConfig::for_loopback(
        vec![root.join("examples/cluster.yaml")],
        dir.path().to_owned(),
    );
    let standalone = kruise_webhook::start(config).await.unwrap();
    let store = Arc::new(CertStore::default());
    store
        .install(
            &std::fs::read(dir.path().join("tls.crt")).unwrap(),
            &std::fs::read(dir.path().join("tls.key")).unwrap(),
        )
        .unwrap();
    let ca = std::fs::read_to_string(dir.path().join("ca.crt")).unwrap();
    standalone.shutdown().await.unwrap();
    let tls = Arc::new(client_config(ca.as_bytes(), &[b"http/1.1"]).unwrap());
    (store, tls)
}

/// A replica of the server over its own caches (on the stand-in, with a client of their own), served over
/// TLS with the given certificate once they have synced.
pub async fn serve(cache: LiveCache, store: Arc<CertStore>) -> std::net::SocketAddr {
    let cluster = Cluster::Live(cache);
    while !cluster.synced() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let config = ServeConfig::for_loopback(Vec::new(), std::env::temp_dir());
    let state = AppState::new(config, cluster);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let server = axum_server::from_tcp_rustls(
        listener,
        axum_server::tls_rustls::RustlsConfig::from_config(server_config(store)),
    )
    .unwrap()
    .map(|tls| tls.acceptor(axum_server::accept::NoDelayAcceptor));
    tokio::spawn(server.serve(kruise_webhook::app(state).into_make_service()));
    addr
}

/// One keep-alive HTTP/1.1 connection over TLS, as the kube-apiserver holds to a webhook.
pub struct Connection {
    stream: tokio_rustls::client::TlsStream<tokio::net::TcpStream>,
}

impl Connection {
    pub async fn open(addr: std::net::SocketAddr, tls: Arc<rustls::ClientConfig>) -> Self {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        tcp.set_nodelay(true).unwrap();
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let stream = tokio_rustls::TlsConnector::from(tls)
            .connect(name, tcp)
            .await
            .unwrap();
        Self { stream }
    }

    /// Sends one review to `path`, returns the answer's body (which must come with status 200).
    pub async fn exchange(&mut self, path: &str, body: &[u8]) -> Value {
        let head = format!(
            "POST {path} HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        let mut request = head.into_bytes();
        request.extend_from_slice(body);
        self.stream.write_all(&request).await.unwrap();
        let mut buf = Vec::new();
        let mut chunk = [0u8; 16 * 1024];
        loop {
            let n = self.stream.read(&mut chunk).await.unwrap();
            assert!(n > 0, "connection closed");
            buf.extend_from_slice(&chunk[..n]);
            let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                continue;
            };
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .expect("a content-length");
            if buf.len() >= end + 4 + length {
                assert!(head.starts_with("http/1.1 200"), "{head}");
                return serde_json::from_slice(&buf[end + 4..end + 4 + length]).unwrap();
            }
        }
    }
}
