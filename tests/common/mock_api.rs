//! A tower-test mock API server behind a real `kube::Client`: the test receives each request the client
//! sends ([`expect`] asserts its method and path) and answers it ([`respond`]). The controller tests assert
//! every call this way.

use std::time::Duration;

use http::{Method, Request, Response, StatusCode};
use kube::client::Body;
use serde_json::Value;

/// The test's side of the mock.
pub type Handle = tower_test::mock::Handle<Request<Body>, Response<Body>>;
/// Where the answer to one request goes.
pub type Send = tower_test::mock::SendResponse<Response<Body>>;

/// A client of a fresh mock, and the mock's handle.
pub fn mock() -> (kube::Client, Handle) {
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    (kube::Client::new(service, "default"), handle)
}

/// One request the client sent.
pub struct Call {
    pub method: Method,
    pub path: String,
    pub content_type: String,
    /// The body as sent.
    pub raw: Vec<u8>,
    /// The body as JSON (`Null` when it is not JSON).
    pub body: Value,
    pub send: Send,
}

/// The next request, which must be `method` on `path` and come within 30 s.
pub async fn expect(handle: &mut Handle, method: Method, path: &str) -> Call {
    let (request, send) = tokio::time::timeout(Duration::from_secs(30), handle.next_request())
        .await
        .unwrap_or_else(|_| panic!("no {method} {path} within 30 s"))
        .expect("client alive");
    let content_type = request
        .headers()
        .get(http::header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let (m, p) = (request.method().clone(), request.uri().path().to_owned());
    let raw = request.into_body().collect_bytes().await.unwrap().to_vec();
    let body = serde_json::from_slice(&raw).unwrap_or(Value::Null);
    assert_eq!((&m, p.as_str()), (&method, path), "body: {body}");
    Call {
        method: m,
        path: p,
        content_type,
        raw,
        body,
        send,
    }
}

/// Answers a request with `status` and `body`.
pub fn respond(send: Send, status: StatusCode, body: &Value) {
    send.send_response(
        Response::builder()
            .status(status)
            .body(Body::from(serde_json::to_vec(body).unwrap()))
            .unwrap(),
    );
}
