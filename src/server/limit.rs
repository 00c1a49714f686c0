//! Admission control under overload: at most `--max-in-flight` admission requests are served at once (64 per
//! core by default, [`crate::config::default_max_in_flight`]); a request that finds them all taken is shed
//! at once with **HTTP 429**, a `metav1.Status` body (reason `TooManyRequests`) and a count in
//! `admission_shed_total{webhook}` and `controller_runtime_webhook_requests_total{webhook,code="429"}`.
//!
//! Why a plain HTTP 429 and not an AdmissionReview: the kube-apiserver treats any answer other than 200 as a
//! failed webhook call and applies the webhook's `failurePolicy`. That is the answer an overloaded webhook
//! owes: a `Fail` webhook (the pod webhooks) fails the request, whose client retries with its own backoff; an
//! `Ignore` one (deletion protection) lets it through, as if we were down. An AdmissionReview with
//! `allowed: false` and code 429 would instead *deny* the request outright, even for an `Ignore` webhook,
//! and `allowed: true` would silently skip a mutation a `Fail` webhook promises. client-go decodes the
//! Status body, so the API server's error names the cause ("kruise-webhook is overloaded ..."). No
//! `Retry-After` header: client-go's REST client retries a 429 that carries one, which would multiply the
//! load by up to ten while it lasts.
//!
//! Why shed instead of queue: a request that waits behind a full house only adds its wait to its latency
//! and keeps its body in memory, and past the webhook's `timeoutSeconds` the API server has given up on
//! it anyway. Shedding keeps the latency of the requests admitted that of `--max-in-flight` requests
//! sharing the cores, whatever the offered load.
//!
//! Memory stays bounded by construction: there is no queue. An admitted request holds one permit of a
//! [`tokio::sync::Semaphore`] taken with `try_acquire` (never waited on) until its answer is built; a shed
//! one is answered before its body is read, so it costs its headers and a small answer. The body of an
//! admitted request is bounded in size and time by [`super::admission`]; HTTP/2 bounds streams per
//! connection (hyper's default of 200 concurrent streams).

use std::sync::Arc;

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The bound on admission requests in flight.
#[derive(Debug)]
pub struct InFlightLimit {
    permits: Arc<Semaphore>,
    max: usize,
}

impl InFlightLimit {
    /// At most `max` (at least 1) requests at once.
    pub fn new(max: usize) -> Self {
        let max = max.max(1);
        Self {
            permits: Arc::new(Semaphore::new(max)),
            max,
        }
    }

    /// The bound.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Requests that could be admitted now.
    pub fn available(&self) -> usize {
        self.permits.available_permits()
    }

    /// A place for one request, held until the permit is dropped; `None` at once when all are taken.
    pub fn try_admit(&self) -> Option<OwnedSemaphorePermit> {
        self.permits.clone().try_acquire_owned().ok()
    }

    /// The answer to a request shed: HTTP 429 with a `metav1.Status` that says why.
    pub fn shed_response(&self) -> Response {
        let message = format!(
            "kruise-webhook is overloaded: {} admission requests in flight (--max-in-flight); try again later",
            self.max
        );
        let status = serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": message, "reason": "TooManyRequests", "code": 429});
        (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::CONTENT_TYPE, "application/json")],
            status.to_string(),
        )
            .into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admits_up_to_the_bound_and_frees_a_place_when_a_request_ends() {
        let limit = InFlightLimit::new(2);
        let first = limit.try_admit().expect("first");
        let _second = limit.try_admit().expect("second");
        assert!(
            limit.try_admit().is_none(),
            "the third is refused, not queued"
        );
        assert_eq!(limit.available(), 0);
        drop(first);
        assert!(limit.try_admit().is_some());
        assert_eq!(InFlightLimit::new(0).max(), 1);
    }

    #[tokio::test]
    async fn the_shed_answer_is_a_429_status_the_api_server_can_decode() {
        let response = InFlightLimit::new(3).shed_response();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert!(response.headers().get(header::RETRY_AFTER).is_none());
        let body = axum::body::to_bytes(response.into_body(), 4096)
            .await
            .unwrap();
        let status: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(status["kind"], "Status");
        assert_eq!(status["reason"], "TooManyRequests");
        assert_eq!(status["code"], 429);
        assert_eq!(
            status["message"],
            "kruise-webhook is overloaded: 3 admission requests in flight (--max-in-flight); try again later"
        );
    }
}
