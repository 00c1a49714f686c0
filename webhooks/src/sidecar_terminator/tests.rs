//! Expected values are written by hand from spec/sidecar-terminator.md.

use super::*;
use serde_json::json;

const UID: &str = "0b1c2d3e-1111-2222-3333-444455556666";

fn now() -> Timestamp {
    "2026-03-01T10:00:00Z".parse().unwrap()
}

fn env(pairs: &[(&str, &str)]) -> Value {
    Value::Array(
        pairs
            .iter()
            .map(|(k, v)| json!({"name": k, "value": v}))
            .collect(),
    )
}

/// A container: name and env pairs.
fn c(name: &str, envs: &[(&str, &str)]) -> Value {
    json!({"name": name, "image": format!("{name}:1"), "env": env(envs)})
}

fn running(name: &str) -> Value {
    json!({"name": name, "state": {"running": {"startedAt": "2026-03-01T09:00:00Z"}}})
}

fn exited(name: &str, code: i32) -> Value {
    json!({"name": name, "state": {"terminated": {"exitCode": code}}})
}

fn pod_with(policy: &str, phase: &str, containers: Vec<Value>, statuses: Vec<Value>) -> SlimPod {
    serde_json::from_value(json!({
        "metadata": {"name": "pi-7xk2p", "namespace": "jobs", "uid": UID},
        "spec": {"nodeName": "node-1", "restartPolicy": policy, "containers": containers},
        "status": {"phase": phase, "containerStatuses": statuses}
    }))
    .unwrap()
}

const SIDECAR: &[(&str, &str)] = &[("KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT", "true")];

/// The common setup of §10: `main` and `sidecar`, Never, Running.
fn common(main: Value, sidecar: Value) -> SlimPod {
    pod_with(
        "Never",
        "Running",
        vec![c("main", &[]), c("sidecar", SIDECAR)],
        vec![main, sidecar],
    )
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

fn observed(vk: bool) -> Observed {
    Observed {
        virtual_kubelet: vk,
        normal_crr: CrrState::Missing,
        ignore_exit_code_crr: CrrState::Missing,
        now: now(),
    }
}

#[test]
fn scenario_1_main_still_running_does_not_qualify() {
    let pod = common(running("main"), running("sidecar"));
    assert_eq!(qualify(&pod), Err(NotQualifying::MainsRunning));
}

#[test]
fn scenarios_2_3_never_qualifies_once_main_terminated_whatever_the_code() {
    for code in [0, 1] {
        let pod = common(exited("main", code), running("sidecar"));
        assert_eq!(qualify(&pod), Ok(RestartPolicy::Never), "exit {code}");
        assert_eq!(
            plan(&pod, &observed(false)).actions,
            vec![Action::CreateCrr {
                set: KillSet::Normal,
                containers: names(&["sidecar"])
            }]
        );
    }
}

#[test]
fn scenarios_4_5_on_failure_needs_main_succeeded() {
    let containers = vec![c("main", &[]), c("sidecar", SIDECAR)];
    let failed = pod_with(
        "OnFailure",
        "Running",
        containers.clone(),
        vec![exited("main", 1), running("sidecar")],
    );
    assert_eq!(qualify(&failed), Err(NotQualifying::MainsRunning));
    let succeeded = pod_with(
        "OnFailure",
        "Running",
        containers,
        vec![exited("main", 0), running("sidecar")],
    );
    assert_eq!(qualify(&succeeded), Ok(RestartPolicy::OnFailure));
}

#[test]
fn scenario_6_not_qualifying() {
    let done = |policy: &str, phase: &str| {
        pod_with(
            policy,
            phase,
            vec![c("main", &[]), c("sidecar", SIDECAR)],
            vec![exited("main", 0), running("sidecar")],
        )
    };
    assert_eq!(
        qualify(&done("Always", "Running")),
        Err(NotQualifying::Restarting("Always".into()))
    );
    assert_eq!(
        qualify(&done("", "Running")),
        Err(NotQualifying::Restarting(String::new()))
    );
    assert_eq!(
        qualify(&done("Never", "Pending")),
        Err(NotQualifying::Pending)
    );
    let mut deleting = done("Never", "Running");
    deleting.metadata.deletion_timestamp = Some(Time(now()));
    assert_eq!(qualify(&deleting), Err(NotQualifying::Deleting));
    let sidecar_done = common(exited("main", 0), exited("sidecar", 0));
    assert_eq!(qualify(&sidecar_done), Err(NotQualifying::SidecarsDone));
    let one_status = pod_with(
        "Never",
        "Running",
        vec![c("main", &[]), c("sidecar", SIDECAR)],
        vec![exited("main", 0)],
    );
    assert_eq!(
        qualify(&one_status),
        Err(NotQualifying::StatusesIncomplete {
            containers: 2,
            statuses: 1
        })
    );
    let no_env = pod_with(
        "Never",
        "Running",
        vec![c("main", &[]), c("sidecar", &[])],
        vec![exited("main", 0), running("sidecar")],
    );
    assert_eq!(qualify(&no_env), Err(NotQualifying::NoSidecar));
}

#[test]
fn a_pod_still_qualifies_after_its_phase_turned_terminal() {
    let pod = pod_with(
        "Never",
        "Succeeded",
        vec![c("main", &[]), c("sidecar", SIDECAR)],
        vec![exited("main", 0), running("sidecar")],
    );
    assert_eq!(qualify(&pod), Ok(RestartPolicy::Never));
}

#[test]
fn scenario_8_only_uncompleted_sidecars_are_listed() {
    let pod = pod_with(
        "OnFailure",
        "Running",
        vec![
            c("main-1", &[]),
            c("main-2", &[]),
            c("sidecar-1", SIDECAR),
            c("sidecar-2", SIDECAR),
        ],
        vec![
            exited("main-1", 0),
            exited("main-2", 0),
            exited("sidecar-1", 0),
            running("sidecar-2"),
        ],
    );
    assert!(qualify(&pod).is_ok());
    assert_eq!(
        plan(&pod, &observed(false)).actions,
        vec![Action::CreateCrr {
            set: KillSet::Normal,
            containers: names(&["sidecar-2"])
        }]
    );
}

#[test]
fn scenario_9_env_value_case() {
    for (value, sidecar) in [
        ("true", true),
        ("TRUE", true),
        ("True", true),
        ("yes", false),
        ("false", false),
        ("", false),
    ] {
        let pod = pod_with(
            "Never",
            "Running",
            vec![
                c("main", &[]),
                c(
                    "sidecar",
                    &[("KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT", value)],
                ),
            ],
            vec![exited("main", 0), running("sidecar")],
        );
        assert_eq!(qualify(&pod).is_ok(), sidecar, "{value:?}");
        if !sidecar {
            assert_eq!(qualify(&pod), Err(NotQualifying::NoSidecar));
        }
    }
}

#[test]
fn value_from_is_not_set() {
    let pod: SlimPod = serde_json::from_value(json!({
        "metadata": {"name": "p", "namespace": "jobs", "uid": UID},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main"},
            {"name": "sidecar", "env": [{"name": "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT",
                "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]}]},
        "status": {"phase": "Running", "containerStatuses": [exited("main", 0), running("sidecar")]}
    }))
    .unwrap();
    assert_eq!(qualify(&pod), Err(NotQualifying::NoSidecar));
}

#[test]
fn scenarios_10_11_ignore_exit_code_patches_the_phase_then_kills() {
    let ignore = &[
        ("KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT", "true"),
        ("KRUISE_TERMINATE_SIDECAR_IGNORE_EXIT_CODE", "true"),
    ];
    for (code, phase) in [(0, Phase::Succeeded), (2, Phase::Failed)] {
        let pod = pod_with(
            "Never",
            "Running",
            vec![c("main", &[]), c("sidecar", ignore)],
            vec![exited("main", code), running("sidecar")],
        );
        assert_eq!(
            plan(&pod, &observed(false)).actions,
            vec![
                Action::PatchPhase(phase),
                Action::CreateCrr {
                    set: KillSet::IgnoreExitCode,
                    containers: names(&["sidecar"])
                }
            ],
            "exit {code}"
        );
    }
}

#[test]
fn scenario_12_terminal_phase_is_not_patched_again() {
    let ignore = &[
        ("KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT", "true"),
        ("KRUISE_TERMINATE_SIDECAR_IGNORE_EXIT_CODE", "TRUE"),
    ];
    let pod = pod_with(
        "Never",
        "Succeeded",
        vec![c("main", &[]), c("sidecar", ignore)],
        vec![exited("main", 0), running("sidecar")],
    );
    assert_eq!(
        plan(&pod, &observed(false)).actions,
        vec![Action::CreateCrr {
            set: KillSet::IgnoreExitCode,
            containers: names(&["sidecar"])
        }]
    );
}

#[test]
fn scenario_13_mixed_sidecars_each_set_gets_its_own_crr() {
    let ignore = &[
        ("KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT", "true"),
        ("KRUISE_TERMINATE_SIDECAR_IGNORE_EXIT_CODE", "true"),
    ];
    let containers = vec![
        c("main", &[]),
        c("sidecar-1", SIDECAR),
        c("sidecar-2", SIDECAR),
        c("sidecar-3", ignore),
    ];
    let first = pod_with(
        "OnFailure",
        "Running",
        containers.clone(),
        vec![
            exited("main", 0),
            running("sidecar-1"),
            running("sidecar-2"),
            running("sidecar-3"),
        ],
    );
    assert_eq!(
        plan(&first, &observed(false)).actions,
        vec![Action::CreateCrr {
            set: KillSet::Normal,
            containers: names(&["sidecar-1", "sidecar-2"])
        }]
    );
    // Later: the normal CRR exists, its sidecars terminated. Upstream finds the name taken; our
    // ignore-exit-code set has its own CRR (DECISIONS 11).
    let later = pod_with(
        "OnFailure",
        "Running",
        containers,
        vec![
            exited("main", 0),
            exited("sidecar-1", 0),
            exited("sidecar-2", 0),
            running("sidecar-3"),
        ],
    );
    let mut seen = observed(false);
    seen.normal_crr = CrrState::Active;
    assert_eq!(
        plan(&later, &seen).actions,
        vec![
            Action::PatchPhase(Phase::Succeeded),
            Action::CreateCrr {
                set: KillSet::IgnoreExitCode,
                containers: names(&["sidecar-3"])
            }
        ]
    );
}

const EXIT_IMAGE: (&str, &str) = (
    "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE",
    "registry.example/exit:1",
);

#[test]
fn scenario_14_virtual_kubelet_replaces_the_image() {
    let pod = pod_with(
        "Never",
        "Running",
        vec![c("main", &[]), c("sidecar", &[SIDECAR[0], EXIT_IMAGE])],
        vec![exited("main", 1), running("sidecar")],
    );
    assert_eq!(
        plan(&pod, &observed(true)).actions,
        vec![Action::ReplaceImages(vec![(
            "sidecar".into(),
            "registry.example/exit:1".into()
        )])]
    );
}

#[test]
fn scenarios_15_16_the_env_that_does_not_fit_the_node_does_nothing() {
    let vk_without_image = common(exited("main", 0), running("sidecar"));
    assert_eq!(plan(&vk_without_image, &observed(true)), Plan::default());
    let ordinary_with_image_only = pod_with(
        "Never",
        "Running",
        vec![c("main", &[]), c("sidecar", &[EXIT_IMAGE])],
        vec![exited("main", 0), running("sidecar")],
    );
    assert!(
        qualify(&ordinary_with_image_only).is_ok(),
        "still a sidecar"
    );
    assert_eq!(
        plan(&ordinary_with_image_only, &observed(false)),
        Plan::default()
    );
}

#[test]
fn scenario_17_an_image_already_replaced_is_not_written_again() {
    let mut sidecar = c("sidecar", &[SIDECAR[0], EXIT_IMAGE]);
    sidecar["image"] = json!("registry.example/exit:1");
    let pod = pod_with(
        "Never",
        "Running",
        vec![c("main", &[]), sidecar],
        vec![exited("main", 1), running("sidecar")],
    );
    assert_eq!(plan(&pod, &observed(true)), Plan::default());
}

#[test]
fn scenario_19_only_the_running_vk_sidecar_is_replaced() {
    let s1 = c(
        "s1",
        &[(
            "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE",
            "exit:1",
        )],
    );
    let s2 = c(
        "s2",
        &[(
            "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE",
            "exit:2",
        )],
    );
    let pod = pod_with(
        "Never",
        "Running",
        vec![c("main", &[]), s1, s2],
        vec![exited("main", 0), exited("s1", 0), running("s2")],
    );
    assert_eq!(
        plan(&pod, &observed(true)).actions,
        vec![Action::ReplaceImages(vec![("s2".into(), "exit:2".into())])]
    );
}

#[test]
fn scenario_20_a_pod_of_sidecars_only_kills_them_at_once() {
    let pod = pod_with(
        "Never",
        "Running",
        vec![c("sidecar-1", SIDECAR), c("sidecar-2", SIDECAR)],
        vec![running("sidecar-1"), running("sidecar-2")],
    );
    assert!(qualify(&pod).is_ok());
    assert_eq!(
        plan(&pod, &observed(false)).actions,
        vec![Action::CreateCrr {
            set: KillSet::Normal,
            containers: names(&["sidecar-1", "sidecar-2"])
        }]
    );
}

#[test]
fn section_4_1_which_env_wins_where() {
    // (envs, ordinary node set, virtual-kubelet node set): hand-copied from the §4.1 table.
    let when = ("KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT", "true");
    let ignore = ("KRUISE_TERMINATE_SIDECAR_IGNORE_EXIT_CODE", "true");
    type Envs<'a> = Vec<(&'a str, &'a str)>;
    let rows: Vec<(Envs, &str, &str)> = vec![
        (vec![when], "normal", "none"),
        (vec![EXIT_IMAGE], "none", "in_place"),
        (vec![when, EXIT_IMAGE], "normal", "in_place"),
        (vec![EXIT_IMAGE, when], "normal", "in_place"),
        (vec![when, ignore], "ignore", "none"),
        (vec![EXIT_IMAGE, ignore], "none", "in_place"),
    ];
    let which = |sets: &ActionSets| {
        let s = names(&["s"]);
        if sets.normal == s {
            "normal"
        } else if sets.ignore_exit_code == s {
            "ignore"
        } else if sets.in_place == s {
            "in_place"
        } else {
            "none"
        }
    };
    for (envs, ordinary, vk) in rows {
        let pod = pod_with("Never", "Running", vec![c("m", &[]), c("s", &envs)], vec![]);
        assert_eq!(which(&action_sets(&pod, false)), ordinary, "{envs:?}");
        assert_eq!(which(&action_sets(&pod, true)), vk, "{envs:?}");
        assert_eq!(action_sets(&pod, true).mains, names(&["m"]));
    }
}

#[test]
fn existing_crrs_are_left_alone_while_active_or_being_deleted() {
    let pod = common(exited("main", 0), running("sidecar"));
    for state in [CrrState::Active, CrrState::Deleting] {
        let mut seen = observed(false);
        seen.normal_crr = state;
        assert_eq!(plan(&pod, &seen), Plan::default());
    }
}

#[test]
fn a_finished_crr_with_a_running_sidecar_is_retried_after_the_pause() {
    let pod = common(exited("main", 0), running("sidecar"));
    let mut seen = observed(false);
    seen.normal_crr = CrrState::Finished {
        uid: Some("crr-uid".into()),
        completed_at: Some("2026-03-01T09:59:50Z".parse().unwrap()),
    };
    assert_eq!(
        plan(&pod, &seen),
        Plan {
            actions: vec![],
            requeue_after: Some(SignedDuration::from_secs(20))
        }
    );
    seen.normal_crr = CrrState::Finished {
        uid: Some("crr-uid".into()),
        completed_at: Some("2026-03-01T09:59:30Z".parse().unwrap()),
    };
    assert_eq!(
        plan(&pod, &seen).actions,
        vec![Action::DeleteCrr {
            set: KillSet::Normal,
            uid: Some("crr-uid".into())
        }]
    );
    seen.normal_crr = CrrState::Finished {
        uid: None,
        completed_at: None,
    };
    assert_eq!(
        plan(&pod, &seen).actions,
        vec![Action::DeleteCrr {
            set: KillSet::Normal,
            uid: None
        }]
    );
}

#[test]
fn crr_state_reads_the_cached_object() {
    let crr = |status: Value, deleting: bool| -> ContainerRecreateRequest {
        let mut meta = json!({"name": "c", "uid": "u"});
        if deleting {
            meta["deletionTimestamp"] = json!("2026-03-01T09:00:00Z");
        }
        serde_json::from_value(
            json!({"metadata": meta, "spec": {"podName": "p"}, "status": status}),
        )
        .unwrap()
    };
    assert_eq!(CrrState::of(None), CrrState::Missing);
    assert_eq!(
        CrrState::of(Some(&crr(json!({"phase": "Recreating"}), false))),
        CrrState::Active
    );
    assert_eq!(
        CrrState::of(Some(&crr(json!({"phase": "Completed"}), true))),
        CrrState::Deleting
    );
    assert_eq!(
        CrrState::of(Some(&crr(
            json!({"phase": "Completed", "completionTime": "2026-03-01T09:00:00Z"}),
            false
        ))),
        CrrState::Finished {
            uid: Some("u".into()),
            completed_at: Some("2026-03-01T09:00:00Z".parse().unwrap())
        }
    );
    assert_eq!(
        CrrState::of(Some(&crr(
            json!({"phase": "Completed", "completionTime": "not a time"}),
            false
        ))),
        CrrState::Finished {
            uid: Some("u".into()),
            completed_at: None
        }
    );
}

#[test]
fn the_crr_is_the_spec_one_with_the_daemon_labels() {
    let pod = common(exited("main", 0), running("sidecar"));
    let crr = container_recreate_request(&pod, KillSet::Normal, &names(&["sidecar"])).unwrap();
    assert_eq!(
        serde_json::to_value(&crr).unwrap(),
        json!({
            "apiVersion": "apps.kruise.io/v1beta1",
            "kind": "ContainerRecreateRequest",
            "metadata": {
                "namespace": "jobs",
                "name": "sidecar-termination-0b1c2d3e-1111-2222-3333-444455556666",
                "labels": {
                    "crr.apps.kruise.io/active": "true",
                    "crr.apps.kruise.io/node-name": "node-1",
                    "crr.apps.kruise.io/pod-name": "pi-7xk2p",
                    "crr.apps.kruise.io/pod-uid": "0b1c2d3e-1111-2222-3333-444455556666"
                },
                "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "pi-7xk2p",
                    "uid": "0b1c2d3e-1111-2222-3333-444455556666", "controller": true,
                    "blockOwnerDeletion": true}]
            },
            "spec": {
                "podName": "pi-7xk2p",
                "containers": [{"name": "sidecar"}],
                "strategy": {"forceRecreate": true, "failurePolicy": "Ignore"}
            }
        })
    );
    let ignore =
        container_recreate_request(&pod, KillSet::IgnoreExitCode, &names(&["sidecar"])).unwrap();
    assert_eq!(
        ignore.metadata.name.as_deref(),
        Some("sidecar-termination-0b1c2d3e-1111-2222-3333-444455556666-ignore-exit-code")
    );
    let mut no_uid = pod;
    no_uid.metadata.uid = None;
    assert_eq!(
        container_recreate_request(&no_uid, KillSet::Normal, &names(&["sidecar"])),
        None
    );
}

#[test]
fn pod_of_crr_only_for_terminator_names() {
    let crr = |name: &str| -> ContainerRecreateRequest {
        serde_json::from_value(json!({"metadata": {"name": name, "namespace": "jobs"},
            "spec": {"podName": "pi-7xk2p"}}))
        .unwrap()
    };
    assert_eq!(
        pod_of_crr(&crr("sidecar-termination-u")),
        Some(("jobs", "pi-7xk2p"))
    );
    assert_eq!(pod_of_crr(&crr("restart-app")), None);
}

#[test]
fn status_patch_and_image_patch_bodies() {
    assert_eq!(
        status_patch(Phase::Failed, now()),
        json!({"status": {"phase": "Failed", "conditions": [{"type": "SidecarTerminated",
            "status": "True", "lastTransitionTime": "2026-03-01T10:00:00Z",
            "message": "Terminated by Sidecar Terminator"}]}})
    );
    assert_eq!(
        image_patch(&[
            ("s1".into(), "exit:1".into()),
            ("s2".into(), "exit:2".into())
        ]),
        json!({"spec": {"containers": [{"name": "s1", "image": "exit:1"},
            {"name": "s2", "image": "exit:2"}]}})
    );
}

#[test]
fn event_messages_render_the_names_as_go_does() {
    assert_eq!(
        event_message(&names(&["sidecar-1", "sidecar-2"]), Means::Crr),
        "Kruise SidecarTerminator is trying to terminate sidecar [sidecar-1 sidecar-2] using crr"
    );
    assert_eq!(
        event_message(&names(&["sidecar"]), Means::InPlaceUpdate),
        "Kruise SidecarTerminator is trying to terminate sidecar [sidecar] using in-place update"
    );
}

#[test]
fn bad_input_never_qualifies_and_never_panics() {
    let unknown = pod_with(
        "Sometimes",
        "Running",
        vec![c("main", &[]), c("sidecar", SIDECAR)],
        vec![exited("main", 0), running("sidecar")],
    );
    let err = qualify(&unknown).unwrap_err();
    assert_eq!(err, NotQualifying::UnknownRestartPolicy("Sometimes".into()));
    assert!(err.is_bad_input());
    // Two statuses for two containers, but both name `main`: no action on a guess.
    let doubled = pod_with(
        "Never",
        "Running",
        vec![c("main", &[]), c("sidecar", SIDECAR)],
        vec![exited("main", 0), exited("main", 0)],
    );
    assert_eq!(qualify(&doubled), Err(NotQualifying::StatusesMismatched));
    // A status naming no container.
    let stranger = pod_with(
        "Never",
        "Running",
        vec![c("main", &[]), c("sidecar", SIDECAR)],
        vec![exited("main", 0), running("other")],
    );
    assert_eq!(qualify(&stranger), Err(NotQualifying::StatusesMismatched));
    // No spec, no status, no metadata at all.
    let empty = SlimPod::default();
    assert_eq!(qualify(&empty), Err(NotQualifying::Pending));
    assert_eq!(plan(&empty, &observed(false)), Plan::default());
    let no_spec: SlimPod = serde_json::from_value(json!({"status": {"phase": "Running"}})).unwrap();
    assert_eq!(
        qualify(&no_spec),
        Err(NotQualifying::Restarting(String::new()))
    );
    // A status without a state, or a waiting one, is not terminated.
    let stateless = pod_with(
        "Never",
        "Running",
        vec![c("main", &[]), c("sidecar", SIDECAR)],
        vec![
            json!({"name": "main"}),
            json!({"name": "sidecar", "state": {"waiting": {}}}),
        ],
    );
    assert_eq!(qualify(&stateless), Err(NotQualifying::MainsRunning));
}

#[test]
fn scenario_21_the_gate_is_on_by_default_and_off_without_kruise_daemon() {
    use crate::features::FeatureGates;
    // DECISIONS 1: on by default (OpenKruise: off); §9: forced off when KruiseDaemon is off.
    assert!(FeatureGates::default().enabled(GATE));
    assert!(
        !FeatureGates::parse("SidecarTerminator=false")
            .unwrap()
            .enabled(GATE)
    );
    assert!(
        !FeatureGates::parse("KruiseDaemon=false")
            .unwrap()
            .enabled(GATE)
    );
    assert!(
        !FeatureGates::parse("KruiseDaemon=false,SidecarTerminator=true")
            .unwrap()
            .enabled(GATE)
    );
}
