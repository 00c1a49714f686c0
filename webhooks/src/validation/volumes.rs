//! Pod volumes, as `validateVolumes` and `validateVolumeSource` of `k8s.io/kubernetes/pkg/apis/core/validation`
//! (v1.32) check them, with Go's paths and texts:
//!
//! - name required / DNS-1123 label / unique; exactly one volume source, checked in Go's order
//!   (`must specify a volume type`, `may not specify more than 1 volume type`, with Go's `cephFS` and
//!   `downwarAPI` spellings); a volume with errors is not available to mounts (as in Go);
//! - required fields of hostPath (`path`, no `..`, `type` among the HostPathType values), secret
//!   (`secretName`), configMap (`name`), persistentVolumeClaim (`claimName`), nfs (`server`, absolute `path`),
//!   csi (`driver` required, at most 63 bytes, a DNS-1123 subdomain once lower-cased; `nodePublishSecretRef.name`);
//! - `defaultMode` of secret, configMap, downwardAPI and projected in 0..=0777; secret and configMap `items`
//!   (`validateKeyToPath`: key and path required, path relative, without `..` elements and not starting with
//!   `..`, `mode` in 0..=0777);
//! - downwardAPI items (path rules, exactly one of fieldRef (volume field paths) and resourceFieldRef
//!   (containerName required), `mode`; reported at the source's path without the item index, as Go does);
//! - projected sources (at most one source per entry, secret/configMap names and items, downwardAPI items,
//!   serviceAccountToken `expirationSeconds` in 600..=2^32 and its `path` (reported at `projected.path`),
//!   duplicate paths); a negative emptyDir `sizeLimit`.
//!
//! Not implemented: projected `clusterTrustBundle` contents (it only counts as a source), image volumes'
//! subPath rule, and the contents of volume sources other than those listed above beyond the one-source rule.
//!
//! The local-path rules (`validateLocalDescendingPath`, ...) live here too: mounts, devices and seccomp
//! profiles use them.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::decode::{as_object, decode_error, list, opt_int, opt_str, str_field};
use super::downward_api::{
    FieldRef, ResourceFieldRef, convert_pod_field_label, validate_object_field_selector,
    validate_resource_field_selector,
};
use super::field_error::{BadValue, FieldError, FieldPath};
use super::resources::quantity;
use super::syntax::{is_dns1123_label, is_dns1123_subdomain};
use crate::WebhookError;

/// Volume sources in the order Go's `validateVolumeSource` checks them (the second one found is reported),
/// with the child name Go's `may not specify more than 1 volume type` error uses (two of them misspelled).
const VOLUME_SOURCES: &[(&str, &str)] = &[
    ("emptyDir", "emptyDir"),
    ("hostPath", "hostPath"),
    ("gitRepo", "gitRepo"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("secret", "secret"),
    ("nfs", "nfs"),
    ("iscsi", "iscsi"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("persistentVolumeClaim", "persistentVolumeClaim"),
    ("rbd", "rbd"),
    ("cinder", "cinder"),
    ("cephfs", "cephFS"),
    ("quobyte", "quobyte"),
    ("downwardAPI", "downwarAPI"),
    ("fc", "fc"),
    ("flexVolume", "flexVolume"),
    ("configMap", "configMap"),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("storageos", "storageos"),
    ("projected", "projected"),
    ("scaleIO", "scaleIO"),
    ("csi", "csi"),
    ("ephemeral", "ephemeral"),
    ("image", "image"),
];

/// `supportedHostPathTypes`, sorted as `sets.List` prints them.
const HOST_PATH_TYPES: &[&str] = &[
    "",
    "BlockDevice",
    "CharDevice",
    "Directory",
    "DirectoryOrCreate",
    "File",
    "FileOrCreate",
    "Socket",
];

/// `validVolumeDownwardAPIFieldPathExpressions`, sorted.
const VOLUME_FIELD_PATHS: &[&str] = &[
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
];

/// `fileModeErrorMsg`.
const FILE_MODE_ERROR: &str = "must be a number between 0 and 0777 (octal), both inclusive";

/// The checked volumes: name → source kind, for mounts and devices (`vols` in Go).
pub(super) type Volumes = BTreeMap<String, &'static str>;

/// `validateVolumes`: each volume; returns the valid ones (name → source kind) for mounts and devices.
pub(super) fn validate_volumes(
    volumes: &[Value],
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Result<Volumes, WebhookError> {
    let mut valid = Volumes::new();
    let mut names = BTreeSet::new();
    for (i, volume) in volumes.iter().enumerate() {
        let p = path.index(i);
        let obj = as_object(volume, &p)?;
        let name = opt_str(obj, "name", &p)?.unwrap_or("");
        let (kind, mut el) = validate_volume_source(obj, &p)?;
        if name.is_empty() {
            el.push(FieldError::required(&p.child("name"), ""));
        } else {
            el.extend(FieldError::invalid_each(
                &p.child("name"),
                name,
                is_dns1123_label(name),
            ));
        }
        if names.contains(name) {
            el.push(FieldError::duplicate(&p.child("name"), BadValue::str(name)));
        }
        if el.is_empty() {
            names.insert(name.to_owned());
            valid.insert(name.to_owned(), kind.unwrap_or(""));
        } else {
            errs.extend(el);
        }
    }
    Ok(valid)
}

/// `validateVolumeSource` (the subset of the module docs): the source kind and the errors.
fn validate_volume_source(
    obj: &Map<String, Value>,
    path: &FieldPath,
) -> Result<(Option<&'static str>, Vec<FieldError>), WebhookError> {
    let mut errs = Vec::new();
    let mut kind = None;
    for (source, forbidden_name) in VOLUME_SOURCES {
        let Some(value) = obj.get(*source).filter(|v| !v.is_null()) else {
            continue;
        };
        if kind.is_some() {
            errs.push(FieldError::forbidden(
                &path.child(forbidden_name),
                "may not specify more than 1 volume type",
            ));
            continue;
        }
        kind = Some(*source);
        let Value::Object(src) = value else {
            return Err(WebhookError::Decode(format!(
                "decoding {path}.{source}: expected an object"
            )));
        };
        let sp = path.child(source);
        match *source {
            "hostPath" => {
                let p = str_field(src, "path");
                if p.is_empty() {
                    errs.push(FieldError::required(&sp.child("path"), ""));
                } else {
                    if has_backsteps(p) {
                        errs.push(FieldError::invalid(
                            &sp.child("path"),
                            BadValue::str(p),
                            "must not contain '..'",
                        ));
                    }
                    if let Some(t) = opt_str(src, "type", &sp)?
                        && !HOST_PATH_TYPES.contains(&t)
                    {
                        errs.push(FieldError::not_supported(
                            &sp.child("type"),
                            BadValue::str(t),
                            HOST_PATH_TYPES,
                        ));
                    }
                }
            }
            "emptyDir" => {
                if let Some(limit) = src.get("sizeLimit").filter(|v| !v.is_null()) {
                    let q = quantity(limit, &sp.child("sizeLimit"))?;
                    if q.negative() {
                        errs.push(FieldError::forbidden(
                            &sp.child("sizeLimit"),
                            "SizeLimit field must be a valid resource quantity",
                        ));
                    }
                }
            }
            "secret" | "configMap" => {
                let key = if *source == "secret" {
                    "secretName"
                } else {
                    "name"
                };
                if str_field(src, key).is_empty() {
                    errs.push(FieldError::required(&sp.child(key), ""));
                }
                validate_file_mode(src, "defaultMode", &sp, &mut errs)?;
                let items = sp.child("items");
                for (i, item) in list(src, "items", &sp)?.iter().enumerate() {
                    validate_key_to_path(item, &items.index(i), &mut errs)?;
                }
            }
            "persistentVolumeClaim" if str_field(src, "claimName").is_empty() => {
                errs.push(FieldError::required(&sp.child("claimName"), ""));
            }
            "nfs" => {
                if str_field(src, "server").is_empty() {
                    errs.push(FieldError::required(&sp.child("server"), ""));
                }
                let p = str_field(src, "path");
                if p.is_empty() {
                    errs.push(FieldError::required(&sp.child("path"), ""));
                } else if !p.starts_with('/') {
                    errs.push(FieldError::invalid(
                        &sp.child("path"),
                        BadValue::str(p),
                        "must be an absolute path",
                    ));
                }
            }
            "downwardAPI" => {
                validate_file_mode(src, "defaultMode", &sp, &mut errs)?;
                // Go validates every item against the source's path, without the index (quirk kept).
                for item in list(src, "items", &sp)? {
                    validate_downward_api_file(item, &sp, &mut errs)?;
                }
            }
            "projected" => validate_projected(src, &sp, &mut errs)?,
            "csi" => validate_csi(src, &sp, &mut errs)?,
            _ => {}
        }
    }
    if kind.is_none() {
        errs.push(FieldError::required(path, "must specify a volume type"));
    }
    Ok((kind, errs))
}

/// A file mode (`defaultMode`, `mode`) in 0..=0777.
fn validate_file_mode(
    obj: &Map<String, Value>,
    key: &str,
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Result<(), WebhookError> {
    if let Some(mode) = opt_int(obj, key, path)?
        && !(0..=0o777).contains(&mode)
    {
        errs.push(FieldError::invalid(
            &path.child(key),
            BadValue::Int(mode),
            FILE_MODE_ERROR,
        ));
    }
    Ok(())
}

/// `validateKeyToPath` (secret, configMap and projected items); returns the item's `path`.
fn validate_key_to_path<'a>(
    item: &'a Value,
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Result<&'a str, WebhookError> {
    let kp = as_object(item, path)?;
    if opt_str(kp, "key", path)?.unwrap_or("").is_empty() {
        errs.push(FieldError::required(&path.child("key"), ""));
    }
    let file = opt_str(kp, "path", path)?.unwrap_or("");
    if file.is_empty() {
        errs.push(FieldError::required(&path.child("path"), ""));
    }
    validate_local_non_reserved_path(file, &path.child("path"), errs);
    validate_file_mode(kp, "mode", path, errs)?;
    Ok(file)
}

/// `validateDownwardAPIVolumeFile`; returns the item's `path`.
fn validate_downward_api_file<'a>(
    item: &'a Value,
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Result<&'a str, WebhookError> {
    let file = as_object(item, path)?;
    let p = opt_str(file, "path", path)?.unwrap_or("");
    if p.is_empty() {
        errs.push(FieldError::required(&path.child("path"), ""));
    }
    validate_local_non_reserved_path(p, &path.child("path"), errs);
    let field_ref = file.get("fieldRef").filter(|v| !v.is_null());
    let resource_ref = file.get("resourceFieldRef").filter(|v| !v.is_null());
    if let Some(fr) = field_ref {
        let fp = path.child("fieldRef");
        let fr = FieldRef::deserialize(fr).map_err(|e| decode_error(&fp, &e.to_string()))?;
        validate_object_field_selector(&fr, convert_pod_field_label, VOLUME_FIELD_PATHS, &fp, errs);
        if resource_ref.is_some() {
            errs.push(FieldError::invalid(
                path,
                BadValue::str("resource"),
                "fieldRef and resourceFieldRef can not be specified simultaneously",
            ));
        }
    } else if let Some(rr) = resource_ref {
        let rp = path.child("resourceFieldRef");
        let rr =
            ResourceFieldRef::deserialize(rr).map_err(|e| decode_error(&rp, &e.to_string()))?;
        validate_resource_field_selector(&rr, true, &rp, errs)?;
    } else {
        errs.push(FieldError::required(
            path,
            "one of fieldRef and resourceFieldRef is required",
        ));
    }
    validate_file_mode(file, "mode", path, errs)?;
    Ok(p)
}

/// `validateProjectedVolumeSource` and `validateProjectionSources` (clusterTrustBundle only counts as a
/// source: its own rules are not implemented).
fn validate_projected(
    src: &Map<String, Value>,
    sp: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Result<(), WebhookError> {
    validate_file_mode(src, "defaultMode", sp, errs)?;
    let mut all_paths = BTreeSet::new();
    for (i, source) in list(src, "sources", sp)?.iter().enumerate() {
        let src_path = sp.child("sources").index(i);
        let source = as_object(source, &src_path)?;
        let mut count = 0;
        for kind in ["secret", "configMap"] {
            let Some(v) = source.get(kind).filter(|v| !v.is_null()) else {
                continue;
            };
            count += 1;
            let pp = src_path.child(kind);
            let proj = as_object(v, &pp)?;
            let name = opt_str(proj, "name", &pp)?.unwrap_or("");
            if name.is_empty() {
                errs.push(FieldError::required(&pp.child("name"), ""));
            }
            let items = pp.child("items");
            for (j, item) in list(proj, "items", &pp)?.iter().enumerate() {
                let file = validate_key_to_path(item, &items.index(j), errs)?;
                note_projected_path(&mut all_paths, file, name, sp, errs);
            }
        }
        if let Some(v) = source.get("downwardAPI").filter(|v| !v.is_null()) {
            count += 1;
            let pp = src_path.child("downwardAPI");
            let proj = as_object(v, &pp)?;
            for item in list(proj, "items", &pp)? {
                let file = validate_downward_api_file(item, &pp, errs)?;
                note_projected_path(&mut all_paths, file, file, sp, errs);
            }
        }
        if let Some(v) = source.get("serviceAccountToken").filter(|v| !v.is_null()) {
            count += 1;
            let pp = src_path.child("serviceAccountToken");
            let token = as_object(v, &pp)?;
            let expiration = opt_int(token, "expirationSeconds", &pp)?.unwrap_or(0);
            if expiration < 10 * 60 {
                errs.push(FieldError::invalid(
                    &pp.child("expirationSeconds"),
                    BadValue::Int(expiration),
                    "may not specify a duration less than 10 minutes",
                ));
            }
            if expiration > 1 << 32 {
                errs.push(FieldError::invalid(
                    &pp.child("expirationSeconds"),
                    BadValue::Int(expiration),
                    "may not specify a duration larger than 2^32 seconds",
                ));
            }
            // Go reports the token path against the projected source itself (quirk kept).
            let p = opt_str(token, "path", &pp)?.unwrap_or("");
            if p.is_empty() {
                errs.push(FieldError::required(&sp.child("path"), ""));
            } else {
                validate_local_non_reserved_path(p, &sp.child("path"), errs);
            }
        }
        if source
            .get("clusterTrustBundle")
            .is_some_and(|v| !v.is_null())
        {
            count += 1;
        }
        if count > 1 {
            errs.push(FieldError::forbidden(
                &src_path,
                "may not specify more than 1 volume type per source",
            ));
        }
    }
    Ok(())
}

/// Records a projected file path; a path seen before is `conflicting duplicate paths` at the projected
/// source, showing `value` (Go shows the secret or configMap name, or the downward API path).
fn note_projected_path<'a>(
    all_paths: &mut BTreeSet<&'a str>,
    file: &'a str,
    value: &str,
    projected: &FieldPath,
    errs: &mut Vec<FieldError>,
) {
    if !file.is_empty() && !all_paths.insert(file) {
        errs.push(FieldError::invalid(
            projected,
            BadValue::str(value),
            "conflicting duplicate paths",
        ));
    }
}

/// `validateCSIVolumeSource`.
fn validate_csi(
    src: &Map<String, Value>,
    sp: &FieldPath,
    errs: &mut Vec<FieldError>,
) -> Result<(), WebhookError> {
    let driver = opt_str(src, "driver", sp)?.unwrap_or("");
    let dp = sp.child("driver");
    if driver.is_empty() {
        errs.push(FieldError::required(&dp, ""));
    }
    if driver.len() > 63 {
        errs.push(FieldError::too_long(&dp, 63));
    }
    errs.extend(FieldError::invalid_each(
        &dp,
        driver,
        is_dns1123_subdomain(&driver.to_lowercase()),
    ));
    if let Some(r) = src.get("nodePublishSecretRef").filter(|v| !v.is_null()) {
        let rp = sp.child("nodePublishSecretRef");
        let name = opt_str(as_object(r, &rp)?, "name", &rp)?.unwrap_or("");
        if name.is_empty() {
            errs.push(FieldError::required(&rp.child("name"), ""));
        } else {
            // Go reports a bad secret name at `csi.name` (quirk kept).
            errs.extend(FieldError::invalid_each(
                &sp.child("name"),
                name,
                is_dns1123_subdomain(name),
            ));
        }
    }
    Ok(())
}

/// `validatePathNoBacksteps`: Go splits on `/` only (`filepath.ToSlash` is a no-op on Linux).
pub(super) fn has_backsteps(p: &str) -> bool {
    p.split('/').any(|part| part == "..")
}

/// `ValidateLocalNonReservedPath`.
fn validate_local_non_reserved_path(p: &str, path: &FieldPath, errs: &mut Vec<FieldError>) {
    validate_local_descending_path(p, path, errs);
    if p.starts_with("..") && !p.starts_with("../") {
        errs.push(FieldError::invalid(
            path,
            BadValue::str(p),
            "must not start with '..'",
        ));
    }
}

/// `validateLocalDescendingPath`.
pub(super) fn validate_local_descending_path(
    p: &str,
    path: &FieldPath,
    errs: &mut Vec<FieldError>,
) {
    if p.starts_with('/') {
        errs.push(FieldError::invalid(
            path,
            BadValue::str(p),
            "must be a relative path",
        ));
    }
    if has_backsteps(p) {
        errs.push(FieldError::invalid(
            path,
            BadValue::str(p),
            "must not contain '..'",
        ));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::validation::syntax::is_dns1123_subdomain;
    use crate::validation::testing::check;

    #[test]
    fn volume_items_host_path_type_downward_api_and_csi() {
        let volumes = json!([
            {"name": "s", "secret": {"secretName": "s", "items": [
                {"key": "", "path": "/abs", "mode": 512},
                {"key": "k", "path": "..x"},
                {"key": "k", "path": "a/../b"},
                {"key": "k"}
            ]}},
            {"name": "c", "configMap": {"name": "c", "items": [{"key": "k", "path": "../x", "mode": -1}]}},
            {"name": "h", "hostPath": {"path": "/x", "type": "Foo"}},
            {"name": "d", "downwardAPI": {"defaultMode": 1000, "items": [
                {"path": "/abs", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}},
                {"path": "p"},
                {"path": "q", "fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}},
                {"path": "r", "resourceFieldRef": {"resource": "limits.cpu"}},
                {"path": "t", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.uid"}, "resourceFieldRef": {"containerName": "a", "resource": "limits.cpu"}}
            ]}},
            {"name": "x", "csi": {"driver": ""}},
            {"name": "y", "csi": {"driver": "Bad_Driver", "nodePublishSecretRef": {"name": "Bad_Name"}}},
            {"name": "z", "csi": {"driver": "d", "nodePublishSecretRef": {}}}
        ]);
        let subdomain = is_dns1123_subdomain("")[0].clone();
        assert_eq!(
            check(json!([]), json!([]), volumes),
            [
                "spec.volumes[0].secret.items[0].key: Required value".to_owned(),
                "spec.volumes[0].secret.items[0].path: Invalid value: \"/abs\": must be a relative path".to_owned(),
                "spec.volumes[0].secret.items[0].mode: Invalid value: 512: must be a number between 0 and 0777 (octal), both inclusive".to_owned(),
                "spec.volumes[0].secret.items[1].path: Invalid value: \"..x\": must not start with '..'".to_owned(),
                "spec.volumes[0].secret.items[2].path: Invalid value: \"a/../b\": must not contain '..'".to_owned(),
                "spec.volumes[0].secret.items[3].path: Required value".to_owned(),
                "spec.volumes[1].configMap.items[0].path: Invalid value: \"../x\": must not contain '..'".to_owned(),
                "spec.volumes[1].configMap.items[0].mode: Invalid value: -1: must be a number between 0 and 0777 (octal), both inclusive".to_owned(),
                "spec.volumes[2].hostPath.type: Unsupported value: \"Foo\": supported values: \"\", \"BlockDevice\", \"CharDevice\", \"Directory\", \"DirectoryOrCreate\", \"File\", \"FileOrCreate\", \"Socket\"".to_owned(),
                "spec.volumes[3].downwardAPI.defaultMode: Invalid value: 1000: must be a number between 0 and 0777 (octal), both inclusive".to_owned(),
                "spec.volumes[3].downwardAPI.path: Invalid value: \"/abs\": must be a relative path".to_owned(),
                "spec.volumes[3].downwardAPI: Required value: one of fieldRef and resourceFieldRef is required".to_owned(),
                "spec.volumes[3].downwardAPI.fieldRef.fieldPath: Unsupported value: \"spec.nodeName\": supported values: \"metadata.annotations\", \"metadata.labels\", \"metadata.name\", \"metadata.namespace\", \"metadata.uid\"".to_owned(),
                "spec.volumes[3].downwardAPI.resourceFieldRef.containerName: Required value".to_owned(),
                "spec.volumes[3].downwardAPI: Invalid value: \"resource\": fieldRef and resourceFieldRef can not be specified simultaneously".to_owned(),
                "spec.volumes[4].csi.driver: Required value".to_owned(),
                format!("spec.volumes[4].csi.driver: Invalid value: \"\": {subdomain}"),
                format!("spec.volumes[5].csi.driver: Invalid value: \"Bad_Driver\": {subdomain}"),
                format!("spec.volumes[5].csi.name: Invalid value: \"Bad_Name\": {subdomain}"),
                "spec.volumes[6].csi.nodePublishSecretRef.name: Required value".to_owned(),
            ]
        );
        let long = "d".repeat(64);
        assert_eq!(
            check(
                json!([]),
                json!([]),
                json!([{"name": "l", "csi": {"driver": long}}])
            ),
            ["spec.volumes[0].csi.driver: Too long: may not be more than 63 bytes"]
        );
    }

    #[test]
    fn projected_sources() {
        let volumes = json!([{"name": "p", "projected": {"defaultMode": -1, "sources": [
            {"secret": {"name": "s"}, "configMap": {"name": "c"}},
            {"serviceAccountToken": {"path": "t", "expirationSeconds": 60}},
            {"serviceAccountToken": {"expirationSeconds": 4_294_967_297_i64}},
            {"serviceAccountToken": {"path": "/t", "expirationSeconds": 4_294_967_296_i64}},
            {"secret": {"items": [{"key": "a", "path": "dup"}]}},
            {"configMap": {"name": "c", "items": [{"key": "b", "path": "dup"}]}},
            {"downwardAPI": {"items": [{"path": "dup", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}, {"path": ".."}]}},
            {}
        ]}}]);
        assert_eq!(
            check(json!([]), json!([]), volumes),
            [
                "spec.volumes[0].projected.defaultMode: Invalid value: -1: must be a number between 0 and 0777 (octal), both inclusive",
                "spec.volumes[0].projected.sources[0]: Forbidden: may not specify more than 1 volume type per source",
                "spec.volumes[0].projected.sources[1].serviceAccountToken.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes",
                "spec.volumes[0].projected.sources[2].serviceAccountToken.expirationSeconds: Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds",
                "spec.volumes[0].projected.path: Required value",
                "spec.volumes[0].projected.path: Invalid value: \"/t\": must be a relative path",
                "spec.volumes[0].projected.sources[4].secret.name: Required value",
                "spec.volumes[0].projected: Invalid value: \"c\": conflicting duplicate paths",
                "spec.volumes[0].projected: Invalid value: \"dup\": conflicting duplicate paths",
                "spec.volumes[0].projected.sources[6].downwardAPI.path: Invalid value: \"..\": must not contain '..'",
                "spec.volumes[0].projected.sources[6].downwardAPI.path: Invalid value: \"..\": must not start with '..'",
                "spec.volumes[0].projected.sources[6].downwardAPI: Required value: one of fieldRef and resourceFieldRef is required",
            ]
        );
    }

    #[test]
    fn volume_sources_are_checked_in_go_order_with_go_spellings() {
        assert_eq!(
            check(
                json!([]),
                json!([]),
                json!([
                    {"name": "a", "emptyDir": {}, "cephfs": {"monitors": ["m"]}},
                    {"name": "b", "cephfs": {"monitors": ["m"]}, "downwardAPI": {}},
                    {"name": "c", "configMap": {"name": "c"}, "storageos": {}}
                ])
            ),
            [
                "spec.volumes[0].cephFS: Forbidden: may not specify more than 1 volume type",
                "spec.volumes[1].downwarAPI: Forbidden: may not specify more than 1 volume type",
                "spec.volumes[2].storageos: Forbidden: may not specify more than 1 volume type",
            ]
        );
        // `\` is not a path separator for Go on Linux.
        assert!(
            check(
                json!([]),
                json!([]),
                json!([{"name": "h", "hostPath": {"path": "/a\\..\\b"}}])
            )
            .is_empty()
        );
    }
}
