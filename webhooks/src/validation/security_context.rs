//! The container `securityContext`, as `ValidateSecurityContext` of `k8s.io/kubernetes/pkg/apis/core/validation`
//! (v1.32) checks it for a pod without a pod-level security context (`hostUsers` true) on a cluster that allows
//! privileged containers (kruise-manager's `--allow-privileged` defaults to true): runAsUser and runAsGroup in
//! 0..=2147483647, procMount `Default`/`Unmasked` and `Unmasked` refused (host users), seccompProfile and
//! appArmorProfile type and localhostProfile rules, `allowPrivilegeEscalation: false` with `privileged: true`
//! or with `capabilities.add` CAP_SYS_ADMIN.
//!
//! Not implemented: `windowsOptions` (and the Windows hostProcess pod rules). A value Go prints with `%#v`
//! holding pointers (the whole securityContext, a seccomp profile) is rendered with a placeholder address.

use serde::Deserialize;
use serde_json::Value;

use super::field_error::{BadValue, FieldError, FieldPath, go_quote};
use super::volumes::validate_local_descending_path;
use crate::de::nullable;

/// `SecurityContext` (container level); `seLinuxOptions` and `windowsOptions` are only kept for rendering.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SecurityContext {
    #[serde(default)]
    capabilities: Option<Capabilities>,
    #[serde(default)]
    pub(super) privileged: Option<bool>,
    #[serde(default)]
    se_linux_options: Option<Value>,
    #[serde(default)]
    windows_options: Option<Value>,
    #[serde(default)]
    run_as_user: Option<i64>,
    #[serde(default)]
    run_as_group: Option<i64>,
    #[serde(default)]
    run_as_non_root: Option<bool>,
    #[serde(default)]
    read_only_root_filesystem: Option<bool>,
    #[serde(default)]
    allow_privilege_escalation: Option<bool>,
    #[serde(default)]
    proc_mount: Option<String>,
    #[serde(default)]
    seccomp_profile: Option<Profile>,
    #[serde(default)]
    app_armor_profile: Option<Profile>,
}

#[derive(Debug, Default, Deserialize)]
struct Capabilities {
    #[serde(default, deserialize_with = "nullable")]
    add: Vec<String>,
}

/// `SeccompProfile` and `AppArmorProfile` have the same shape.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Profile {
    #[serde(default, rename = "type", deserialize_with = "nullable")]
    kind: String,
    #[serde(default)]
    localhost_profile: Option<String>,
}

/// `validation.InclusiveRangeError(0, math.MaxInt32)` of `IsValidUserID` / `IsValidGroupID`.
const ID_RANGE_ERROR: &str = "must be between 0 and 2147483647, inclusive";

/// `ValidateSecurityContext` for the fake pod: `hostUsers` is true (no pod security context) and privileged
/// containers are allowed (kruise-manager's `--allow-privileged` defaults to true). `windowsOptions` is not
/// checked.
pub(super) fn validate_security_context(
    sc: &SecurityContext,
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) {
    for (id, field) in [
        (sc.run_as_user, "runAsUser"),
        (sc.run_as_group, "runAsGroup"),
    ] {
        if let Some(id) = id
            && !(0..=i64::from(i32::MAX)).contains(&id)
        {
            errs.push(FieldError::invalid(
                &path.child(field),
                BadValue::Int(id),
                ID_RANGE_ERROR,
            ));
        }
    }
    if let Some(proc_mount) = &sc.proc_mount {
        let pp = path.child("procMount");
        if proc_mount != "Default" && proc_mount != "Unmasked" {
            errs.push(FieldError::not_supported(
                &pp,
                BadValue::str(proc_mount),
                &["Default", "Unmasked"],
            ));
        }
        if proc_mount == "Unmasked" {
            errs.push(FieldError::invalid(
                &pp,
                BadValue::str(proc_mount),
                "`hostUsers` must be false to use `Unmasked`",
            ));
        }
    }
    if let Some(profile) = &sc.seccomp_profile {
        validate_seccomp_profile(profile, &path.child("seccompProfile"), errs);
    }
    if sc.allow_privilege_escalation == Some(false) {
        if sc.privileged == Some(true) {
            errs.push(FieldError::invalid(
                path,
                BadValue::Raw(render_security_context(sc)),
                "cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
            ));
        }
        if let Some(caps) = &sc.capabilities {
            for cap in &caps.add {
                if cap == "CAP_SYS_ADMIN" {
                    errs.push(FieldError::invalid(
                        path,
                        BadValue::Raw(render_security_context(sc)),
                        "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
                    ));
                }
            }
        }
    }
    if let Some(profile) = &sc.app_armor_profile {
        validate_app_armor_profile(profile, &path.child("appArmorProfile"), errs);
    }
}

const PROFILE_TYPES: &[&str] = &["Localhost", "RuntimeDefault", "Unconfined"];

/// `validateSeccompProfileField`.
fn validate_seccomp_profile(sp: &Profile, path: &FieldPath, errs: &mut Vec<FieldError>) {
    match sp.kind.as_str() {
        "Localhost" | "RuntimeDefault" | "Unconfined" => {}
        "" => errs.push(FieldError::required(
            &path.child("type"),
            "type is required when seccompProfile is set",
        )),
        other => errs.push(FieldError::not_supported(
            &path.child("type"),
            BadValue::str(other),
            PROFILE_TYPES,
        )),
    }
    let lp = path.child("localhostProfile");
    if sp.kind == "Localhost" {
        match &sp.localhost_profile {
            None => errs.push(FieldError::required(
                &lp,
                "must be set when seccomp type is Localhost",
            )),
            Some(profile) => validate_local_descending_path(profile, &lp, errs),
        }
    } else if sp.localhost_profile.is_some() {
        let rendered = format!(
            "core.SeccompProfile{{Type:{}, LocalhostProfile:{}}}",
            go_quote(&sp.kind),
            go_pointer("string", true)
        );
        errs.push(FieldError::invalid(
            &lp,
            BadValue::Raw(rendered),
            "can only be set when seccomp type is Localhost",
        ));
    }
}

/// `ValidateAppArmorProfileField`.
fn validate_app_armor_profile(profile: &Profile, path: &FieldPath, errs: &mut Vec<FieldError>) {
    let lp = path.child("localhostProfile");
    match profile.kind.as_str() {
        "Localhost" => match &profile.localhost_profile {
            None => errs.push(FieldError::required(
                &lp,
                "must be set when AppArmor type is Localhost",
            )),
            Some(local) => {
                let trimmed = local.trim();
                if trimmed != local {
                    errs.push(FieldError::invalid(
                        &lp,
                        BadValue::str(local),
                        "must not be padded with whitespace",
                    ));
                } else if trimmed.is_empty() {
                    errs.push(FieldError::required(
                        &lp,
                        "must be set when AppArmor type is Localhost",
                    ));
                }
                if local.len() > 4095 {
                    errs.push(FieldError::too_long(&lp, 4095));
                }
            }
        },
        "RuntimeDefault" | "Unconfined" => {
            if let Some(local) = &profile.localhost_profile {
                errs.push(FieldError::invalid(
                    &lp,
                    BadValue::str(local),
                    "can only be set when AppArmor type is Localhost",
                ));
            }
        }
        "" => errs.push(FieldError::required(
            &path.child("type"),
            "type is required when appArmorProfile is set",
        )),
        other => errs.push(FieldError::not_supported(
            &path.child("type"),
            BadValue::str(other),
            PROFILE_TYPES,
        )),
    }
}

/// A Go pointer as `%#v` prints it. A set pointer prints its address, which cannot be reproduced; a fixed
/// placeholder stands for it.
fn go_pointer(ty: &str, set: bool) -> String {
    if set {
        format!("(*{ty})(0xc000000000)")
    } else {
        format!("(*{ty})(nil)")
    }
}

/// `%#v` of a `core.SecurityContext` (best effort: pointers cannot be printed as Go does).
fn render_security_context(sc: &SecurityContext) -> String {
    let fields = [
        (
            "Capabilities",
            "core.Capabilities",
            sc.capabilities.is_some(),
        ),
        ("Privileged", "bool", sc.privileged.is_some()),
        (
            "SELinuxOptions",
            "core.SELinuxOptions",
            sc.se_linux_options.is_some(),
        ),
        (
            "WindowsOptions",
            "core.WindowsSecurityContextOptions",
            sc.windows_options.is_some(),
        ),
        ("RunAsUser", "int64", sc.run_as_user.is_some()),
        ("RunAsGroup", "int64", sc.run_as_group.is_some()),
        ("RunAsNonRoot", "bool", sc.run_as_non_root.is_some()),
        (
            "ReadOnlyRootFilesystem",
            "bool",
            sc.read_only_root_filesystem.is_some(),
        ),
        (
            "AllowPrivilegeEscalation",
            "bool",
            sc.allow_privilege_escalation.is_some(),
        ),
        ("ProcMount", "core.ProcMountType", sc.proc_mount.is_some()),
        (
            "SeccompProfile",
            "core.SeccompProfile",
            sc.seccomp_profile.is_some(),
        ),
        (
            "AppArmorProfile",
            "core.AppArmorProfile",
            sc.app_armor_profile.is_some(),
        ),
    ];
    let body: Vec<String> = fields
        .iter()
        .map(|(name, ty, set)| format!("{name}:{}", go_pointer(ty, *set)))
        .collect();
    format!("core.SecurityContext{{{}}}", body.join(", "))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::validation::testing::{c, check, details, with};

    #[test]
    fn container_security_context_rules() {
        let a = with(
            c("a"),
            json!({"securityContext": {"privileged": true, "allowPrivilegeEscalation": false,
                "runAsUser": -1, "runAsGroup": 2_147_483_648_i64, "procMount": "Weird",
                "capabilities": {"add": ["CAP_SYS_ADMIN"]}}}),
        );
        let b = with(
            c("b"),
            json!({"securityContext": {"procMount": "Unmasked", "seccompProfile": {"type": "Localhost"},
                "appArmorProfile": {"type": "Localhost", "localhostProfile": " padded"}}}),
        );
        let d = with(
            c("d"),
            json!({"securityContext": {"seccompProfile": {"type": "RuntimeDefault", "localhostProfile": "x"},
                "appArmorProfile": {"type": "Unconfined", "localhostProfile": "p"}}}),
        );
        let e = with(
            c("e"),
            json!({"securityContext": {"seccompProfile": {}, "appArmorProfile": {"type": "Bogus"}}}),
        );
        let f = with(
            c("f"),
            json!({"securityContext": {"seccompProfile": {"type": "Localhost", "localhostProfile": "/abs/../x"},
                "appArmorProfile": {}}}),
        );
        assert_eq!(
            details(json!([]), json!([a, b, d, e, f]), json!([])),
            [
                "spec.containers[0].securityContext.runAsUser: must be between 0 and 2147483647, inclusive",
                "spec.containers[0].securityContext.runAsGroup: must be between 0 and 2147483647, inclusive",
                "spec.containers[0].securityContext.procMount: supported values: \"Default\", \"Unmasked\"",
                "spec.containers[0].securityContext: cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
                "spec.containers[0].securityContext: cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
                "spec.containers[1].securityContext.procMount: `hostUsers` must be false to use `Unmasked`",
                "spec.containers[1].securityContext.seccompProfile.localhostProfile: must be set when seccomp type is Localhost",
                "spec.containers[1].securityContext.appArmorProfile.localhostProfile: must not be padded with whitespace",
                "spec.containers[2].securityContext.seccompProfile.localhostProfile: can only be set when seccomp type is Localhost",
                "spec.containers[2].securityContext.appArmorProfile.localhostProfile: can only be set when AppArmor type is Localhost",
                "spec.containers[3].securityContext.seccompProfile.type: type is required when seccompProfile is set",
                "spec.containers[3].securityContext.appArmorProfile.type: supported values: \"Localhost\", \"RuntimeDefault\", \"Unconfined\"",
                "spec.containers[4].securityContext.seccompProfile.localhostProfile: must be a relative path",
                "spec.containers[4].securityContext.seccompProfile.localhostProfile: must not contain '..'",
                "spec.containers[4].securityContext.appArmorProfile.type: type is required when appArmorProfile is set",
            ]
        );
        let full = check(
            json!([]),
            json!([with(
                c("g"),
                json!({"securityContext": {"runAsUser": -1, "procMount": "Unmasked", "seccompProfile": {"type": "Bogus"}}})
            )]),
            json!([]),
        );
        assert_eq!(
            full,
            [
                "spec.containers[0].securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive",
                "spec.containers[0].securityContext.procMount: Invalid value: \"Unmasked\": `hostUsers` must be false to use `Unmasked`",
                "spec.containers[0].securityContext.seccompProfile.type: Unsupported value: \"Bogus\": supported values: \"Localhost\", \"RuntimeDefault\", \"Unconfined\"",
            ]
        );
        let escalation = check(
            json!([]),
            json!([with(
                c("h"),
                json!({"securityContext": {"privileged": true, "allowPrivilegeEscalation": false}})
            )]),
            json!([]),
        );
        assert_eq!(escalation.len(), 1);
        assert!(
            escalation[0].starts_with("spec.containers[0].securityContext: Invalid value: core.SecurityContext{Capabilities:(*core.Capabilities)(nil), Privileged:(*bool)(0x")
                && escalation[0].ends_with("}: cannot set `allowPrivilegeEscalation` to false and `privileged` to true"),
            "{escalation:?}"
        );
    }
}
