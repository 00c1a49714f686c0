//! Deeply nested and huge inputs on every decoding path: the AdmissionReview decoder, the raw pod reader,
//! MergePatchJson, the Go regexp translation and quantity parsing, and the HTTP handler and the offline
//! review chain on top of them. Each is answered with an error or a decision: no panic (the handler would
//! turn one into a 500) and no stack overflow (the test threads have 2 MiB stacks, as the server's tokio
//! workers do). The fuzz targets (fuzz/README.md) search the same paths at random; these pin the extremes.

mod common;

use std::sync::Arc;

use axum::http::StatusCode;
use kruise_webhooks::FeatureGates;
use kruise_webhooks::admission::{self, AdmissionResponse, ReviewError};
use kruise_webhooks::fixture::FixtureCluster;
use kruise_webhooks::json::rawpod::{RawPod, Section};
use kruise_webhooks::json::{BAD_DOCUMENT, BAD_PATCH, merge_patch};
use kruise_webhooks::quantity::Quantity;
use kruise_webhooks::sidecarset::resources::compile_regex;
use serde_json::Value;

/// Ten times the nesting Go's decoder accepts.
const DEPTH: usize = 100_000;
/// Several MiB, under the server's 7 MiB body limit with the rest of a review.
const HUGE: usize = 5 << 20;

const MARK: &str = "\"@@hostile@@\"";

fn nested_arrays(depth: usize) -> String {
    "[".repeat(depth) + &"]".repeat(depth)
}

fn nested_objects(depth: usize) -> String {
    "{\"a\":".repeat(depth) + "1" + &"}".repeat(depth)
}

/// The request of examples/requests/create-web-pod.json (a pod the example cluster's `log-agent`
/// SidecarSet injects).
fn web_review() -> Value {
    let path = common::root().join("examples/requests/create-web-pod.json");
    serde_json::from_str(&common::read(&path)).unwrap()
}

/// The pod of [`web_review`] with `edit` applied, which may put [`MARK`] where `text` then goes, as text.
fn pod_text(edit: impl FnOnce(&mut Value), text: &str) -> String {
    let mut pod = web_review()["request"]["object"].take();
    edit(&mut pod);
    pod.to_string().replacen(MARK, text, 1)
}

/// [`web_review`] carrying `pod` (JSON text) as its object.
fn pod_review(pod: &str) -> String {
    let mut review = web_review();
    review["request"]["object"] = Value::String(MARK.trim_matches('"').to_owned());
    review.to_string().replacen(MARK, pod, 1)
}

/// A place in a pod: its name, and the edit that puts [`MARK`] there.
type Place = (&'static str, fn(&mut Value));

/// The places of a pod create where a deep or huge value goes: a label value, an annotation value, a
/// container field, an unknown pod field, an unknown container field.
fn places() -> [Place; 5] {
    fn mark() -> Value {
        Value::String(MARK.trim_matches('"').to_owned())
    }
    [
        ("label value", |pod| {
            pod["metadata"]["labels"]["hostile"] = mark()
        }),
        ("annotation value", |pod| {
            pod["metadata"]["annotations"]["hostile"] = mark()
        }),
        ("container env", |pod| {
            pod["spec"]["containers"][0]["env"] = mark()
        }),
        ("unknown pod field", |pod| pod["hostile"] = mark()),
        ("unknown container field", |pod| {
            pod["spec"]["containers"][0]["hostile"] = mark()
        }),
    ]
}

fn example_cluster() -> FixtureCluster {
    let path = common::root().join("examples/cluster.yaml");
    let mut cluster = FixtureCluster::default();
    cluster
        .load_str(&common::read(&path), "examples/cluster.yaml")
        .unwrap();
    cluster
}

/// The chain's answer: allowed, or refused with a message.
fn assert_answered(what: &str, response: &AdmissionResponse) {
    if !response.allowed {
        let message = response.status.as_ref().and_then(|s| s.message.as_deref());
        assert!(
            message.is_some_and(|m| !m.is_empty()),
            "{what}: refused without a message: {response:?}"
        );
    }
}

/// Decoded (or refused) by the decoder, decided by the review chain, and answered by the handler at
/// `/mutate-pod` and `/validate-pod` with a review or a 400, never a 500.
async fn through_every_layer(what: &str, body: String) -> Result<AdmissionResponse, ReviewError> {
    let decoded = admission::decode_review(body.as_bytes());
    let chain = match &decoded {
        Ok(review) => {
            let response = kruise_webhook::review::review(
                Arc::new(example_cluster()),
                &FeatureGates::default(),
                review,
            )
            .await;
            assert_answered(what, &response);
            Ok(response)
        }
        Err(e) => {
            assert!(
                matches!(e, ReviewError::Malformed(m) if !m.is_empty()),
                "{what}: {e:?}"
            );
            Err(clone_error(e))
        }
    };
    let state = common::state(example_cluster(), "");
    for path in ["/mutate-pod", "/validate-pod"] {
        let (status, answer) =
            common::post(&state, path, body.clone(), Some("application/json")).await;
        match &decoded {
            Ok(_) => {
                assert_eq!(status, StatusCode::OK, "{what} at {path}: {answer}");
                assert!(
                    answer["response"]["allowed"].is_boolean(),
                    "{what}: {answer}"
                );
            }
            Err(_) => assert_eq!(status, StatusCode::BAD_REQUEST, "{what} at {path}"),
        }
    }
    chain
}

/// What the pod chain does with a pod's text: read it, read members and lists, edit, write the patch.
/// Returns whether it was read.
fn read_pod(text: &str) -> bool {
    let Ok(mut pod) = RawPod::parse_str(text) else {
        return false;
    };
    let _ = pod.get(Section::Metadata, "labels");
    let _ = pod.get(Section::Spec, "affinity");
    for c in pod.containers.iter() {
        let _ = (c.get("env"), c.get("hostile"));
    }
    pod.set_annotation("hostile", "1".to_owned());
    let _ = pod.to_value();
    let _ = pod.into_patch();
    true
}

fn clone_error(e: &ReviewError) -> ReviewError {
    match e {
        ReviewError::Empty => ReviewError::Empty,
        ReviewError::Malformed(m) => ReviewError::Malformed(m.clone()),
        ReviewError::MissingRequest => ReviewError::MissingRequest,
        ReviewError::WrongType { api_version, kind } => ReviewError::WrongType {
            api_version: api_version.clone(),
            kind: kind.clone(),
        },
    }
}

#[tokio::test(flavor = "current_thread")]
async fn deeply_nested_values_in_a_pod_are_refused_or_decided() {
    for (place, edit) in places() {
        for (shape, text) in [
            ("arrays", nested_arrays(DEPTH)),
            ("objects", nested_objects(DEPTH)),
        ] {
            let what = format!("{DEPTH} nested {shape} as the {place}");
            let pod = pod_text(edit, &text);
            // Past Go's 10,000 levels: the apiserver never sends it. Refused by the decoder or the pod
            // reader, or kept as text that no step reads.
            let _ = through_every_layer(&what, pod_review(&pod)).await;
            read_pod(&pod);
        }
    }
}

#[tokio::test(flavor = "current_thread")]
async fn huge_strings_in_a_pod_are_decided() {
    for (place, edit) in places() {
        let what = format!("a {HUGE}-byte string as the {place}");
        let text = format!("\"{}\"", "x".repeat(HUGE));
        let response = through_every_layer(&what, pod_review(&pod_text(edit, &text))).await;
        // A string is a valid label value and annotation type (its length is the apiserver's business)
        // and an unknown field is kept: decided. `env` as a string is not a list: refused.
        if place != "container env" {
            assert!(response.is_ok(), "{what}: {:?}", response.err());
        }
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_pod_with_a_hundred_thousand_containers_is_decided() {
    let containers: Vec<Value> = (0..100_000)
        .map(|i| serde_json::json!({"name": format!("c{i}"), "image": "busybox"}))
        .collect();
    let body = pod_review(&pod_text(
        |pod| pod["spec"]["containers"] = Value::Array(containers),
        "",
    ));
    assert!(body.len() < 7 << 20);
    let response = through_every_layer("100,000 containers", body)
        .await
        .expect("decoded");
    assert!(response.allowed, "{response:?}");
}

#[test]
fn the_raw_pod_reader_takes_huge_lists_and_deep_members() {
    let containers: String = (0..100_000)
        .map(|i| format!(r#"{{"name":"c{i}","image":"busybox"}}"#))
        .collect::<Vec<_>>()
        .join(",");
    let text = format!(
        r#"{{"metadata":{{"name":"p","annotations":{{"a":"{}"}}}},"spec":{{"containers":[{containers}]}}}}"#,
        "y".repeat(HUGE)
    );
    let pod = RawPod::parse_str(&text).unwrap();
    assert_eq!(pod.containers.len(), 100_000);
    assert_eq!(pod.annotation("a").map(str::len), Some(HUGE));
    assert_eq!(
        pod.to_value()["spec"]["containers"][99_999]["name"],
        "c99999"
    );

    for deep in [nested_arrays(DEPTH), nested_objects(DEPTH)] {
        for text in [
            format!(r#"{{"metadata":{{"labels":{{"a":{deep}}}}}}}"#),
            format!(r#"{{"spec":{{"containers":[{{"name":"c","env":{deep}}}]}}}}"#),
            format!(r#"{{"spec":{{"affinity":{deep}}}}}"#),
            format!(r#"{{"status":{deep}}}"#),
        ] {
            // Refused, or (an unknown member, labels: kept as text until read) read as no value.
            read_pod(&text);
        }
    }
}

#[test]
fn the_admission_review_decoder_refuses_deep_envelopes() {
    for deep in [nested_arrays(DEPTH), nested_objects(DEPTH)] {
        // Not a review: an array is malformed, an object of unknown members has no apiVersion and kind.
        assert!(admission::decode_review(deep.as_bytes()).is_err());
        for body in [
            format!(
                r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{deep}}}"#
            ),
            format!(
                r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"uid":{deep}}}}}"#
            ),
            format!(
                r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"userInfo":{{"extra":{deep}}}}}}}"#
            ),
        ] {
            let result = admission::decode_review(body.as_bytes());
            assert!(
                matches!(result, Err(ReviewError::Malformed(_))),
                "{}: {:?}",
                &body[..60],
                result.as_ref().map(|r| &r.request.uid).map_err(clone_error)
            );
        }
        // An unknown member is skipped whatever it holds: this review has no request.
        let body = format!(
            r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","hostile":{deep}}}"#
        );
        assert_eq!(
            admission::decode_review(body.as_bytes()).map(drop),
            Err(ReviewError::MissingRequest)
        );
    }
}

#[test]
fn merge_patch_json_refuses_deep_documents_and_merges_huge_ones() {
    for deep in [nested_arrays(DEPTH), nested_objects(DEPTH)] {
        assert_eq!(merge_patch(&deep, "{}"), Err(BAD_DOCUMENT));
        assert_eq!(merge_patch("{}", &deep), Err(BAD_PATCH));
        assert_eq!(
            merge_patch(&format!(r#"{{"a":{deep}}}"#), r#"{"a":{"b":1}}"#),
            Err(BAD_DOCUMENT)
        );
    }
    let big = "z".repeat(HUGE);
    let merged = merge_patch(
        &format!(r#"{{"a":"{big}"}}"#),
        &format!(r#"{{"b":"{big}"}}"#),
    )
    .unwrap();
    assert_eq!(merged.len(), 2 * HUGE + 15);
    let keys = (0..100_000)
        .map(|i| format!(r#""k{i}":null"#))
        .collect::<Vec<_>>()
        .join(",");
    assert_eq!(
        merge_patch(r#"{"k1":1}"#, &format!("{{{keys}}}")).unwrap(),
        "{}"
    );
}

#[test]
fn the_go_regexp_translation_refuses_deep_and_huge_patterns() {
    for pattern in [
        "(".repeat(DEPTH) + "a" + &")".repeat(DEPTH),
        "(?:".repeat(DEPTH) + "a" + &")".repeat(DEPTH),
        "[".repeat(DEPTH),
        "((a{1000}){1000}){1000}".to_owned(),
        "\\pL{1000}".repeat(100),
    ] {
        let err = compile_regex(&pattern).expect_err(&pattern[..20.min(pattern.len())]);
        assert!(
            err.starts_with("error parsing regexp: "),
            "{}",
            &err[..80.min(err.len())]
        );
    }
    // A long pattern of plain text compiles, or is too large: an answer either way.
    let long = "a".repeat(HUGE);
    match compile_regex(&long) {
        Ok(re) => assert!(re.is_match(&long)),
        Err(e) => assert!(e.contains("expression too large"), "{}", &e[..80]),
    }
}

#[test]
fn quantity_parsing_refuses_deep_and_huge_texts() {
    for text in [
        "1".repeat(HUGE),
        format!("0.{}1", "0".repeat(HUGE)),
        format!("1e{}", "9".repeat(HUGE)),
        format!("{}Ki", "9".repeat(HUGE)),
    ] {
        // Go refuses digits past what an int64 or its inf.Dec path keeps; either way, no panic.
        let _ = Quantity::parse(&text);
    }
    for deep in [nested_arrays(DEPTH), nested_objects(DEPTH)] {
        assert!(serde_json::from_str::<Quantity>(&deep).is_err());
        let resources = format!(r#"{{"limits":{{"cpu":{deep}}}}}"#);
        assert!(
            serde_json::from_str::<
                std::collections::BTreeMap<String, std::collections::BTreeMap<String, Quantity>>,
            >(&resources)
            .is_err()
        );
    }
}
