use super::*;
use serde_json::json;

const NOW: &str = "2025-01-01T00:00:00Z";

fn now() -> Time {
    serde_json::from_value(json!(NOW)).unwrap()
}

/// The common setup of spec §9: subsets a (zone z1, max 2), b (zone z2, max 3), c (unlimited).
fn ws(status: serde_json::Value) -> WorkloadSpread {
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "WorkloadSpread",
        "metadata": {"name": "ws", "namespace": "ns", "resourceVersion": "10"},
        "spec": {"targetRef": {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "cs"},
            "subsets": [{"name": "a", "maxReplicas": 2}, {"name": "b", "maxReplicas": 3}, {"name": "c"}]},
        "status": status
    }))
    .unwrap()
}

fn placing<'a>(name: &'a str, now: &'a Time) -> Placing<'a> {
    Placing {
        name,
        version: "versionIgnored",
        generated_uid: "uid-1",
        replicas: 0,
        now,
    }
}

fn list_of(choice: &Choice) -> serde_json::Value {
    let Choice::Subset {
        write: Some(ws), ..
    } = choice
    else {
        panic!("no write: {choice:?}");
    };
    serde_json::to_value(&ws.status.as_ref().unwrap().versioned_subset_statuses).unwrap()
}

#[test]
fn scenario_1_first_pod_initialises_the_list_and_reserves_in_a() {
    let t = now();
    let choice = choose(&ws(json!(null)), placing("cs-aaaaa", &t)).unwrap();
    assert!(matches!(&choice, Choice::Subset { subset, uid: None, .. } if subset == "a"));
    assert_eq!(
        list_of(&choice),
        json!({"versionIgnored": [
            {"name": "a", "replicas": 0, "missingReplicas": 1, "creatingPods": {"cs-aaaaa": NOW}},
            {"name": "b", "replicas": 0, "missingReplicas": 3},
            {"name": "c", "replicas": 0, "missingReplicas": -1}]})
    );
}

#[test]
fn scenario_2_3_4_full_subsets_are_passed_over() {
    let t = now();
    let status = |a: i32, b: i32| {
        json!({"versionedSubsetStatuses": {"versionIgnored": [
            {"name": "a", "replicas": 2, "missingReplicas": a},
            {"name": "b", "replicas": 0, "missingReplicas": b},
            {"name": "c", "replicas": 0, "missingReplicas": -1}]}})
    };
    let choice = choose(&ws(status(0, 3)), placing("cs-bbbbb", &t)).unwrap();
    assert_eq!(
        list_of(&choice)["versionIgnored"][1],
        json!({"name": "b", "replicas": 0, "missingReplicas": 2, "creatingPods": {"cs-bbbbb": NOW}})
    );
    let choice = choose(&ws(status(0, 0)), placing("cs-ccccc", &t)).unwrap();
    assert_eq!(
        choice,
        Choice::Subset {
            subset: "c".into(),
            uid: None,
            write: None
        }
    );
    let mut two = ws(status(0, 0));
    two.spec.subsets.pop();
    two.status
        .as_mut()
        .unwrap()
        .versioned_subset_statuses
        .get_mut("versionIgnored")
        .unwrap()
        .pop();
    assert_eq!(
        choose(&two, placing("cs-ddddd", &t)).unwrap(),
        Choice::NoSubset { full: true }
    );
}

#[test]
fn scenario_5_a_pod_without_name_is_keyed_by_the_generated_uid() {
    let t = now();
    let mut p = placing("", &t);
    p.version = "5d8f";
    let choice = choose(&ws(json!(null)), p).unwrap();
    assert!(matches!(&choice, Choice::Subset { uid: Some(u), .. } if u == "uid-1"));
    assert_eq!(
        list_of(&choice)["5d8f"][0]["creatingPods"],
        json!({"uid-1": NOW})
    );
    // Decided again on the written object (after a conflict elsewhere): the same place, nothing more.
    let Choice::Subset {
        write: Some(written),
        ..
    } = choice
    else {
        unreachable!()
    };
    assert_eq!(
        choose(&written, p).unwrap(),
        Choice::Subset {
            subset: "a".into(),
            uid: Some("uid-1".into()),
            write: None
        }
    );
}

#[test]
fn scenario_6_and_7_recorded_pods_and_unschedulable_subsets() {
    let t = now();
    let recorded = ws(json!({"versionedSubsetStatuses": {"versionIgnored": [
        {"name": "a", "replicas": 0, "missingReplicas": 4, "creatingPods": {"cs-ddddd": "2024-12-31T23:59:00Z"}},
        {"name": "b", "replicas": 0, "missingReplicas": 3}]}}));
    assert_eq!(
        choose(&recorded, placing("cs-ddddd", &t)).unwrap(),
        Choice::Subset {
            subset: "a".into(),
            uid: None,
            write: None
        }
    );
    let unschedulable = ws(json!({"versionedSubsetStatuses": {"versionIgnored": [
        {"name": "a", "replicas": 0, "missingReplicas": 2, "conditions": [{"type": "Schedulable", "status": "False",
            "reason": "PodUnschedulable", "message": "", "lastTransitionTime": "2024-12-31T23:00:00Z"}]},
        {"name": "b", "replicas": 0, "missingReplicas": 3}]}}));
    let choice = choose(&unschedulable, placing("cs-eeeee", &t)).unwrap();
    assert!(matches!(&choice, Choice::Subset { subset, .. } if subset == "b"));
}

#[test]
fn scenario_8_and_9_percentages_round_up_and_absent_workloads_are_zero() {
    let t = now();
    let mut pct = ws(json!(null));
    pct.spec.subsets = serde_json::from_value(
        json!([{"name": "a", "maxReplicas": "33%"}, {"name": "b", "maxReplicas": "67%"}]),
    )
    .unwrap();
    let mut p = placing("cs-aaaaa", &t);
    p.replicas = 10;
    let choice = choose(&pct, p).unwrap();
    assert_eq!(
        list_of(&choice)["versionIgnored"],
        json!([{"name": "a", "replicas": 0, "missingReplicas": 3, "creatingPods": {"cs-aaaaa": NOW}},
               {"name": "b", "replicas": 0, "missingReplicas": 7}])
    );
    p.replicas = 0;
    assert_eq!(choose(&pct, p).unwrap(), Choice::NoSubset { full: true });
}

#[test]
fn scenario_10_a_single_unlimited_subset_reads_no_status() {
    let t = now();
    let mut only = ws(
        json!({"subsetStatuses": [{"name": "only", "replicas": 0, "missingReplicas": -1,
        "conditions": [{"type": "Schedulable", "status": "False", "reason": "PodUnschedulable", "message": "",
                        "lastTransitionTime": "2024-12-31T23:00:00Z"}]}]}),
    );
    only.spec.subsets = serde_json::from_value(json!([{"name": "only"}])).unwrap();
    assert_eq!(
        choose(&only, placing("", &t)).unwrap(),
        Choice::Subset {
            subset: "only".into(),
            uid: None,
            write: None
        }
    );
}

#[test]
fn scenario_21_each_version_has_its_own_list() {
    let t = now();
    let mut rolling = ws(json!({"versionedSubsetStatuses": {"v1": [
        {"name": "a", "replicas": 2, "missingReplicas": 0}, {"name": "c", "replicas": 2, "missingReplicas": -1}]}}));
    rolling.spec.subsets =
        serde_json::from_value(json!([{"name": "a", "maxReplicas": 2}, {"name": "c"}])).unwrap();
    let mut p = placing("web-v2-x", &t);
    p.version = "v2";
    let choice = choose(&rolling, p).unwrap();
    let lists = list_of(&choice);
    assert_eq!(
        lists["v2"],
        json!([{"name": "a", "replicas": 0, "missingReplicas": 1, "creatingPods": {"web-v2-x": NOW}},
               {"name": "c", "replicas": 0, "missingReplicas": -1}])
    );
    assert_eq!(lists["v1"][0]["missingReplicas"], 0);
}

#[test]
fn scenario_22_statefulset_ordinals() {
    let mut db = ws(json!(null));
    db.spec.target_ref = serde_json::from_value(
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"}),
    )
    .unwrap();
    db.spec.subsets = serde_json::from_value(
        json!([{"name": "a", "maxReplicas": 3}, {"name": "b", "maxReplicas": 2}, {"name": "c"}]),
    )
    .unwrap();
    let t = now();
    let subset_of = |ws: &WorkloadSpread, name: &str| match choose(ws, placing(name, &t)).unwrap() {
        Choice::Subset {
            subset,
            write: None,
            ..
        } => subset,
        other => panic!("{other:?}"),
    };
    assert_eq!(subset_of(&db, "db-2"), "a");
    assert_eq!(subset_of(&db, "db-4"), "b");
    assert_eq!(subset_of(&db, "db-7"), "c");
    db.status = serde_json::from_value(json!({"subsetStatuses": [{"name": "a", "replicas": 0, "missingReplicas": 0,
        "conditions": [{"type": "Schedulable", "status": "False", "reason": "PodUnschedulable", "message": "",
                        "lastTransitionTime": "2024-12-31T23:00:00Z"}]}]})).unwrap();
    assert_eq!(subset_of(&db, "db-1"), "b");
    assert_eq!(subset_of(&db, "db-2"), "c");
}

#[test]
fn malformed_percentages_are_errors_with_openkruise_texts() {
    let pct = |s: &str| IntOrString::String(s.into());
    assert_eq!(scaled(&pct("33%"), 10), Ok(4));
    assert_eq!(scaled(&IntOrString::Int(5), 10), Ok(5));
    assert_eq!(
        scaled(&pct("abc%"), 10),
        Err("subset replicas (abc%) should be correct percentage integer: strconv.ParseInt: parsing \"abc\": invalid syntax".into())
    );
    assert_eq!(
        scaled(&pct("30"), 10),
        Err(
            "subset replicas (30) only support integer value or percentage value with a suffix '%'"
                .into()
        )
    );
    assert_eq!(
        scaled(&pct("130%"), 10),
        Err("subset replicas (130%) should be in range [0, 100]".into())
    );
    assert_eq!(
        scaled(&IntOrString::Int(-1), 10),
        Err("subsetReplicas (-1) should not be less than 0".into())
    );
    let mut bad = ws(json!(null));
    bad.spec.subsets =
        serde_json::from_value(json!([{"name": "a", "maxReplicas": "x%"}, {"name": "b"}])).unwrap();
    let t = now();
    let err = choose(&bad, placing("p", &t)).unwrap_err();
    assert!(
        err.starts_with("WorkloadSpread ns/ws subset a: subset replicas (x%)"),
        "{err}"
    );
}

#[test]
fn find_honours_order_deletion_and_target_filters() {
    use crate::workloadspread::workload::{ChainEnd, Link};
    let chain = OwnerChain {
        links: vec![Link {
            api_version: "apps.kruise.io/v1alpha1".into(),
            kind: "CloneSet".into(),
            name: "cs".into(),
        }],
        end: ChainEnd::Top,
    };
    let kinds = WorkloadKinds { custom: &[] };
    let labels = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let mut filtered = ws(json!(null));
    filtered.spec.target_filter =
        serde_json::from_value(json!({"selector": {"matchLabels": {"role": "worker"}}})).unwrap();
    let spreads = vec![Arc::new(filtered.clone())];
    assert!(
        find(&spreads, &chain, kinds, &labels(&[("role", "ps")]))
            .unwrap()
            .is_none()
    );
    assert!(
        find(&spreads, &chain, kinds, &labels(&[("role", "worker")]))
            .unwrap()
            .is_some()
    );
    // Scenario 20: a filter without selector selects nothing.
    filtered.spec.target_filter =
        serde_json::from_value(json!({"replicasPathList": ["spec.replicas"]})).unwrap();
    assert!(
        find(&[Arc::new(filtered.clone())], &chain, kinds, &labels(&[]))
            .unwrap()
            .is_none()
    );
    // A selector that does not convert: the WorkloadSpread is ignored.
    filtered.spec.target_filter = serde_json::from_value(
        json!({"selector": {"matchExpressions": [{"key": "role", "operator": "In"}]}}),
    )
    .unwrap();
    assert!(
        find(
            &[Arc::new(filtered)],
            &chain,
            kinds,
            &labels(&[("role", "x")])
        )
        .unwrap()
        .is_none()
    );
    let mut deleting = ws(json!(null));
    deleting.metadata.deletion_timestamp = Some(now());
    assert!(
        find(&[Arc::new(deleting)], &chain, kinds, &labels(&[]))
            .unwrap()
            .is_none()
    );
}

#[test]
fn a_pod_without_name_or_generated_uid_is_refused_not_placed_unrecorded() {
    let t = now();
    let mut p = placing("", &t);
    p.generated_uid = "";
    assert!(choose(&ws(json!(null)), p).is_err());
}

#[test]
fn may_match_says_whether_any_spread_can_manage_the_chain_whatever_the_labels() {
    use crate::workloadspread::workload::{ChainEnd, Link};
    let spread = |kind: &str, name: &str, deleting: bool| -> Arc<WorkloadSpread> {
        let mut ws = json!({"metadata": {"name": format!("ws-{name}"), "namespace": "ns"},
            "spec": {"targetRef": {"apiVersion": if kind == "CloneSet" { "apps.kruise.io/v1alpha1" } else { "apps/v1" },
                "kind": kind, "name": name},
                "targetFilter": {"selector": {"matchLabels": {"never": "matched"}}},
                "subsets": [{"name": "a"}]}});
        if deleting {
            ws["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        }
        Arc::new(serde_json::from_value(ws).unwrap())
    };
    let kinds = WorkloadKinds { custom: &[] };
    let link = |api_version: &str, kind: &str, name: &str| Link {
        api_version: api_version.into(),
        kind: kind.into(),
        name: name.into(),
    };
    // A pod of ReplicaSet web-1 of Deployment web.
    let whole = OwnerChain {
        links: vec![
            link("apps/v1", "ReplicaSet", "web-1"),
            link("apps/v1", "Deployment", "web"),
        ],
        end: ChainEnd::Top,
    };
    assert!(may_match(
        &[spread("Deployment", "web", false)],
        &whole,
        kinds
    ));
    assert!(!may_match(
        &[spread("Deployment", "web", true)],
        &whole,
        kinds
    ));
    assert!(!may_match(
        &[
            spread("CloneSet", "api", false),
            spread("Deployment", "other", false)
        ],
        &whole,
        kinds
    ));
    // Its ReplicaSet is missing: a Deployment could own the pod through it (find fails on it), a CloneSet not.
    let missing = OwnerChain {
        links: vec![link("apps/v1", "ReplicaSet", "web-1")],
        end: ChainEnd::NotFound("replicasets.apps \"web-1\" not found".into()),
    };
    assert!(may_match(
        &[spread("Deployment", "web", false)],
        &missing,
        kinds
    ));
    assert!(!may_match(
        &[spread("CloneSet", "api", false)],
        &missing,
        kinds
    ));
    let labels = BTreeMap::new();
    assert!(
        find(
            &[spread("CloneSet", "api", false)],
            &missing,
            kinds,
            &labels
        )
        .unwrap()
        .is_none()
    );
    assert!(
        find(
            &[spread("Deployment", "web", false)],
            &missing,
            kinds,
            &labels
        )
        .is_err()
    );
}
