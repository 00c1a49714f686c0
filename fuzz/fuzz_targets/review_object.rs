//! The offline decision on a fuzzed object: the first byte picks a case of cases.txt, the second which of
//! its request's objects (`object`, or `oldObject` where both are present) the rest of the input replaces,
//! in the request text as received. So the mutations land on the pod, SidecarSet, budget or WorkloadSpread
//! a webhook reads, past the AdmissionReview envelope a byte-level target seldom gets through.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((case, rest)) = kruise_webhook_fuzz::pick(data) else {
        return;
    };
    let Some((&which, object)) = rest.split_first() else {
        return;
    };
    let (before, after) = &case.templates[usize::from(which) % case.templates.len()];
    let mut body = Vec::with_capacity(before.len() + object.len() + after.len());
    body.extend_from_slice(before.as_bytes());
    body.extend_from_slice(object);
    body.extend_from_slice(after.as_bytes());
    kruise_webhook_fuzz::review(case, &body);
});
