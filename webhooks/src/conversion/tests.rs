//! Conversion tests. Every expected object is written by hand from the spec section (or the upstream rule)
//! named in the test, never produced by the code under test.

use serde_json::{Value, json};

use super::{ConversionError, convert_object, review};

const APPS_ALPHA: &str = "apps.kruise.io/v1alpha1";
const APPS_BETA: &str = "apps.kruise.io/v1beta1";
const POLICY_ALPHA: &str = "policy.kruise.io/v1alpha1";
const POLICY_BETA: &str = "policy.kruise.io/v1beta1";

fn convert(obj: &Value, to: &str) -> Value {
    convert_object(obj, to).unwrap_or_else(|err| panic!("conversion to {to} failed: {err}"))
}

fn assert_json_eq(actual: &Value, expected: &Value) {
    assert!(
        actual == expected,
        "converted object differs\n actual: {}\n expect: {}",
        serde_json::to_string_pretty(actual).unwrap_or_default(),
        serde_json::to_string_pretty(expected).unwrap_or_default()
    );
}

fn review_body(api_version: &str, desired: &str, objects: Vec<Value>) -> Value {
    json!({
        "apiVersion": api_version,
        "kind": "ConversionReview",
        "request": {"uid": "705ab4f5-6393-11e8-b7cc-42010a800002", "desiredAPIVersion": desired, "objects": objects},
    })
}

// ---------------------------------------------------------------------------------------------------------
// Generic rules (Kubernetes conversion webhook contract)
// ---------------------------------------------------------------------------------------------------------

#[test]
fn object_already_at_desired_version_is_returned_unchanged() {
    let obj = json!({
        "apiVersion": APPS_ALPHA, "kind": "SidecarSet",
        "metadata": {"name": "s", "labels": {"apps.kruise.io/sidecarset-custom-version": "v1"}},
        "spec": {"namespace": "ns1", "whatever": [1, 2]},
    });
    assert_json_eq(&convert(&obj, APPS_ALPHA), &obj);
}

#[test]
fn conversion_keeps_identity_metadata_and_sets_only_the_api_version() {
    let obj = json!({
        "apiVersion": APPS_ALPHA, "kind": "PersistentPodState",
        "metadata": {
            "name": "pps", "namespace": "default", "uid": "u-1", "resourceVersion": "42", "generation": 3,
            "creationTimestamp": null, "labels": {"a": "b"}, "annotations": {"c": "d"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "u-2"}],
        },
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web"}},
    });
    let out = convert(&obj, APPS_BETA);
    assert_eq!(out["apiVersion"], json!(APPS_BETA));
    assert_eq!(out["metadata"], obj["metadata"]);
    assert_eq!(out["kind"], json!("PersistentPodState"));
}

#[test]
fn unknown_kind_is_refused_naming_kind_and_version() {
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}});
    let err = convert_object(&pod, APPS_BETA).unwrap_err();
    assert!(
        matches!(err, ConversionError::UnsupportedKind { .. }),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(
        message.starts_with("cannot convert Pod default/p (v1): kruise-webhook converts only"),
        "{message}"
    );
}

#[test]
fn known_kind_in_another_group_is_refused() {
    let obj = json!({"apiVersion": "policy.kruise.io/v1alpha1", "kind": "CloneSet", "metadata": {"name": "c"}});
    let err = convert_object(&obj, APPS_BETA).unwrap_err();
    assert!(
        matches!(err, ConversionError::UnsupportedKind { .. }),
        "{err:?}"
    );
}

#[test]
fn desired_version_not_served_by_the_kind_is_refused_naming_both_versions() {
    let obj = json!({"apiVersion": APPS_ALPHA, "kind": "CloneSet", "metadata": {"name": "c", "namespace": "ns"}});
    let err = convert_object(&obj, "apps.kruise.io/v1").unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot convert CloneSet ns/c from apps.kruise.io/v1alpha1 to apps.kruise.io/v1: \
         CloneSet is served as apps.kruise.io/v1alpha1 and apps.kruise.io/v1beta1"
    );
    let err = convert_object(&obj, POLICY_BETA).unwrap_err();
    assert!(
        matches!(
            err,
            ConversionError::UnsupportedVersion {
                group: "apps.kruise.io",
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn object_version_not_served_is_refused() {
    let obj =
        json!({"apiVersion": "apps.kruise.io/v2", "kind": "SidecarSet", "metadata": {"name": "s"}});
    let err = convert_object(&obj, APPS_BETA).unwrap_err();
    assert!(err.to_string().starts_with(
        "cannot convert SidecarSet s from apps.kruise.io/v2 to apps.kruise.io/v1beta1"
    ));
}

#[test]
fn object_without_api_version_or_kind_is_invalid() {
    let err = convert_object(&json!({"kind": "CloneSet"}), APPS_BETA).unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot convert object: the object has no apiVersion"
    );
    let err = convert_object(&json!({"apiVersion": APPS_ALPHA}), APPS_BETA).unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot convert object: the apps.kruise.io/v1alpha1 object has no kind"
    );
    let err = convert_object(&json!([1]), APPS_BETA).unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot convert object: expected a JSON object, got an array"
    );
}

// ---------------------------------------------------------------------------------------------------------
// ConversionReview
// ---------------------------------------------------------------------------------------------------------

#[test]
fn review_v1_converts_every_object_in_order() {
    let objects = vec![
        json!({"apiVersion": APPS_ALPHA, "kind": "SidecarSet", "metadata": {"name": "first"},
               "spec": {"namespace": "ns1"}}),
        json!({"apiVersion": APPS_BETA, "kind": "SidecarSet", "metadata": {"name": "second"}, "spec": {}}),
        json!({"apiVersion": APPS_ALPHA, "kind": "SidecarSet", "metadata": {"name": "third"}, "spec": {}}),
    ];
    let out = review(&review_body("apiextensions.k8s.io/v1", APPS_BETA, objects)).unwrap();
    let expected = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "response": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "convertedObjects": [
                {"apiVersion": APPS_BETA, "kind": "SidecarSet", "metadata": {"name": "first"},
                 "spec": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ns1"}}}},
                {"apiVersion": APPS_BETA, "kind": "SidecarSet", "metadata": {"name": "second"}, "spec": {}},
                {"apiVersion": APPS_BETA, "kind": "SidecarSet", "metadata": {"name": "third"}, "spec": {}},
            ],
            "result": {"status": "Success"},
        },
    });
    assert_json_eq(&out, &expected);
}

#[test]
fn review_v1beta1_is_answered_as_v1beta1() {
    let objects = vec![
        json!({"apiVersion": POLICY_BETA, "kind": "PodUnavailableBudget",
                              "metadata": {"name": "p", "namespace": "d"}, "spec": {"protectTotalReplicas": 3}}),
    ];
    let out = review(&review_body(
        "apiextensions.k8s.io/v1beta1",
        POLICY_ALPHA,
        objects,
    ))
    .unwrap();
    let expected = json!({
        "apiVersion": "apiextensions.k8s.io/v1beta1",
        "kind": "ConversionReview",
        "response": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "convertedObjects": [{
                "apiVersion": POLICY_ALPHA, "kind": "PodUnavailableBudget",
                "metadata": {"name": "p", "namespace": "d",
                             "annotations": {"pub.kruise.io/protect-total-replicas": "3"}},
                "spec": {},
            }],
            "result": {"status": "Success"},
        },
    });
    assert_json_eq(&out, &expected);
}

#[test]
fn review_with_no_objects_succeeds_with_an_empty_list() {
    let out = review(&review_body("apiextensions.k8s.io/v1", APPS_BETA, vec![])).unwrap();
    assert_eq!(out["response"]["convertedObjects"], json!([]));
    assert_eq!(out["response"]["result"], json!({"status": "Success"}));
}

#[test]
fn review_with_unknown_kind_answers_failure_without_converted_objects() {
    let objects = vec![
        json!({"apiVersion": APPS_ALPHA, "kind": "SidecarSet", "metadata": {"name": "ok"}}),
        json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "BroadcastJob",
               "metadata": {"name": "bj", "namespace": "ns"}}),
    ];
    let out = review(&review_body("apiextensions.k8s.io/v1", APPS_BETA, objects)).unwrap();
    let response = out["response"].as_object().unwrap();
    assert_eq!(
        response["uid"],
        json!("705ab4f5-6393-11e8-b7cc-42010a800002")
    );
    assert!(!response.contains_key("convertedObjects"), "{out}");
    assert_eq!(response["result"]["status"], json!("Failure"));
    let message = response["result"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("cannot convert BroadcastJob ns/bj (apps.kruise.io/v1alpha1)"),
        "{message}"
    );
}

#[test]
fn review_failure_carries_openkruise_pub_annotation_message() {
    let objects = vec![json!({
        "apiVersion": POLICY_ALPHA, "kind": "PodUnavailableBudget",
        "metadata": {"name": "pub-a", "namespace": "default",
                     "annotations": {"kruise.io/pub-protect-operations": "DELETE,FOO"}},
    })];
    let out = review(&review_body(
        "apiextensions.k8s.io/v1",
        POLICY_BETA,
        objects,
    ))
    .unwrap();
    assert_eq!(
        out["response"]["result"],
        json!({"status": "Failure", "message": "converting PodUnavailableBudget default/pub-a to policy.kruise.io/v1beta1: \
                                               invalid kruise.io/pub-protect-operations value \"FOO\""})
    );
}

#[test]
fn review_without_request_is_malformed() {
    let body = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"});
    let err = review(&body).unwrap_err();
    assert!(matches!(err, ConversionError::Malformed { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "malformed ConversionReview: request is missing or not an object"
    );
}

#[test]
fn review_with_objects_not_an_array_is_malformed() {
    let body = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                      "request": {"uid": "u", "desiredAPIVersion": APPS_BETA, "objects": {"a": 1}}});
    let err = review(&body).unwrap_err();
    assert_eq!(
        err.to_string(),
        "malformed ConversionReview: request.objects is missing or not an array"
    );
}

#[test]
fn review_with_other_malformations_is_refused() {
    let cases = [
        (
            json!("text"),
            "malformed ConversionReview: expected a JSON object, got a string",
        ),
        (
            json!({"kind": "ConversionReview"}),
            "malformed ConversionReview: apiVersion is missing",
        ),
        (
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "ConversionReview"}),
            "malformed ConversionReview: apiVersion \"admission.k8s.io/v1\" is not apiextensions.k8s.io/v1 or \
             apiextensions.k8s.io/v1beta1",
        ),
        (
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "AdmissionReview", "request": {}}),
            "malformed ConversionReview: kind is \"AdmissionReview\", expected ConversionReview",
        ),
        (
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                   "request": {"desiredAPIVersion": APPS_BETA, "objects": []}}),
            "malformed ConversionReview: request.uid is missing or not a string",
        ),
        (
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                   "request": {"uid": "u", "desiredAPIVersion": "", "objects": []}}),
            "malformed ConversionReview: request.desiredAPIVersion is missing or empty",
        ),
    ];
    for (body, message) in cases {
        let err = review(&body).unwrap_err();
        assert!(matches!(err, ConversionError::Malformed { .. }), "{err:?}");
        assert_eq!(err.to_string(), message);
    }
}

// ---------------------------------------------------------------------------------------------------------
// SidecarSet (spec/sidecarset.md §2)
// ---------------------------------------------------------------------------------------------------------

#[test]
fn sidecarset_namespace_becomes_namespace_selector() {
    let alpha = json!({
        "apiVersion": APPS_ALPHA, "kind": "SidecarSet", "metadata": {"name": "log"},
        "spec": {"namespace": "ns1", "selector": {"matchLabels": {"app": "a"}}, "containers": [{"name": "c"}]},
    });
    let expected = json!({
        "apiVersion": APPS_BETA, "kind": "SidecarSet", "metadata": {"name": "log"},
        "spec": {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ns1"}},
            "selector": {"matchLabels": {"app": "a"}}, "containers": [{"name": "c"}],
        },
    });
    assert_json_eq(&convert(&alpha, APPS_BETA), &expected);
}

#[test]
fn sidecarset_namespace_takes_precedence_over_namespace_selector() {
    let alpha = json!({
        "apiVersion": APPS_ALPHA, "kind": "SidecarSet", "metadata": {"name": "log"},
        "spec": {"namespace": "ns1", "namespaceSelector": {"matchLabels": {"team": "x"}}},
    });
    let out = convert(&alpha, APPS_BETA);
    assert_eq!(
        out["spec"],
        json!({"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ns1"}}})
    );
}

#[test]
fn sidecarset_empty_namespace_keeps_namespace_selector() {
    let alpha = json!({
        "apiVersion": APPS_ALPHA, "kind": "SidecarSet", "metadata": {"name": "log"},
        "spec": {"namespace": "", "namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "Exists"}]}},
    });
    let out = convert(&alpha, APPS_BETA);
    assert_eq!(
        out["spec"],
        json!({"namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "Exists"}]}})
    );
}

#[test]
fn sidecarset_custom_version_label_moves_to_spec_and_is_removed() {
    let alpha = json!({
        "apiVersion": APPS_ALPHA, "kind": "SidecarSet",
        "metadata": {"name": "log", "labels": {"apps.kruise.io/sidecarset-custom-version": "v2", "team": "x"}},
        "spec": {"containers": []},
    });
    let expected = json!({
        "apiVersion": APPS_BETA, "kind": "SidecarSet",
        "metadata": {"name": "log", "labels": {"team": "x"}},
        "spec": {"containers": [], "customVersion": "v2"},
    });
    assert_json_eq(&convert(&alpha, APPS_BETA), &expected);
}

#[test]
fn sidecarset_only_label_removed_leaves_no_empty_labels_map() {
    let alpha = json!({
        "apiVersion": APPS_ALPHA, "kind": "SidecarSet",
        "metadata": {"name": "log", "labels": {"apps.kruise.io/sidecarset-custom-version": "v2"}},
    });
    let expected = json!({
        "apiVersion": APPS_BETA, "kind": "SidecarSet", "metadata": {"name": "log"}, "spec": {"customVersion": "v2"},
    });
    assert_json_eq(&convert(&alpha, APPS_BETA), &expected);
}

#[test]
fn sidecarset_beta_to_alpha_writes_custom_version_label_and_keeps_selector() {
    let beta = json!({
        "apiVersion": APPS_BETA, "kind": "SidecarSet", "metadata": {"name": "log"},
        "spec": {"customVersion": "v3",
                 "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ns1"}}},
        "status": {"matchedPods": 1, "readyPods": 1, "updatedPods": 1},
    });
    let expected = json!({
        "apiVersion": APPS_ALPHA, "kind": "SidecarSet",
        "metadata": {"name": "log", "labels": {"apps.kruise.io/sidecarset-custom-version": "v3"}},
        "spec": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ns1"}}},
        "status": {"matchedPods": 1, "readyPods": 1, "updatedPods": 1},
    });
    assert_json_eq(&convert(&beta, APPS_ALPHA), &expected);
}

#[test]
fn sidecarset_round_trip_preserves_object_and_unknown_fields() {
    let alpha = json!({
        "apiVersion": APPS_ALPHA, "kind": "SidecarSet",
        "metadata": {"name": "log", "uid": "u", "resourceVersion": "7",
                     "labels": {"apps.kruise.io/sidecarset-custom-version": "v1", "team": "x"},
                     "annotations": {"kruise.io/sidecarset-hash": "abc"}},
        "spec": {
            "namespaceSelector": {"matchLabels": {"env": "prod"}},
            "selector": {"matchLabels": {"app": "a"}},
            "containers": [{"name": "log", "image": "busybox", "podInjectPolicy": "BeforeAppContainer",
                            "futureContainerField": {"x": 1}}],
            "updateStrategy": {"type": "RollingUpdate", "partition": 1, "maxUnavailable": "50%"},
            "futureSpecField": true,
        },
        "status": {"matchedPods": 2, "readyPods": 2, "updatedPods": 1, "futureStatus": "s"},
        "futureTopLevel": [1],
    });
    let beta = convert(&alpha, APPS_BETA);
    assert_eq!(beta["spec"]["customVersion"], json!("v1"));
    assert_eq!(beta["spec"]["futureSpecField"], json!(true));
    assert_json_eq(&convert(&beta, APPS_ALPHA), &alpha);
}

// ---------------------------------------------------------------------------------------------------------
// WorkloadSpread (spec/workloadspread.md §2.1, §2.2, §2.5)
// ---------------------------------------------------------------------------------------------------------

fn workloadspread_alpha() -> Value {
    json!({
        "apiVersion": APPS_ALPHA, "kind": "WorkloadSpread",
        "metadata": {"name": "ws", "namespace": "default"},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "subsets": [
                {"name": "zone-a",
                 "requiredNodeSelectorTerm": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
                 "preferredNodeSelectorTerms": [{"weight": 10, "preference": {"matchExpressions": [
                     {"key": "disk", "operator": "In", "values": ["ssd"]}]}}],
                 "maxReplicas": 3},
                {"name": "zone-b",
                 "requiredNodeSelectorTerm": {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]},
                 "tolerations": [{"key": "k", "operator": "Exists"}],
                 "patch": {"metadata": {"labels": {"subset": "b"}}}},
                {"name": "elastic", "preferredNodeSelectorTerms": [], "futureSubsetField": 1},
            ],
            "scheduleStrategy": {"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 30}},
        },
    })
}

#[test]
fn workloadspread_alpha_to_beta_renames_selectors_in_every_subset() {
    let expected = json!({
        "apiVersion": APPS_BETA, "kind": "WorkloadSpread",
        "metadata": {"name": "ws", "namespace": "default"},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "subsets": [
                {"name": "zone-a",
                 "requiredNodeSelector": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
                 "preferredNodeSelector": [{"weight": 10, "preference": {"matchExpressions": [
                     {"key": "disk", "operator": "In", "values": ["ssd"]}]}}],
                 "maxReplicas": 3},
                {"name": "zone-b",
                 "requiredNodeSelector": {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]},
                 "tolerations": [{"key": "k", "operator": "Exists"}],
                 "patch": {"metadata": {"labels": {"subset": "b"}}}},
                {"name": "elastic", "preferredNodeSelector": [], "futureSubsetField": 1},
            ],
            "scheduleStrategy": {"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 30}},
        },
    });
    assert_json_eq(&convert(&workloadspread_alpha(), APPS_BETA), &expected);
}

#[test]
fn workloadspread_beta_to_alpha_renames_back_in_every_subset() {
    let beta = json!({
        "apiVersion": APPS_BETA, "kind": "WorkloadSpread", "metadata": {"name": "ws", "namespace": "default"},
        "spec": {"subsets": [
            {"name": "a", "requiredNodeSelector": {"matchExpressions": []}},
            {"name": "b", "preferredNodeSelector": [{"weight": 1, "preference": {}}]},
        ]},
    });
    let expected = json!({
        "apiVersion": APPS_ALPHA, "kind": "WorkloadSpread", "metadata": {"name": "ws", "namespace": "default"},
        "spec": {"subsets": [
            {"name": "a", "requiredNodeSelectorTerm": {"matchExpressions": []}},
            {"name": "b", "preferredNodeSelectorTerms": [{"weight": 1, "preference": {}}]},
        ]},
    });
    assert_json_eq(&convert(&beta, APPS_ALPHA), &expected);
}

#[test]
fn workloadspread_empty_condition_reason_becomes_unknown_with_zero_observed_generation() {
    let alpha = json!({
        "apiVersion": APPS_ALPHA, "kind": "WorkloadSpread", "metadata": {"name": "ws", "namespace": "default"},
        "status": {
            "observedGeneration": 4,
            "subsetStatuses": [
                {"name": "a", "replicas": 1, "missingReplicas": -1, "conditions": [
                    {"type": "Schedulable", "status": "False", "lastTransitionTime": "2026-03-01T10:00:00Z",
                     "reason": "", "message": "no room"},
                    {"type": "Other", "status": "True", "reason": "Sufficient", "observedGeneration": 9}]},
            ],
            "versionedSubsetStatuses": {
                "5d8f7": [{"name": "a", "replicas": 0, "missingReplicas": 2,
                           "creatingPods": {"p1": "2026-03-01T10:00:00Z"},
                           "conditions": [{"type": "Schedulable", "status": "True"}]}],
            },
        },
    });
    let expected = json!({
        "apiVersion": APPS_BETA, "kind": "WorkloadSpread", "metadata": {"name": "ws", "namespace": "default"},
        "status": {
            "observedGeneration": 4,
            "subsetStatuses": [
                {"name": "a", "replicas": 1, "missingReplicas": -1, "conditions": [
                    {"type": "Schedulable", "status": "False", "lastTransitionTime": "2026-03-01T10:00:00Z",
                     "reason": "Unknown", "message": "no room"},
                    {"type": "Other", "status": "True", "reason": "Sufficient", "message": ""}]},
            ],
            "versionedSubsetStatuses": {
                "5d8f7": [{"name": "a", "replicas": 0, "missingReplicas": 2,
                           "creatingPods": {"p1": "2026-03-01T10:00:00Z"},
                           "conditions": [{"type": "Schedulable", "status": "True", "reason": "Unknown",
                                           "message": ""}]}],
            },
        },
    });
    assert_json_eq(&convert(&alpha, APPS_BETA), &expected);
}

#[test]
fn workloadspread_beta_to_alpha_drops_condition_observed_generation() {
    let beta = json!({
        "apiVersion": APPS_BETA, "kind": "WorkloadSpread", "metadata": {"name": "ws", "namespace": "default"},
        "status": {"subsetStatuses": [{"name": "a", "replicas": 0, "missingReplicas": 0, "conditions": [
            {"type": "Schedulable", "status": "False", "observedGeneration": 3, "reason": "PodUnschedulable",
             "message": "", "lastTransitionTime": "2026-03-01T10:00:00Z"}]}]},
    });
    let expected = json!({
        "apiVersion": APPS_ALPHA, "kind": "WorkloadSpread", "metadata": {"name": "ws", "namespace": "default"},
        "status": {"subsetStatuses": [{"name": "a", "replicas": 0, "missingReplicas": 0, "conditions": [
            {"type": "Schedulable", "status": "False", "reason": "PodUnschedulable",
             "lastTransitionTime": "2026-03-01T10:00:00Z"}]}]},
    });
    assert_json_eq(&convert(&beta, APPS_ALPHA), &expected);
}

#[test]
fn workloadspread_round_trip_preserves_object() {
    let mut alpha = workloadspread_alpha();
    alpha["status"] = json!({
        "observedGeneration": 2,
        "subsetStatuses": [{"name": "zone-a", "replicas": 2, "missingReplicas": 1,
                            "conditions": [{"type": "Schedulable", "status": "True", "reason": "Sufficient",
                                            "message": "ok", "lastTransitionTime": "2026-03-01T10:00:00Z"}]}],
        "versionedSubsetStatuses": {"versionIgnored": [{"name": "zone-a", "replicas": 2, "missingReplicas": 1}]},
    });
    let beta = convert(&alpha, APPS_BETA);
    assert_json_eq(&convert(&beta, APPS_ALPHA), &alpha);
}

// ---------------------------------------------------------------------------------------------------------
// PodUnavailableBudget (spec/podunavailablebudget.md §2.2, §2.4)
// ---------------------------------------------------------------------------------------------------------

fn pub_alpha(annotations: Value) -> Value {
    json!({
        "apiVersion": POLICY_ALPHA, "kind": "PodUnavailableBudget",
        "metadata": {"name": "pub-web", "namespace": "default", "annotations": annotations},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1},
    })
}

#[test]
fn pub_alpha_to_beta_promotes_annotations_and_keeps_them() {
    let alpha = pub_alpha(json!({
        "kruise.io/pub-protect-operations": " DELETE, ,EVICT,,RESIZE ",
        "pub.kruise.io/protect-total-replicas": "15",
    }));
    let expected = json!({
        "apiVersion": POLICY_BETA, "kind": "PodUnavailableBudget",
        "metadata": {"name": "pub-web", "namespace": "default", "annotations": {
            "kruise.io/pub-protect-operations": " DELETE, ,EVICT,,RESIZE ",
            "pub.kruise.io/protect-total-replicas": "15",
        }},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1,
                 "protectOperations": ["DELETE", "EVICT", "RESIZE"], "protectTotalReplicas": 15},
    });
    assert_json_eq(&convert(&alpha, POLICY_BETA), &expected);
}

#[test]
fn pub_empty_annotations_set_nothing() {
    let alpha = pub_alpha(
        json!({"kruise.io/pub-protect-operations": " , ", "pub.kruise.io/protect-total-replicas": ""}),
    );
    let out = convert(&alpha, POLICY_BETA);
    assert_eq!(
        out["spec"],
        json!({"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1})
    );
}

#[test]
fn pub_invalid_operation_fails_with_openkruise_message() {
    let alpha = pub_alpha(json!({"kruise.io/pub-protect-operations": "DELETE,FOO"}));
    let err = convert_object(&alpha, POLICY_BETA).unwrap_err();
    let ConversionError::InvalidField { reason, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(
        reason,
        "invalid kruise.io/pub-protect-operations value \"FOO\""
    );
    assert_eq!(
        err.to_string(),
        "converting PodUnavailableBudget default/pub-web to policy.kruise.io/v1beta1: \
         invalid kruise.io/pub-protect-operations value \"FOO\""
    );
    let lower = pub_alpha(json!({"kruise.io/pub-protect-operations": "delete"}));
    let ConversionError::InvalidField { reason, .. } =
        convert_object(&lower, POLICY_BETA).unwrap_err()
    else {
        panic!("expected InvalidField")
    };
    assert_eq!(
        reason,
        "invalid kruise.io/pub-protect-operations value \"delete\""
    );
}

#[test]
fn pub_unparsable_total_replicas_fails_with_strconv_message() {
    let cases = [
        (
            "abc",
            "failed to parse pub.kruise.io/protect-total-replicas: strconv.ParseInt: parsing \"abc\": invalid syntax",
        ),
        (
            "1.5",
            "failed to parse pub.kruise.io/protect-total-replicas: strconv.ParseInt: parsing \"1.5\": invalid syntax",
        ),
        (
            "3000000000",
            "failed to parse pub.kruise.io/protect-total-replicas: strconv.ParseInt: parsing \"3000000000\": value out of range",
        ),
    ];
    for (value, message) in cases {
        let alpha = pub_alpha(json!({"pub.kruise.io/protect-total-replicas": value}));
        let ConversionError::InvalidField { reason, .. } =
            convert_object(&alpha, POLICY_BETA).unwrap_err()
        else {
            panic!("expected InvalidField for {value}")
        };
        assert_eq!(reason, message);
    }
}

#[test]
fn pub_beta_to_alpha_writes_annotations_and_loses_ignored_pod_selector() {
    let beta = json!({
        "apiVersion": POLICY_BETA, "kind": "PodUnavailableBudget",
        "metadata": {"name": "pub-web", "namespace": "default", "annotations": {"keep": "me"}},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1,
                 "protectOperations": ["DELETE", "RESIZE"], "protectTotalReplicas": 9,
                 "ignoredPodSelector": {"matchLabels": {"kruise.io/force-deletable": "true"}}},
        "status": {"unavailableAllowed": 1, "currentAvailable": 5, "desiredAvailable": 4, "totalReplicas": 5},
    });
    let expected = json!({
        "apiVersion": POLICY_ALPHA, "kind": "PodUnavailableBudget",
        "metadata": {"name": "pub-web", "namespace": "default", "annotations": {
            "keep": "me", "kruise.io/pub-protect-operations": "DELETE,RESIZE",
            "pub.kruise.io/protect-total-replicas": "9"}},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1},
        "status": {"observedGeneration": 0, "unavailableAllowed": 1, "currentAvailable": 5, "desiredAvailable": 4,
                   "totalReplicas": 5},
    });
    assert_json_eq(&convert(&beta, POLICY_ALPHA), &expected);
}

#[test]
fn pub_beta_to_alpha_deletes_annotations_of_unset_fields() {
    let beta = json!({
        "apiVersion": POLICY_BETA, "kind": "PodUnavailableBudget",
        "metadata": {"name": "pub-web", "namespace": "default", "annotations": {
            "kruise.io/pub-protect-operations": "DELETE", "pub.kruise.io/protect-total-replicas": "4"}},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "minAvailable": "50%",
                 "protectOperations": []},
    });
    let expected = json!({
        "apiVersion": POLICY_ALPHA, "kind": "PodUnavailableBudget",
        "metadata": {"name": "pub-web", "namespace": "default"},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "minAvailable": "50%"},
    });
    assert_json_eq(&convert(&beta, POLICY_ALPHA), &expected);
}

#[test]
fn pub_zero_observed_generation_is_omitted_in_beta() {
    let mut alpha = pub_alpha(json!({"x": "y"}));
    alpha["status"] = json!({"observedGeneration": 0, "unavailableAllowed": 0, "currentAvailable": 0,
                             "desiredAvailable": 0, "totalReplicas": 0});
    let beta = convert(&alpha, POLICY_BETA);
    assert_eq!(
        beta["status"],
        json!({"unavailableAllowed": 0, "currentAvailable": 0, "desiredAvailable": 0, "totalReplicas": 0})
    );
}

#[test]
fn pub_round_trip_preserves_object() {
    let mut alpha = pub_alpha(json!({
        "kruise.io/pub-protect-operations": "DELETE,EVICT",
        "pub.kruise.io/protect-total-replicas": "15",
        "other": "x",
    }));
    alpha["spec"]["futureField"] = json!({"a": 1});
    alpha["status"] = json!({"observedGeneration": 3, "disruptedPods": {"web-0": "2026-03-01T10:00:00Z"},
                             "unavailableAllowed": 0, "currentAvailable": 4, "desiredAvailable": 4,
                             "totalReplicas": 5});
    let beta = convert(&alpha, POLICY_BETA);
    assert_json_eq(&convert(&beta, POLICY_ALPHA), &alpha);
}

// ---------------------------------------------------------------------------------------------------------
// CloneSet (schemas + upstream cloneset_conversion.go)
// ---------------------------------------------------------------------------------------------------------

#[test]
fn cloneset_alpha_to_beta_nests_rolling_fields_and_maps_the_type() {
    let alpha = json!({
        "apiVersion": APPS_ALPHA, "kind": "CloneSet",
        "metadata": {"name": "web", "namespace": "default", "annotations": {
            "apps.kruise.io/image-predownload-parallelism": "5",
            "apps.kruise.io/image-predownload-timeout-seconds": "600",
        }},
        "spec": {
            "replicas": 4,
            "scaleStrategy": {"podsToDelete": ["web-x"], "maxUnavailable": 1},
            "updateStrategy": {
                "type": "InPlaceIfPossible", "partition": "50%", "maxUnavailable": 2, "maxSurge": 1, "paused": true,
                "priorityStrategy": {"weightPriority": [{"weight": 50, "matchSelector": {"matchLabels": {"a": "b"}}}]},
                "scatterStrategy": [{"key": "zone", "value": "a"}],
                "inPlaceUpdateStrategy": {"gracePeriodSeconds": 10},
            },
            "progressDeadlineSeconds": 600,
        },
    });
    let expected = json!({
        "apiVersion": APPS_BETA, "kind": "CloneSet",
        "metadata": {"name": "web", "namespace": "default", "annotations": {
            "apps.kruise.io/image-predownload-parallelism": "5",
            "apps.kruise.io/image-predownload-timeout-seconds": "600",
        }},
        "spec": {
            "replicas": 4,
            "scaleStrategy": {"podsToDelete": ["web-x"], "maxUnavailable": 1, "enablePVCReuse": true},
            "updateStrategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {
                    "podUpdatePolicy": "InPlaceIfPossible", "partition": "50%", "maxUnavailable": 2, "maxSurge": 1,
                    "paused": true,
                    "priorityStrategy": {"weightPriority": [{"weight": 50,
                                                              "matchSelector": {"matchLabels": {"a": "b"}}}]},
                    "scatterStrategy": [{"key": "zone", "value": "a"}],
                    "inPlaceUpdateStrategy": {"gracePeriodSeconds": 10, "imagePreDownloadParallelism": 5,
                                              "imagePreDownloadTimeoutSeconds": 600},
                },
            },
            "progressDeadlineSeconds": 600,
        },
    });
    assert_json_eq(&convert(&alpha, APPS_BETA), &expected);
}

#[test]
fn cloneset_missing_or_unknown_alpha_type_means_recreate() {
    for update in [
        json!({}),
        json!({"type": "Weird"}),
        json!({"type": "ReCreate"}),
    ] {
        let alpha = json!({"apiVersion": APPS_ALPHA, "kind": "CloneSet", "metadata": {"name": "c"},
                           "spec": {"updateStrategy": update}});
        let out = convert(&alpha, APPS_BETA);
        assert_eq!(
            out["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"podUpdatePolicy": "ReCreate"}})
        );
    }
    let alpha = json!({"apiVersion": APPS_ALPHA, "kind": "CloneSet", "metadata": {"name": "c"}, "spec": {}});
    let out = convert(&alpha, APPS_BETA);
    assert_eq!(
        out["spec"],
        json!({"scaleStrategy": {"enablePVCReuse": true},
               "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"podUpdatePolicy": "ReCreate"}}})
    );
}

#[test]
fn cloneset_alpha_on_delete_has_no_rolling_update() {
    let alpha = json!({"apiVersion": APPS_ALPHA, "kind": "CloneSet", "metadata": {"name": "c"},
                       "spec": {"updateStrategy": {"type": "OnDelete", "partition": 2, "paused": true}}});
    let out = convert(&alpha, APPS_BETA);
    assert_eq!(out["spec"]["updateStrategy"], json!({"type": "OnDelete"}));
}

#[test]
fn cloneset_in_place_only_maps_both_ways() {
    let alpha = json!({"apiVersion": APPS_ALPHA, "kind": "CloneSet", "metadata": {"name": "c"},
                       "spec": {"updateStrategy": {"type": "InPlaceOnly", "maxSurge": "10%"}}});
    let beta = convert(&alpha, APPS_BETA);
    assert_eq!(
        beta["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"podUpdatePolicy": "InPlaceOnly", "maxSurge": "10%"}})
    );
    assert_eq!(
        convert(&beta, APPS_ALPHA)["spec"]["updateStrategy"],
        json!({"type": "InPlaceOnly", "maxSurge": "10%"})
    );
}

#[test]
fn cloneset_pvc_reuse_is_negated_between_versions() {
    let alpha = json!({"apiVersion": APPS_ALPHA, "kind": "CloneSet", "metadata": {"name": "c"},
                       "spec": {"scaleStrategy": {"disablePVCReuse": true}}});
    assert_eq!(
        convert(&alpha, APPS_BETA)["spec"]["scaleStrategy"],
        json!({"enablePVCReuse": false})
    );

    // v1beta1 without the field means enablePVCReuse=false, so v1alpha1 must disable reuse.
    let beta = json!({"apiVersion": APPS_BETA, "kind": "CloneSet", "metadata": {"name": "c"},
                      "spec": {"updateStrategy": {"type": "RollingUpdate"}}});
    assert_eq!(
        convert(&beta, APPS_ALPHA)["spec"]["scaleStrategy"],
        json!({"disablePVCReuse": true})
    );

    let beta = json!({"apiVersion": APPS_BETA, "kind": "CloneSet", "metadata": {"name": "c"},
                      "spec": {"scaleStrategy": {"enablePVCReuse": true, "podsToDelete": ["p"]}}});
    assert_eq!(
        convert(&beta, APPS_ALPHA)["spec"]["scaleStrategy"],
        json!({"podsToDelete": ["p"]})
    );
}

#[test]
fn cloneset_exclude_preparing_delete_label_and_field_carry_each_other() {
    let alpha = json!({
        "apiVersion": APPS_ALPHA, "kind": "CloneSet",
        "metadata": {"name": "c", "labels": {"apps.kruise.io/cloneset-scaling-exclude-preparing-delete": "true"}},
        "spec": {},
    });
    let beta = convert(&alpha, APPS_BETA);
    assert_eq!(
        beta["spec"]["scaleStrategy"],
        json!({"enablePVCReuse": true, "excludePreparingDelete": true})
    );
    assert_eq!(beta["metadata"], alpha["metadata"]);

    let beta = json!({"apiVersion": APPS_BETA, "kind": "CloneSet", "metadata": {"name": "c"},
                      "spec": {"scaleStrategy": {"enablePVCReuse": true, "excludePreparingDelete": true}}});
    let alpha = convert(&beta, APPS_ALPHA);
    assert_eq!(
        alpha["metadata"],
        json!({"name": "c", "labels": {"apps.kruise.io/cloneset-scaling-exclude-preparing-delete": "true"}})
    );
    assert_eq!(alpha["spec"].get("scaleStrategy"), None);
}

#[test]
fn cloneset_unparsable_pre_download_annotation_drops_the_field() {
    let alpha = json!({
        "apiVersion": APPS_ALPHA, "kind": "CloneSet",
        "metadata": {"name": "c", "annotations": {
            "apps.kruise.io/image-predownload-parallelism": "50%",
            "apps.kruise.io/image-predownload-timeout-seconds": "ten",
            "apps.kruise.io/image-predownload-min-updated-ready-pods": "2",
        }},
        "spec": {"updateStrategy": {"type": "ReCreate",
                                    "inPlaceUpdateStrategy": {"imagePreDownloadTimeoutSeconds": 30}}},
    });
    let out = convert(&alpha, APPS_BETA);
    assert_eq!(
        out["spec"]["updateStrategy"]["rollingUpdate"]["inPlaceUpdateStrategy"],
        json!({"imagePreDownloadParallelism": "50%", "imagePreDownloadMinUpdatedReadyPods": 2})
    );
}

#[test]
fn cloneset_beta_to_alpha_flattens_and_writes_pre_download_annotations() {
    let beta = json!({
        "apiVersion": APPS_BETA, "kind": "CloneSet",
        "metadata": {"name": "web", "namespace": "default", "annotations": {"keep": "me"}},
        "spec": {
            "scaleStrategy": {"enablePVCReuse": false},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {
                "podUpdatePolicy": "InPlaceIfPossible", "partition": 3, "maxUnavailable": "20%",
                "inPlaceUpdateStrategy": {"gracePeriodSeconds": 0, "imagePreDownloadParallelism": 2,
                                          "imagePreDownloadTimeoutSeconds": 300,
                                          "imagePreDownloadMinUpdatedReadyPods": 1}}},
        },
        "status": {"replicas": 4, "readyReplicas": 4, "availableReplicas": 4, "updatedReplicas": 4,
                   "updatedReadyReplicas": 4, "conditions": [{"type": "FailedScale", "status": "False"}]},
    });
    let expected = json!({
        "apiVersion": APPS_ALPHA, "kind": "CloneSet",
        "metadata": {"name": "web", "namespace": "default", "annotations": {
            "keep": "me",
            "apps.kruise.io/image-predownload-parallelism": "2",
            "apps.kruise.io/image-predownload-timeout-seconds": "300",
            "apps.kruise.io/image-predownload-min-updated-ready-pods": "1",
        }},
        "spec": {
            "scaleStrategy": {"disablePVCReuse": true},
            "updateStrategy": {"type": "InPlaceIfPossible", "partition": 3, "maxUnavailable": "20%",
                               "inPlaceUpdateStrategy": {}},
        },
        "status": {"replicas": 4, "readyReplicas": 4, "availableReplicas": 4, "updatedReplicas": 4,
                   "updatedReadyReplicas": 4, "conditions": [{"type": "FailedScale", "status": "False"}]},
    });
    assert_json_eq(&convert(&beta, APPS_ALPHA), &expected);
}

#[test]
fn cloneset_beta_on_delete_keeps_rolling_fields_in_alpha() {
    let beta = json!({"apiVersion": APPS_BETA, "kind": "CloneSet", "metadata": {"name": "c"},
                      "spec": {"scaleStrategy": {"enablePVCReuse": true},
                               "updateStrategy": {"type": "OnDelete", "rollingUpdate": {"partition": 1,
                                                  "inPlaceUpdateStrategy": {"gracePeriodSeconds": 0}}}}});
    let out = convert(&beta, APPS_ALPHA);
    assert_eq!(
        out["spec"],
        json!({"updateStrategy": {"type": "OnDelete", "partition": 1}})
    );
}

#[test]
fn cloneset_round_trip_preserves_object_and_unknown_fields() {
    let alpha = json!({
        "apiVersion": APPS_ALPHA, "kind": "CloneSet",
        "metadata": {"name": "web", "namespace": "default", "generation": 5, "annotations": {
            "apps.kruise.io/image-predownload-parallelism": "3"}},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "app",
                                                                                          "image": "nginx"}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}}],
            "scaleStrategy": {"disablePVCReuse": true, "maxUnavailable": 1},
            "updateStrategy": {"type": "InPlaceOnly", "partition": 1, "paused": true,
                               "inPlaceUpdateStrategy": {"gracePeriodSeconds": 5},
                               "futureRollingField": "x"},
            "lifecycle": {"preDelete": {"finalizersHandler": ["example.com/hook"]}},
            "minReadySeconds": 3, "revisionHistoryLimit": 5,
        },
        "status": {"observedGeneration": 5, "replicas": 3, "readyReplicas": 3, "availableReplicas": 3,
                   "updatedReplicas": 3, "updatedReadyReplicas": 3, "updateRevision": "web-1",
                   "labelSelector": "app=web"},
    });
    let beta = convert(&alpha, APPS_BETA);
    assert_eq!(
        beta["spec"]["updateStrategy"]["rollingUpdate"]["futureRollingField"],
        json!("x")
    );
    assert_json_eq(&convert(&beta, APPS_ALPHA), &alpha);
}

// ---------------------------------------------------------------------------------------------------------
// ContainerRecreateRequest (schemas + upstream containerrecreaterequest_conversion.go)
// ---------------------------------------------------------------------------------------------------------

fn crr(api_version: &str, annotations: Value, status: Value) -> Value {
    json!({
        "apiVersion": api_version, "kind": "ContainerRecreateRequest",
        "metadata": {"name": "crr-1", "namespace": "default", "annotations": annotations},
        "spec": {"podName": "web-0", "containers": [{"name": "app"}],
                 "strategy": {"failurePolicy": "Fail", "unreadyGracePeriodSeconds": 3}},
        "status": status,
    })
}

#[test]
fn crr_alpha_to_beta_promotes_sync_statuses_and_unready_acquired() {
    let alpha = crr(
        APPS_ALPHA,
        json!({
            "crr.apps.kruise.io/sync-container-statuses":
                r#"[{"name":"app","ready":true,"restartCount":2,"containerID":"containerd://abc"},{"name":"log","ready":false,"restartCount":0}]"#,
            "crr.apps.kruise.io/unready-acquired": "2026-03-01T12:00:00+02:00",
        }),
        json!({"phase": "Recreating"}),
    );
    let expected = crr(
        APPS_BETA,
        json!({
            "crr.apps.kruise.io/sync-container-statuses":
                r#"[{"name":"app","ready":true,"restartCount":2,"containerID":"containerd://abc"},{"name":"log","ready":false,"restartCount":0}]"#,
            "crr.apps.kruise.io/unready-acquired": "2026-03-01T12:00:00+02:00",
        }),
        json!({
            "phase": "Recreating",
            "containerStatusSnapshot": [
                {"name": "app", "ready": true, "restartCount": 2, "containerID": "containerd://abc"},
                {"name": "log", "ready": false, "restartCount": 0},
            ],
            "conditions": [{"type": "PodUnreadyAcquired", "status": "True",
                            "lastTransitionTime": "2026-03-01T10:00:00Z", "reason": "UnreadyAcquired",
                            "message": "Pod has been forced to not-ready for unreadyGracePeriodSeconds drain"}],
        }),
    );
    assert_json_eq(&convert(&alpha, APPS_BETA), &expected);
}

#[test]
fn crr_unparsable_annotations_are_ignored() {
    let alpha = crr(
        APPS_ALPHA,
        json!({"crr.apps.kruise.io/sync-container-statuses": r#"[{"name":"app","ready":"yes"}]"#,
               "crr.apps.kruise.io/unready-acquired": "not a time"}),
        json!({"phase": "Pending"}),
    );
    let out = convert(&alpha, APPS_BETA);
    assert_eq!(out["status"], json!({"phase": "Pending"}));
    assert_eq!(out["metadata"], alpha["metadata"]);
}

#[test]
fn crr_beta_to_alpha_demotes_snapshot_and_condition() {
    let beta = crr(
        APPS_BETA,
        json!({"keep": "me"}),
        json!({
            "phase": "Completed",
            "completionTime": "2026-03-01T10:05:00Z",
            "containerRecreateStates": [{"name": "app", "phase": "Succeeded", "isKilled": true}],
            "containerStatusSnapshot": [{"name": "app", "ready": true, "restartCount": 1,
                                         "containerID": "docker://<x>&y"}],
            "conditions": [
                {"type": "Other", "status": "True", "lastTransitionTime": "2026-03-01T09:00:00Z", "reason": "R",
                 "message": ""},
                {"type": "PodUnreadyAcquired", "status": "True", "lastTransitionTime": "2026-03-01T10:00:00Z",
                 "reason": "UnreadyAcquired", "message": "m"},
            ],
        }),
    );
    let expected = crr(
        APPS_ALPHA,
        json!({
            "keep": "me",
            "crr.apps.kruise.io/sync-container-statuses":
                r#"[{"name":"app","ready":true,"restartCount":1,"containerID":"docker://\u003cx\u003e\u0026y"}]"#,
            "crr.apps.kruise.io/unready-acquired": "2026-03-01T10:00:00Z",
        }),
        json!({
            "phase": "Completed",
            "completionTime": "2026-03-01T10:05:00Z",
            "containerRecreateStates": [{"name": "app", "phase": "Succeeded", "isKilled": true}],
        }),
    );
    assert_json_eq(&convert(&beta, APPS_ALPHA), &expected);
}

#[test]
fn crr_false_unready_condition_writes_no_annotation() {
    let beta = crr(
        APPS_BETA,
        json!({"keep": "me"}),
        json!({"phase": "Recreating", "conditions": [{"type": "PodUnreadyAcquired", "status": "False",
               "lastTransitionTime": "2026-03-01T10:00:00Z", "reason": "R", "message": ""}]}),
    );
    let out = convert(&beta, APPS_ALPHA);
    assert_eq!(out["metadata"]["annotations"], json!({"keep": "me"}));
    assert_eq!(out["status"], json!({"phase": "Recreating"}));
}

#[test]
fn crr_round_trip_preserves_object() {
    let alpha = crr(
        APPS_ALPHA,
        json!({
            "crr.apps.kruise.io/sync-container-statuses": r#"[{"name":"app","ready":false,"restartCount":3}]"#,
            "crr.apps.kruise.io/unready-acquired": "2026-03-01T10:00:00Z",
        }),
        json!({"phase": "Recreating", "containerRecreateStates": [{"name": "app", "phase": "Recreating"}]}),
    );
    let beta = convert(&alpha, APPS_BETA);
    assert_json_eq(&convert(&beta, APPS_ALPHA), &alpha);
}

// ---------------------------------------------------------------------------------------------------------
// PersistentPodState (schemas + upstream persistent_pod_state_conversion.go)
// ---------------------------------------------------------------------------------------------------------

#[test]
fn pps_alpha_to_beta_renames_node_topology_keys() {
    let alpha = json!({
        "apiVersion": APPS_ALPHA, "kind": "PersistentPodState", "metadata": {"name": "pps", "namespace": "d"},
        "spec": {
            "targetRef": {"apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet", "name": "web"},
            "requiredPersistentTopology": {"nodeTopologyKeys": ["kubernetes.io/hostname"]},
            "preferredPersistentTopology": [
                {"weight": 100, "preference": {"nodeTopologyKeys": ["topology.kubernetes.io/zone"]}},
                {"weight": 10, "preference": {"nodeTopologyKeys": ["rack", "row"]}},
            ],
            "persistentPodStateRetentionPolicy": "WhenScaled",
        },
        "status": {"observedGeneration": 1, "podStates": {"web-0": {"nodeName": "n1",
                                                                    "nodeTopologyLabels": {"rack": "r1"}}}},
    });
    let expected = json!({
        "apiVersion": APPS_BETA, "kind": "PersistentPodState", "metadata": {"name": "pps", "namespace": "d"},
        "spec": {
            "targetRef": {"apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet", "name": "web"},
            "requiredPersistentTopology": {"keys": ["kubernetes.io/hostname"]},
            "preferredPersistentTopology": [
                {"weight": 100, "preference": {"keys": ["topology.kubernetes.io/zone"]}},
                {"weight": 10, "preference": {"keys": ["rack", "row"]}},
            ],
            "persistentPodStateRetentionPolicy": "WhenScaled",
        },
        "status": {"observedGeneration": 1, "podStates": {"web-0": {"nodeName": "n1",
                                                                    "nodeTopologyLabels": {"rack": "r1"}}}},
    });
    let beta = convert(&alpha, APPS_BETA);
    assert_json_eq(&beta, &expected);
    assert_json_eq(&convert(&beta, APPS_ALPHA), &alpha);
}

#[test]
fn pps_beta_to_alpha_renames_keys() {
    let beta = json!({
        "apiVersion": APPS_BETA, "kind": "PersistentPodState", "metadata": {"name": "pps", "namespace": "d"},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web"},
                 "requiredPersistentTopology": {"keys": ["a"]}},
    });
    let out = convert(&beta, APPS_ALPHA);
    assert_eq!(
        out["spec"]["requiredPersistentTopology"],
        json!({"nodeTopologyKeys": ["a"]})
    );
    assert_eq!(out["apiVersion"], json!(APPS_ALPHA));
}

// ---------------------------------------------------------------------------------------------------------
// Robustness
// ---------------------------------------------------------------------------------------------------------

#[test]
fn odd_shapes_never_panic() {
    let kinds = [
        ("apps.kruise.io", "CloneSet"),
        ("apps.kruise.io", "ContainerRecreateRequest"),
        ("apps.kruise.io", "PersistentPodState"),
        ("apps.kruise.io", "SidecarSet"),
        ("apps.kruise.io", "WorkloadSpread"),
        ("policy.kruise.io", "PodUnavailableBudget"),
    ];
    let odd_bodies = [
        json!({}),
        json!({"metadata": null, "spec": null, "status": null}),
        json!({"metadata": "x", "spec": [1], "status": 3}),
        json!({"metadata": {"labels": null, "annotations": []},
               "spec": {"subsets": {"a": 1}, "updateStrategy": "x", "scaleStrategy": [],
                        "requiredPersistentTopology": 1, "preferredPersistentTopology": [1, null]},
               "status": {"subsetStatuses": [null, {"conditions": "x"}], "versionedSubsetStatuses": [],
                          "conditions": 1, "containerStatusSnapshot": null}}),
    ];
    for (group, kind) in kinds {
        for body in &odd_bodies {
            for (from, to) in [("v1alpha1", "v1beta1"), ("v1beta1", "v1alpha1")] {
                let mut obj = body.clone();
                obj["apiVersion"] = json!(format!("{group}/{from}"));
                obj["kind"] = json!(kind);
                // Either result is fine; the point is that nothing panics.
                let _ = convert_object(&obj, &format!("{group}/{to}"));
            }
        }
    }
}
