//! AdmissionReview decoding: any bytes as the body of a POST to a webhook path, through the server's
//! decoder, then what every webhook reads of a request first (its objects as trees, their labels) and the
//! answer written in the request's version.
#![no_main]

use kruise_webhooks::admission::{self, AdmissionResponse};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(review) = admission::decode_review(data) else {
        return;
    };
    let req = &review.request;
    let _ = req.namespace();
    let _ = req.is_dry_run();
    let _ = req.object_value();
    let _ = req.object_labels();
    for obj in [req.object(), req.old_object()].into_iter().flatten() {
        let _ = admission::labels_of(obj);
    }
    let response = AdmissionResponse::errored(&req.uid, 400, req.name.clone());
    let encoded = admission::encode_review(Some(review.api_version), &response);
    serde_json::from_slice::<serde_json::Value>(&encoded).expect("the answer is JSON");
});
