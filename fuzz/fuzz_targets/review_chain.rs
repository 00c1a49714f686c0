//! The whole offline decision: the input's first byte picks a case of cases.txt (its cluster and gates),
//! the rest is the AdmissionReview body. Decoded as the server decodes it, then every webhook the
//! apiserver would call for it (by the shipped rules and selectors) runs in order, mutating ones first, as
//! `kruise-webhook review` runs them: SidecarSet injection, defaulting and validation, the pod chain
//! (launch priority, native sidecars, WorkloadSpread placement, PUB gates), PUB and WorkloadSpread
//! validation, deletion protection.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some((case, body)) = kruise_webhook_fuzz::pick(data) {
        kruise_webhook_fuzz::review(case, body);
    }
});
