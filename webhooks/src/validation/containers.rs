//! Containers and init containers, as `validateContainers`, `validateInitContainers` and
//! `validateContainerCommon` of `k8s.io/kubernetes/pkg/apis/core/validation` (v1.32) check them:
//!
//! - every container: name required / DNS-1123 label, image required, terminationMessagePolicy and
//!   imagePullPolicy required and supported; ports (name syntax and uniqueness, containerPort and hostPort
//!   1-65535, protocol TCP/UDP/SCTP, host port conflicts); env (names as env var names, the `valueFrom` source
//!   rules with the selectors of [`super::downward_api`], configMap/secret key refs); envFrom (prefix, exactly
//!   one source, names); volumeMounts (name required and `Not found`, mountPath required and unique, clashes
//!   with volumeDevices, relative subPath/subPathExpr without `..`, subPath and subPathExpr exclusive,
//!   `mountPropagation` values and Bidirectional only for privileged containers, `recursiveReadOnly` values,
//!   only with `readOnly` and without propagation); volumeDevices (`Not found`, PVC or ephemeral only,
//!   devicePath required / unique / no `..`, clashes with volumeMounts); then [`super::resources`],
//!   [`super::security_context`] and [`super::probes`];
//! - containers: unique names, `restartPolicy` forbidden; init containers: names unique across both lists,
//!   `restartPolicy` only `Always`, probes and lifecycle only with `restartPolicy: Always`, no resizePolicy.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use super::downward_api::{
    FieldRef, ResourceFieldRef, convert_pod_field_label, validate_object_field_selector,
    validate_resource_field_selector,
};
use super::field_error::{BadValue, FieldError, FieldPath, go_quote};
use super::probes::{Lifecycle, Probe, ProbeKind, validate_lifecycle, validate_probe};
use super::resources::{ResizePolicy, Resources, validate_resize_policy, validate_resources};
use super::security_context::{SecurityContext, validate_security_context};
use super::syntax::{
    PORT_NUM_ERROR, is_config_map_key, is_dns1123_label, is_dns1123_subdomain, is_env_var_name,
    is_valid_port_name, is_valid_port_num,
};
use super::volumes::{Volumes, has_backsteps, validate_local_descending_path};
use crate::WebhookError;
use crate::de::nullable;

/// The container fields pod validation reads; Go's zero values stand for absent fields.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PodContainer {
    #[serde(default, deserialize_with = "nullable")]
    name: String,
    #[serde(default, deserialize_with = "nullable")]
    pub(super) image: String,
    #[serde(default, deserialize_with = "nullable")]
    ports: Vec<Port>,
    #[serde(default, deserialize_with = "nullable")]
    env: Vec<Env>,
    #[serde(default, deserialize_with = "nullable")]
    env_from: Vec<EnvFrom>,
    #[serde(default, deserialize_with = "nullable")]
    volume_mounts: Vec<Mount>,
    #[serde(default, deserialize_with = "nullable")]
    volume_devices: Vec<Device>,
    #[serde(default, deserialize_with = "nullable")]
    resources: Resources,
    #[serde(default, deserialize_with = "nullable")]
    image_pull_policy: String,
    #[serde(default, deserialize_with = "nullable")]
    termination_message_policy: String,
    #[serde(default)]
    restart_policy: Option<String>,
    #[serde(default)]
    lifecycle: Option<Lifecycle>,
    #[serde(default)]
    liveness_probe: Option<Probe>,
    #[serde(default)]
    readiness_probe: Option<Probe>,
    #[serde(default)]
    startup_probe: Option<Probe>,
    #[serde(default, deserialize_with = "nullable")]
    resize_policy: Vec<ResizePolicy>,
    #[serde(default)]
    security_context: Option<SecurityContext>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Port {
    #[serde(default, deserialize_with = "nullable")]
    name: String,
    #[serde(default, deserialize_with = "nullable")]
    container_port: i32,
    #[serde(default, deserialize_with = "nullable")]
    host_port: i32,
    #[serde(default, rename = "hostIP", deserialize_with = "nullable")]
    host_ip: String,
    #[serde(default, deserialize_with = "nullable")]
    protocol: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Env {
    #[serde(default, deserialize_with = "nullable")]
    name: String,
    #[serde(default, deserialize_with = "nullable")]
    value: String,
    #[serde(default)]
    value_from: Option<EnvSource>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct EnvSource {
    #[serde(default)]
    field_ref: Option<FieldRef>,
    #[serde(default)]
    resource_field_ref: Option<ResourceFieldRef>,
    #[serde(default)]
    config_map_key_ref: Option<KeyRef>,
    #[serde(default)]
    secret_key_ref: Option<KeyRef>,
}

#[derive(Debug, Default, Deserialize)]
struct KeyRef {
    #[serde(default, deserialize_with = "nullable")]
    name: String,
    #[serde(default, deserialize_with = "nullable")]
    key: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct EnvFrom {
    #[serde(default, deserialize_with = "nullable")]
    prefix: String,
    #[serde(default)]
    config_map_ref: Option<NameRef>,
    #[serde(default)]
    secret_ref: Option<NameRef>,
}

/// A reference by name (`configMapRef`, `secretRef`, a resource claim).
#[derive(Debug, Default, Deserialize)]
pub(super) struct NameRef {
    #[serde(default, deserialize_with = "nullable")]
    pub(super) name: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Mount {
    #[serde(default, deserialize_with = "nullable")]
    name: String,
    #[serde(default, deserialize_with = "nullable")]
    mount_path: String,
    #[serde(default, deserialize_with = "nullable")]
    sub_path: String,
    #[serde(default, deserialize_with = "nullable")]
    sub_path_expr: String,
    #[serde(default, deserialize_with = "nullable")]
    read_only: bool,
    #[serde(default)]
    mount_propagation: Option<String>,
    #[serde(default)]
    recursive_read_only: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Device {
    #[serde(default, deserialize_with = "nullable")]
    name: String,
    #[serde(default, deserialize_with = "nullable")]
    device_path: String,
}

/// Env `fieldRef` paths Kubernetes accepts without a subscript (`validEnvDownwardAPIFieldPathExpressions`).
const ENV_FIELD_PATHS: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];

/// `validateContainers`: each container, unique names, no `restartPolicy`, host ports across the list.
pub(super) fn validate_containers(
    containers: &[PodContainer],
    volumes: &Volumes,
    grace_period: i64,
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Result<(), WebhookError> {
    let mut names = BTreeSet::new();
    for (i, c) in containers.iter().enumerate() {
        let p = path.index(i);
        validate_container_common(c, volumes, &p, errs)?;
        if !names.insert(c.name.as_str()) {
            errs.push(FieldError::duplicate(
                &p.child("name"),
                BadValue::str(&c.name),
            ));
        }
        validate_lifecycle_and_probes(c, grace_period, &p, errs)?;
        if c.restart_policy.is_some() {
            errs.push(FieldError::forbidden(
                &p.child("restartPolicy"),
                "may not be set for non-init containers",
            ));
        }
    }
    check_host_ports(containers.iter().enumerate(), path, errs);
    Ok(())
}

/// The lifecycle handlers and the liveness, readiness and startup probes of a container (or of a native
/// sidecar).
fn validate_lifecycle_and_probes(
    c: &PodContainer,
    grace_period: i64,
    p: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Result<(), WebhookError> {
    if let Some(lifecycle) = &c.lifecycle {
        validate_lifecycle(lifecycle, grace_period, &p.child("lifecycle"), errs)?;
    }
    for (probe, kind) in [
        (&c.liveness_probe, ProbeKind::Liveness),
        (&c.readiness_probe, ProbeKind::Readiness),
        (&c.startup_probe, ProbeKind::Startup),
    ] {
        validate_probe(probe.as_ref(), kind, grace_period, p, errs)?;
    }
    Ok(())
}

/// `validateInitContainers`: each init container, names unique across both lists, `restartPolicy` only
/// `Always` (a native sidecar, which alone may have probes and lifecycle), no resizePolicy.
pub(super) fn validate_init_containers(
    init: &[PodContainer],
    containers: &[PodContainer],
    volumes: &Volumes,
    grace_period: i64,
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Result<(), WebhookError> {
    let mut names: BTreeSet<&str> = containers.iter().map(|c| c.name.as_str()).collect();
    for (i, c) in init.iter().enumerate() {
        let p = path.index(i);
        validate_container_common(c, volumes, &p, errs)?;
        let mut restart_always = false;
        if let Some(policy) = &c.restart_policy {
            if policy != "Always" {
                errs.push(FieldError::not_supported(
                    &p.child("restartPolicy"),
                    BadValue::str(policy),
                    &["Always"],
                ));
            }
            restart_always = policy == "Always";
        }
        if names.contains(c.name.as_str()) {
            errs.push(FieldError::duplicate(
                &p.child("name"),
                BadValue::str(&c.name),
            ));
        } else if !c.name.is_empty() {
            names.insert(c.name.as_str());
        }
        // Go checks each init container's host ports on its own, with the list's path and index 0.
        check_host_ports(std::iter::once((0, c)), path, errs);
        if restart_always {
            validate_lifecycle_and_probes(c, grace_period, &p, errs)?;
        } else {
            let forbidden = "may not be set for init containers without restartPolicy=Always";
            for (set, field) in [
                (c.lifecycle.is_some(), "lifecycle"),
                (c.liveness_probe.is_some(), "livenessProbe"),
                (c.readiness_probe.is_some(), "readinessProbe"),
                (c.startup_probe.is_some(), "startupProbe"),
            ] {
                if set {
                    errs.push(FieldError::forbidden(&p.child(field), forbidden));
                }
            }
        }
        if !c.resize_policy.is_empty() {
            errs.push(FieldError::invalid(
                &p.child("resizePolicy"),
                BadValue::Raw(render_resize_policy(&c.resize_policy)),
                "must not be set for init containers",
            ));
        }
    }
    Ok(())
}

fn render_resize_policy(list: &[ResizePolicy]) -> String {
    let items: Vec<String> = list
        .iter()
        .map(|r| {
            format!(
                "core.ContainerResizePolicy{{ResourceName:{}, RestartPolicy:{}}}",
                go_quote(&r.resource_name),
                go_quote(&r.restart_policy)
            )
        })
        .collect();
    format!("[]core.ContainerResizePolicy{{{}}}", items.join(", "))
}

/// `validateContainerCommon`.
fn validate_container_common(
    c: &PodContainer,
    volumes: &Volumes,
    p: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Result<(), WebhookError> {
    let name_path = p.child("name");
    if c.name.is_empty() {
        errs.push(FieldError::required(&name_path, ""));
    } else {
        errs.extend(FieldError::invalid_each(
            &name_path,
            &c.name,
            is_dns1123_label(&c.name),
        ));
    }
    if c.image.is_empty() {
        errs.push(FieldError::required(&p.child("image"), ""));
    }
    errs.extend(FieldError::one_of(
        &p.child("terminationMessagePolicy"),
        &c.termination_message_policy,
        &["File", "FallbackToLogsOnError"],
    ));
    validate_ports(&c.ports, &p.child("ports"), errs);
    validate_env(&c.env, &p.child("env"), errs)?;
    validate_env_from(&c.env_from, &p.child("envFrom"), errs);
    validate_mounts(c, volumes, &p.child("volumeMounts"), errs);
    validate_devices(c, volumes, &p.child("volumeDevices"), errs);
    errs.extend(FieldError::one_of(
        &p.child("imagePullPolicy"),
        &c.image_pull_policy,
        &["Always", "IfNotPresent", "Never"],
    ));
    validate_resources(&c.resources, &p.child("resources"), errs)?;
    validate_resize_policy(&c.resize_policy, &p.child("resizePolicy"), errs);
    if let Some(sc) = &c.security_context {
        validate_security_context(sc, &p.child("securityContext"), errs);
    }
    Ok(())
}

fn validate_ports(ports: &[Port], path: &FieldPath, errs: &mut Vec<FieldError>) {
    let mut names = BTreeSet::new();
    for (i, port) in ports.iter().enumerate() {
        let p = path.index(i);
        if !port.name.is_empty() {
            let msgs = is_valid_port_name(&port.name);
            if !msgs.is_empty() {
                errs.extend(FieldError::invalid_each(&p.child("name"), &port.name, msgs));
            } else if !names.insert(port.name.as_str()) {
                errs.push(FieldError::duplicate(
                    &p.child("name"),
                    BadValue::str(&port.name),
                ));
            }
        }
        if port.container_port == 0 {
            errs.push(FieldError::required(&p.child("containerPort"), ""));
        } else if !is_valid_port_num(port.container_port) {
            errs.push(FieldError::invalid(
                &p.child("containerPort"),
                BadValue::Int(port.container_port.into()),
                PORT_NUM_ERROR,
            ));
        }
        if port.host_port != 0 && !is_valid_port_num(port.host_port) {
            errs.push(FieldError::invalid(
                &p.child("hostPort"),
                BadValue::Int(port.host_port.into()),
                PORT_NUM_ERROR,
            ));
        }
        errs.extend(FieldError::one_of(
            &p.child("protocol"),
            &port.protocol,
            &["SCTP", "TCP", "UDP"],
        ));
    }
}

/// `AccumulateUniqueHostPorts`.
fn check_host_ports<'a>(
    containers: impl Iterator<Item = (usize, &'a PodContainer)>,
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) {
    let mut seen = BTreeSet::new();
    for (ci, c) in containers {
        for (pi, port) in c.ports.iter().enumerate() {
            if port.host_port == 0 {
                continue;
            }
            let key = format!("{}/{}/{}", port.host_ip, port.protocol, port.host_port);
            if seen.contains(&key) {
                errs.push(FieldError::duplicate(
                    &path.index(ci).child("ports").index(pi).child("hostPort"),
                    BadValue::Str(key),
                ));
            } else {
                seen.insert(key);
            }
        }
    }
}

fn validate_key_ref(r: &KeyRef, path: &FieldPath, errs: &mut Vec<FieldError>) {
    errs.extend(FieldError::invalid_each(
        &path.child("name"),
        &r.name,
        is_dns1123_subdomain(&r.name),
    ));
    if r.key.is_empty() {
        errs.push(FieldError::required(&path.child("key"), ""));
    } else {
        errs.extend(FieldError::invalid_each(
            &path.child("key"),
            &r.key,
            is_config_map_key(&r.key),
        ));
    }
}

fn validate_env(
    env: &[Env],
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Result<(), WebhookError> {
    for (i, e) in env.iter().enumerate() {
        let p = path.index(i);
        if e.name.is_empty() {
            errs.push(FieldError::required(&p.child("name"), ""));
        } else {
            errs.extend(FieldError::invalid_each(
                &p.child("name"),
                &e.name,
                is_env_var_name(&e.name),
            ));
        }
        let Some(from) = &e.value_from else {
            continue;
        };
        let vp = p.child("valueFrom");
        let mut sources = 0;
        if let Some(fr) = &from.field_ref {
            sources += 1;
            validate_object_field_selector(
                fr,
                convert_pod_field_label,
                ENV_FIELD_PATHS,
                &vp.child("fieldRef"),
                errs,
            );
        }
        if let Some(r) = &from.resource_field_ref {
            sources += 1;
            validate_resource_field_selector(r, false, &vp.child("resourceFieldRef"), errs)?;
        }
        if let Some(r) = &from.config_map_key_ref {
            sources += 1;
            validate_key_ref(r, &vp.child("configMapKeyRef"), errs);
        }
        if let Some(r) = &from.secret_key_ref {
            sources += 1;
            validate_key_ref(r, &vp.child("secretKeyRef"), errs);
        }
        if sources == 0 {
            errs.push(FieldError::invalid(
                &vp,
                BadValue::str(""),
                "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
            ));
        } else if !e.value.is_empty() {
            errs.push(FieldError::invalid(
                &vp,
                BadValue::str(""),
                "may not be specified when `value` is not empty",
            ));
        } else if sources > 1 {
            errs.push(FieldError::invalid(
                &vp,
                BadValue::str(""),
                "may not have more than one field specified at a time",
            ));
        }
    }
    Ok(())
}

fn validate_env_from(list: &[EnvFrom], path: &FieldPath, errs: &mut Vec<FieldError>) {
    for (i, e) in list.iter().enumerate() {
        let p = path.index(i);
        if !e.prefix.is_empty() {
            errs.extend(FieldError::invalid_each(
                &p.child("prefix"),
                &e.prefix,
                is_env_var_name(&e.prefix),
            ));
        }
        let mut sources = 0;
        for (r, field) in [
            (&e.config_map_ref, "configMapRef"),
            (&e.secret_ref, "secretRef"),
        ] {
            let Some(r) = r else { continue };
            sources += 1;
            let np = p.child(field).child("name");
            if r.name.is_empty() {
                errs.push(FieldError::required(&np, ""));
            } else {
                // NameIsDNSSubdomain with prefix = true: a trailing '-' is allowed.
                let masked = match r.name.strip_suffix('-') {
                    Some(rest) => format!("{rest}a"),
                    None => r.name.clone(),
                };
                errs.extend(FieldError::invalid_each(
                    &np,
                    &r.name,
                    is_dns1123_subdomain(&masked),
                ));
            }
        }
        if sources == 0 {
            errs.push(FieldError::invalid(
                path,
                BadValue::str(""),
                "must specify one of: `configMapRef` or `secretRef`",
            ));
        } else if sources > 1 {
            errs.push(FieldError::invalid(
                path,
                BadValue::str(""),
                "may not have more than one field specified at a time",
            ));
        }
    }
}

fn validate_mounts(
    c: &PodContainer,
    volumes: &Volumes,
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) {
    let devices: BTreeMap<&str, &str> = c
        .volume_devices
        .iter()
        .map(|d| (d.name.as_str(), d.device_path.as_str()))
        .collect();
    let mut mount_points = BTreeSet::new();
    for (i, m) in c.volume_mounts.iter().enumerate() {
        let p = path.index(i);
        if m.name.is_empty() {
            errs.push(FieldError::required(&p.child("name"), ""));
        }
        if !volumes.contains_key(&m.name) {
            errs.push(FieldError::not_found(
                &p.child("name"),
                BadValue::str(&m.name),
            ));
        }
        if m.mount_path.is_empty() {
            errs.push(FieldError::required(&p.child("mountPath"), ""));
        }
        if !mount_points.insert(m.mount_path.as_str()) {
            errs.push(FieldError::invalid(
                &p.child("mountPath"),
                BadValue::str(&m.mount_path),
                "must be unique",
            ));
        }
        if devices.contains_key(m.name.as_str()) {
            errs.push(FieldError::invalid(
                &p.child("name"),
                BadValue::str(&m.name),
                "must not already exist in volumeDevices",
            ));
        }
        if devices.values().any(|d| *d == m.mount_path) {
            errs.push(FieldError::invalid(
                &p.child("mountPath"),
                BadValue::str(&m.mount_path),
                "must not already exist as a path in volumeDevices",
            ));
        }
        // Go passes the list path, not the item path, for these two (quirk kept).
        if !m.sub_path.is_empty() {
            validate_local_descending_path(&m.sub_path, &path.child("subPath"), errs);
        }
        if !m.sub_path_expr.is_empty() {
            if !m.sub_path.is_empty() {
                errs.push(FieldError::invalid(
                    &p.child("subPathExpr"),
                    BadValue::str(&m.sub_path_expr),
                    "subPathExpr and subPath are mutually exclusive",
                ));
            }
            validate_local_descending_path(&m.sub_path_expr, &path.child("subPathExpr"), errs);
        }
        // Go passes the list path for these two as well (quirk kept).
        if let Some(propagation) = &m.mount_propagation {
            validate_mount_propagation(propagation, c, &path.child("mountPropagation"), errs);
        }
        validate_recursive_read_only(m, &path.child("recursiveReadOnly"), errs);
    }
}

/// `validateMountPropagation`.
fn validate_mount_propagation(
    propagation: &str,
    c: &PodContainer,
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) {
    const SUPPORTED: &[&str] = &["Bidirectional", "HostToContainer", "None"];
    if !SUPPORTED.contains(&propagation) {
        errs.push(FieldError::not_supported(
            path,
            BadValue::str(propagation),
            SUPPORTED,
        ));
    }
    let privileged = c
        .security_context
        .as_ref()
        .and_then(|sc| sc.privileged)
        .unwrap_or(false);
    if propagation == "Bidirectional" && !privileged {
        errs.push(FieldError::forbidden(
            path,
            "Bidirectional mount propagation is available only to privileged containers",
        ));
    }
}

/// `validateMountRecursiveReadOnly`.
fn validate_recursive_read_only(m: &Mount, path: &FieldPath, errs: &mut Vec<FieldError>) {
    let Some(rro) = &m.recursive_read_only else {
        return;
    };
    match rro.as_str() {
        "Disabled" => {}
        "Enabled" | "IfPossible" => {
            if !m.read_only {
                errs.push(FieldError::forbidden(
                    path,
                    "may only be specified when readOnly is true",
                ));
            }
            if m.mount_propagation.as_deref().is_some_and(|p| p != "None") {
                errs.push(FieldError::forbidden(
                    path,
                    "may only be specified when mountPropagation is None or not specified",
                ));
            }
        }
        other => errs.push(FieldError::not_supported(
            path,
            BadValue::str(other),
            &["Disabled", "Enabled", "IfPossible"],
        )),
    }
}

fn validate_devices(
    c: &PodContainer,
    volumes: &Volumes,
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) {
    let mounts: BTreeMap<&str, &str> = c
        .volume_mounts
        .iter()
        .map(|m| (m.name.as_str(), m.mount_path.as_str()))
        .collect();
    let mut device_paths = BTreeSet::new();
    let mut device_names = BTreeSet::new();
    for (i, d) in c.volume_devices.iter().enumerate() {
        let p = path.index(i);
        let kind = volumes.get(&d.name);
        let is_pvc = matches!(kind, Some(&("persistentVolumeClaim" | "ephemeral")));
        if d.name.is_empty() {
            errs.push(FieldError::required(&p.child("name"), ""));
        }
        if device_names.contains(d.name.as_str()) {
            errs.push(FieldError::invalid(
                &p.child("name"),
                BadValue::str(&d.name),
                "must be unique",
            ));
        }
        if kind.is_some() && !is_pvc {
            errs.push(FieldError::invalid(
                &p.child("name"),
                BadValue::str(&d.name),
                "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode",
            ));
        }
        if kind.is_none() {
            errs.push(FieldError::not_found(
                &p.child("name"),
                BadValue::str(&d.name),
            ));
        }
        if d.device_path.is_empty() {
            errs.push(FieldError::required(&p.child("devicePath"), ""));
        }
        if device_paths.contains(d.device_path.as_str()) {
            errs.push(FieldError::invalid(
                &p.child("devicePath"),
                BadValue::str(&d.device_path),
                "must be unique",
            ));
        }
        if !d.device_path.is_empty() && has_backsteps(&d.device_path) {
            errs.push(FieldError::invalid(
                &p.child("devicePath"),
                BadValue::str(&d.device_path),
                "can not contain backsteps ('..')",
            ));
        } else {
            device_paths.insert(d.device_path.as_str());
        }
        if mounts.contains_key(d.name.as_str()) {
            errs.push(FieldError::invalid(
                &p.child("name"),
                BadValue::str(&d.name),
                "must not already exist in volumeMounts",
            ));
        }
        if mounts.values().any(|m| *m == d.device_path) {
            errs.push(FieldError::invalid(
                &p.child("devicePath"),
                BadValue::str(&d.device_path),
                "must not already exist as a path in volumeMounts",
            ));
        }
        device_names.insert(d.name.as_str());
    }
}

#[cfg(test)]
mod tests;
