//! The subset of kustomize that `deploy/` uses, so the tests can render it without a kustomize binary.
//!
//! Understood: `resources` (files of one or more YAML documents, and directories holding a
//! `kustomization.yaml` of kind Kustomization), `components` (directories holding a `kustomization.yaml` of
//! kind Component), `patches` whose content, from `path` or inline `patch`, is a JSON6902 list with a `target`
//! (group, version, kind, name, namespace), or one of two strategic-merge deletions: `$patch: delete` of whole
//! objects (those of the `target`, else the one the patch names), and `$patch: delete` of entries of an
//! object's `webhooks` by `name` (the list's merge key); `labels` without selectors or templates, `replicas`
//! and `images`; in kustomize's order: resources, components, then patches, labels, replicas, images.
//! Anything else is an error naming it: a field this renderer does not know, any other strategic-merge patch,
//! a target selector by label, a patch, replica count or image that matches no object, a webhook to delete
//! that is not there, a `test` operation that fails, a patch renaming an object kustomize tracks references
//! to (it renames them too; this renderer does not), two objects with the same identity. So a kustomization
//! that renders here renders the same in kustomize.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// A rendering failure: what went wrong, and in which file.
pub type Error = String;

const KUSTOMIZATION: &str = "kustomize.config.k8s.io/v1beta1";
const COMPONENT: &str = "kustomize.config.k8s.io/v1alpha1";
const FIELDS: &[&str] = &[
    "apiVersion",
    "kind",
    "resources",
    "components",
    "patches",
    "labels",
    "replicas",
    "images",
];

/// Renders the Kustomization in `dir` (its `kustomization.yaml`).
pub fn build(dir: &Path) -> Result<Vec<Value>, Error> {
    let kustomization = read_kustomization(dir)?;
    build_from(dir, &kustomization)
}

/// Renders `kustomization` (of kind Kustomization) as if it were the `kustomization.yaml` of `dir`.
pub fn build_from(dir: &Path, kustomization: &Value) -> Result<Vec<Value>, Error> {
    expect_kind(dir, kustomization, KUSTOMIZATION, "Kustomization")?;
    let mut objects = Vec::new();
    accumulate(dir, kustomization, &mut objects)?;
    let mut ids = BTreeSet::new();
    for object in &objects {
        let id = identity(object);
        if !ids.insert(id.clone()) {
            return Err(format!("{}: {id:?} twice", dir.display()));
        }
    }
    Ok(objects)
}

/// Every YAML document of a file, as JSON.
pub fn read_yaml(path: &Path) -> Result<Vec<Value>, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse_yaml(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Every YAML document of `text`, as JSON.
pub fn parse_yaml(text: &str) -> Result<Vec<Value>, Error> {
    serde_saphyr::from_multiple(text).map_err(|e| e.to_string())
}

fn read_kustomization(dir: &Path) -> Result<Value, Error> {
    let path = dir.join("kustomization.yaml");
    let mut docs = read_yaml(&path)?;
    if docs.len() != 1 {
        return Err(format!("{}: {} documents", path.display(), docs.len()));
    }
    Ok(docs.remove(0))
}

fn expect_kind(dir: &Path, k: &Value, api_version: &str, kind: &str) -> Result<(), Error> {
    if k["apiVersion"] != api_version || k["kind"] != kind {
        return Err(format!(
            "{}: want {api_version} {kind}, found {} {}",
            dir.display(),
            k["apiVersion"],
            k["kind"]
        ));
    }
    Ok(())
}

/// Fails on a key of `object` outside `known`.
fn only(object: &Value, known: &[&str], what: &str) -> Result<(), Error> {
    let map = object
        .as_object()
        .ok_or_else(|| format!("{what}: not a mapping: {object}"))?;
    match map.keys().find(|k| !known.contains(&k.as_str())) {
        Some(unknown) => Err(format!("{what}: field {unknown:?} is not understood")),
        None => Ok(()),
    }
}

fn list<'a>(k: &'a Value, key: &str) -> &'a [Value] {
    k.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn string<'a>(value: &'a Value, what: &str) -> Result<&'a str, Error> {
    value
        .as_str()
        .ok_or_else(|| format!("{what}: not a string: {value}"))
}

/// Adds what the kustomization (or component) in `dir` contributes to `objects`.
fn accumulate(dir: &Path, k: &Value, objects: &mut Vec<Value>) -> Result<(), Error> {
    let here = dir.display().to_string();
    only(k, FIELDS, &here)?;
    for resource in list(k, "resources") {
        let path = dir.join(string(resource, &here)?);
        if path.is_dir() {
            objects.extend(build(&path)?);
        } else {
            for object in read_yaml(&path)? {
                if object["apiVersion"].as_str().is_none()
                    || object["kind"].as_str().is_none()
                    || object["metadata"]["name"].as_str().is_none()
                {
                    return Err(format!(
                        "{}: an object without apiVersion, kind or name",
                        path.display()
                    ));
                }
                objects.push(object);
            }
        }
    }
    for component in list(k, "components") {
        let path = dir.join(string(component, &here)?);
        let c = read_kustomization(&path)?;
        expect_kind(&path, &c, COMPONENT, "Component")?;
        accumulate(&path, &c, objects)?;
    }
    for (i, p) in list(k, "patches").iter().enumerate() {
        patch(dir, p, objects).map_err(|e| format!("{here}: patches[{i}]: {e}"))?;
    }
    for l in list(k, "labels") {
        labels(l, objects).map_err(|e| format!("{here}: labels: {e}"))?;
    }
    for r in list(k, "replicas") {
        replicas(r, objects).map_err(|e| format!("{here}: replicas: {e}"))?;
    }
    for i in list(k, "images") {
        images(i, objects).map_err(|e| format!("{here}: images: {e}"))?;
    }
    Ok(())
}

/// (group, kind, namespace, name): what kustomize calls a resource's id.
fn identity(object: &Value) -> (String, String, String, String) {
    let field = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    (
        group_version(object).0,
        field(&object["kind"]),
        field(&object["metadata"]["namespace"]),
        field(&object["metadata"]["name"]),
    )
}

fn group_version(object: &Value) -> (String, String) {
    match object["apiVersion"]
        .as_str()
        .unwrap_or_default()
        .split_once('/')
    {
        Some((group, version)) => (group.to_owned(), version.to_owned()),
        None => (
            String::new(),
            object["apiVersion"].as_str().unwrap_or_default().to_owned(),
        ),
    }
}

fn selects(target: &Value, object: &Value) -> Result<bool, Error> {
    only(
        target,
        &["group", "version", "kind", "name", "namespace"],
        "target",
    )?;
    let (group, version) = group_version(object);
    let wanted = |key: &str, actual: &str| -> Result<bool, Error> {
        Ok(match target.get(key) {
            None => true,
            Some(want) => string(want, key)? == actual,
        })
    };
    if let Some(name) = target.get("name").and_then(Value::as_str)
        && !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        // kustomize reads a target name as a regular expression; this renderer compares names.
        return Err(format!(
            "target name {name:?}: only plain names are understood"
        ));
    }
    Ok(wanted("group", &group)?
        && wanted("version", &version)?
        && wanted("kind", object["kind"].as_str().unwrap_or_default())?
        && wanted(
            "name",
            object["metadata"]["name"].as_str().unwrap_or_default(),
        )?
        && wanted(
            "namespace",
            object["metadata"]["namespace"].as_str().unwrap_or_default(),
        )?)
}

fn patch(dir: &Path, p: &Value, objects: &mut Vec<Value>) -> Result<(), Error> {
    only(p, &["path", "patch", "target"], "patch")?;
    let (text, origin) = match (p.get("path"), p.get("patch")) {
        (Some(path), None) => {
            let path: PathBuf = dir.join(string(path, "path")?);
            let text =
                std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            (text, path.display().to_string())
        }
        (None, Some(inline)) => (string(inline, "patch")?.to_owned(), "inline".to_owned()),
        _ => return Err("exactly one of path and patch".into()),
    };
    let mut docs = parse_yaml(&text).map_err(|e| format!("{origin}: {e}"))?;
    if !docs.is_empty() && docs.iter().all(Value::is_object) {
        return strategic_delete(&docs, p.get("target"), objects)
            .map_err(|e| format!("{origin}: {e}"));
    }
    if docs.len() != 1 || !docs[0].is_array() {
        return Err(format!(
            "{origin}: not a JSON6902 list (strategic-merge patches are not understood, but for `$patch: delete`)"
        ));
    }
    for op in docs[0].as_array().unwrap() {
        only(
            op,
            &["op", "path", "value", "from"],
            &format!("{origin}: operation"),
        )?;
    }
    let ops: json_patch::Patch =
        serde_json::from_value(docs.remove(0)).map_err(|e| format!("{origin}: {e}"))?;
    let target = p
        .get("target")
        .ok_or_else(|| format!("{origin}: a JSON6902 patch needs a target"))?;
    let mut matched = 0;
    for object in objects.iter_mut() {
        if selects(target, object)? {
            let before = object["metadata"]["name"].clone();
            json_patch::patch(object, &ops.0)
                .map_err(|e| format!("{origin} on {:?}: {e}", identity(object)))?;
            if object["metadata"]["name"] != before && !RENAMED_ALONE.contains(&kind(object)) {
                return Err(format!(
                    "{origin}: renames {:?}; kustomize would rename the references to it too, this renderer does not",
                    identity(object)
                ));
            }
            matched += 1;
        }
    }
    if matched == 0 {
        return Err(format!("{origin}: target {target} matches no object"));
    }
    Ok(())
}

/// Kinds a patch may rename: nothing refers to them by name, so kustomize renames nothing else with them.
const RENAMED_ALONE: &[&str] = &[
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
];

fn kind(object: &Value) -> &str {
    object["kind"].as_str().unwrap_or_default()
}

/// The strategic-merge patches understood (see the module's documentation), each document on its own: a
/// whole object deleted, or entries of its `webhooks` deleted by name.
fn strategic_delete(
    docs: &[Value],
    target: Option<&Value>,
    objects: &mut Vec<Value>,
) -> Result<(), Error> {
    for doc in docs {
        only(
            doc,
            &["apiVersion", "kind", "metadata", "$patch", "webhooks"],
            "strategic-merge patch",
        )?;
        only(&doc["metadata"], &["name", "namespace"], "its metadata")?;
        let named = |object: &Value| -> Result<bool, Error> {
            match target {
                Some(target) => selects(target, object),
                None => Ok(identity(object) == identity(doc)),
            }
        };
        let mut matched = Vec::new();
        for (i, object) in objects.iter().enumerate() {
            if named(object)? {
                matched.push(i);
            }
        }
        if matched.is_empty() {
            return Err(format!("{:?} matches no object", identity(doc)));
        }
        match (doc.get("$patch"), doc.get("webhooks")) {
            (Some(delete), None) if delete == "delete" => {
                for i in matched.into_iter().rev() {
                    objects.remove(i);
                }
            }
            (None, Some(Value::Array(entries))) => {
                for i in matched {
                    delete_webhooks(&mut objects[i], entries)?;
                }
            }
            _ => {
                return Err(
                    "only `$patch: delete` of a whole object, or of `webhooks` entries, is understood"
                        .into(),
                );
            }
        }
    }
    Ok(())
}

/// Deletes from `object`'s `webhooks` each entry `{name: <name>, $patch: delete}` of `entries` names.
fn delete_webhooks(object: &mut Value, entries: &[Value]) -> Result<(), Error> {
    let id = identity(object);
    let hooks = object["webhooks"]
        .as_array_mut()
        .ok_or_else(|| format!("{id:?} has no webhooks"))?;
    for entry in entries {
        only(entry, &["name", "$patch"], "a webhooks entry")?;
        if entry["$patch"] != "delete" {
            return Err(format!("{entry}: only `$patch: delete` is understood"));
        }
        let name = string(&entry["name"], "name")?;
        let at = hooks
            .iter()
            .position(|h| h["name"] == name)
            .ok_or_else(|| format!("{id:?} has no webhook {name}"))?;
        hooks.remove(at);
    }
    Ok(())
}

fn labels(l: &Value, objects: &mut [Value]) -> Result<(), Error> {
    only(
        l,
        &["pairs", "includeSelectors", "includeTemplates"],
        "labels",
    )?;
    for flag in ["includeSelectors", "includeTemplates"] {
        if l.get(flag).is_some_and(|v| v != false) {
            return Err(format!("{flag}: only false is understood"));
        }
    }
    let pairs = l["pairs"].as_object().ok_or("pairs: not a mapping")?;
    for object in objects {
        let meta = object["metadata"].as_object_mut().ok_or("no metadata")?;
        let labels = meta
            .entry("labels")
            .or_insert_with(|| Value::Object(Map::new()));
        for (key, value) in pairs {
            labels[key] = Value::String(string(value, key)?.to_owned());
        }
    }
    Ok(())
}

fn replicas(r: &Value, objects: &mut [Value]) -> Result<(), Error> {
    only(r, &["name", "count"], "replicas")?;
    let name = string(&r["name"], "name")?;
    let count = r["count"].as_u64().ok_or("count: not a number")?;
    let mut matched = 0;
    for object in objects {
        if ["Deployment", "ReplicaSet", "StatefulSet"]
            .contains(&object["kind"].as_str().unwrap_or_default())
            && object["metadata"]["name"] == name
        {
            object["spec"]["replicas"] = count.into();
            matched += 1;
        }
    }
    if matched == 0 {
        return Err(format!("{name}: no workload of that name"));
    }
    Ok(())
}

/// The name part of an image reference: without `@digest`, and without a `:tag` after the last `/`.
fn image_name(image: &str) -> &str {
    let image = image.split_once('@').map_or(image, |(name, _)| name);
    match image.rfind(':') {
        Some(colon) if !image[colon..].contains('/') => &image[..colon],
        _ => image,
    }
}

fn images(i: &Value, objects: &mut [Value]) -> Result<(), Error> {
    only(i, &["name", "newName", "newTag", "digest"], "images")?;
    let name = string(&i["name"], "name")?;
    let new_name = i.get("newName").map(|v| string(v, "newName")).transpose()?;
    let new_tag = i.get("newTag").map(|v| string(v, "newTag")).transpose()?;
    let digest = i.get("digest").map(|v| string(v, "digest")).transpose()?;
    let mut matched = 0;
    for object in objects {
        let Some(spec) = object.pointer_mut("/spec/template/spec") else {
            continue;
        };
        for field in ["containers", "initContainers"] {
            let Some(containers) = spec.get_mut(field).and_then(Value::as_array_mut) else {
                continue;
            };
            for container in containers {
                let image = string(&container["image"], "image")?.to_owned();
                if image_name(&image) != name {
                    continue;
                }
                let suffix = match (digest, new_tag) {
                    (Some(d), _) => format!("@{d}"),
                    (None, Some(t)) => format!(":{t}"),
                    (None, None) => image[image_name(&image).len()..].to_owned(),
                };
                container["image"] = format!("{}{suffix}", new_name.unwrap_or(name)).into();
                matched += 1;
            }
        }
    }
    if matched == 0 {
        return Err(format!("{name}: no container has that image"));
    }
    Ok(())
}

#[test]
fn image_names_drop_tag_and_digest() {
    assert_eq!(image_name("kruise-webhook:0.1.0"), "kruise-webhook");
    assert_eq!(image_name("registry:5000/kw"), "registry:5000/kw");
    assert_eq!(
        image_name("registry:5000/kw:1@sha256:ab"),
        "registry:5000/kw"
    );
}
