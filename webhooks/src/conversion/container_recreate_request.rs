//! ContainerRecreateRequest v1alpha1 ⇄ v1beta1: two v1alpha1 annotations are v1beta1 status fields
//! (shared/crds schemas; `openkruise/kruise: apis/apps/v1alpha1/containerrecreaterequest_conversion.go`).

use serde_json::{Map, Value, json};

use super::Direction;
use super::go_text;
use super::object::{self, ANNOTATIONS};
// The v1alpha1 carrier of the `PodUnreadyAcquired` condition (its RFC 3339 time).
use crate::api::containerrecreaterequest::UNREADY_ACQUIRED_ANNOTATION;

/// v1alpha1 carrier of `status.containerStatusSnapshot` (a JSON list).
const SYNC_CONTAINER_STATUSES_ANNOTATION: &str = "crr.apps.kruise.io/sync-container-statuses";
const UNREADY_ACQUIRED_CONDITION: &str = "PodUnreadyAcquired";
const UNREADY_ACQUIRED_REASON: &str = "UnreadyAcquired";
const UNREADY_ACQUIRED_MESSAGE: &str =
    "Pod has been forced to not-ready for unreadyGracePeriodSeconds drain";
/// What a zero metav1.Time formats to.
const GO_ZERO_TIME: &str = "0001-01-01T00:00:00Z";

pub(super) fn convert(obj: &mut Map<String, Value>, direction: Direction) -> Result<(), String> {
    match direction {
        Direction::ToBeta => {
            to_beta(obj);
            Ok(())
        }
        Direction::ToAlpha => to_alpha(obj),
    }
}

fn to_beta(obj: &mut Map<String, Value>) {
    // Unparsable annotations are ignored, as upstream does; the annotations themselves stay.
    let snapshot = object::meta_str(obj, ANNOTATIONS, SYNC_CONTAINER_STATUSES_ANNOTATION)
        .filter(|raw| !raw.is_empty())
        .and_then(|raw| serde_json::from_str::<Value>(raw).ok())
        .and_then(|list| decode_statuses(&list).ok())
        .filter(|statuses| !statuses.is_empty());
    let unready_since = object::meta_str(obj, ANNOTATIONS, UNREADY_ACQUIRED_ANNOTATION)
        .filter(|raw| !raw.is_empty())
        .and_then(go_text::rfc3339_to_utc);
    if snapshot.is_none() && unready_since.is_none() {
        return;
    }
    let Some(status) = object::child_or_insert(obj, "status") else {
        return;
    };
    if let Some(snapshot) = snapshot {
        let snapshot = snapshot.iter().map(ContainerStatus::to_value).collect();
        status.insert("containerStatusSnapshot".into(), Value::Array(snapshot));
    }
    if let Some(since) = unready_since {
        let condition = json!({
            "type": UNREADY_ACQUIRED_CONDITION,
            "status": "True",
            "lastTransitionTime": since,
            "reason": UNREADY_ACQUIRED_REASON,
            "message": UNREADY_ACQUIRED_MESSAGE,
        });
        status.insert("conditions".into(), Value::Array(vec![condition]));
    }
}

fn to_alpha(obj: &mut Map<String, Value>) -> Result<(), String> {
    let (mut snapshot, mut conditions) = (None, None);
    if let Some(status) = object::child_mut(obj, "status") {
        snapshot = object::take(status, "containerStatusSnapshot");
        conditions = object::take(status, "conditions");
    }
    if let Some(snapshot) = snapshot {
        let statuses = decode_statuses(&snapshot)
            .map_err(|err| format!("decoding status.containerStatusSnapshot: {err}"))?;
        object::set_meta(
            obj,
            ANNOTATIONS,
            SYNC_CONTAINER_STATUSES_ANNOTATION,
            marshal_statuses(&statuses),
        );
    }
    let unready = conditions
        .as_ref()
        .and_then(Value::as_array)
        .and_then(|conditions| {
            conditions.iter().find(|c| {
                c.get("type").and_then(Value::as_str) == Some(UNREADY_ACQUIRED_CONDITION)
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        });
    if let Some(condition) = unready {
        let since = match condition.get("lastTransitionTime").and_then(Value::as_str) {
            Some(time) => go_text::rfc3339_to_utc(time).unwrap_or_else(|| time.to_owned()),
            None => GO_ZERO_TIME.to_owned(),
        };
        object::set_meta(obj, ANNOTATIONS, UNREADY_ACQUIRED_ANNOTATION, since);
    }
    Ok(())
}

/// `ContainerRecreateRequestSyncContainerStatus`.
#[derive(Debug, Default, PartialEq)]
struct ContainerStatus {
    name: String,
    ready: bool,
    restart_count: i32,
    container_id: String,
}

impl ContainerStatus {
    fn to_value(&self) -> Value {
        let mut map = Map::new();
        map.insert("name".into(), Value::String(self.name.clone()));
        map.insert("ready".into(), Value::Bool(self.ready));
        map.insert("restartCount".into(), Value::from(self.restart_count));
        if !self.container_id.is_empty() {
            map.insert(
                "containerID".into(),
                Value::String(self.container_id.clone()),
            );
        }
        Value::Object(map)
    }
}

/// Decodes like Go's `json.Unmarshal` into `[]ContainerRecreateRequestSyncContainerStatus`: null is an empty
/// list, null members are zero values, keys match case-insensitively, unknown keys are ignored, and any type
/// mismatch fails the whole list.
fn decode_statuses(list: &Value) -> Result<Vec<ContainerStatus>, String> {
    let items = match list {
        Value::Null => return Ok(Vec::new()),
        Value::Array(items) => items,
        other => return Err(format!("expected a list, got {}", object::type_name(other))),
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| decode_status(item).map_err(|err| format!("[{i}]: {err}")))
        .collect()
}

fn decode_status(item: &Value) -> Result<ContainerStatus, String> {
    let fields = match item {
        Value::Null => return Ok(ContainerStatus::default()),
        Value::Object(fields) => fields,
        other => {
            return Err(format!(
                "expected an object, got {}",
                object::type_name(other)
            ));
        }
    };
    let field = |name: &str| {
        fields
            .get(name)
            .or_else(|| {
                fields
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(name))
                    .map(|(_, v)| v)
            })
            .filter(|v| !v.is_null())
    };
    let string = |name: &str| match field(name) {
        None => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(format!(
            "{name} must be a string, got {}",
            object::type_name(other)
        )),
    };
    let ready = match field("ready") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(format!(
                "ready must be a boolean, got {}",
                object::type_name(other)
            ));
        }
    };
    let restart_count = match field("restartCount") {
        None => 0,
        Some(value) => value
            .as_i64()
            .and_then(|n| i32::try_from(n).ok())
            .ok_or_else(|| format!("restartCount must be an int32, got {value}"))?,
    };
    Ok(ContainerStatus {
        name: string("name")?,
        ready,
        restart_count,
        container_id: string("containerID")?,
    })
}

/// `json.Marshal` of the v1alpha1 list: field order name, ready, restartCount, containerID (omitempty).
fn marshal_statuses(statuses: &[ContainerStatus]) -> String {
    let items: Vec<String> = statuses
        .iter()
        .map(|s| {
            let mut item = format!(
                r#"{{"name":{},"ready":{},"restartCount":{}"#,
                go_text::json_string(&s.name),
                s.ready,
                s.restart_count
            );
            if !s.container_id.is_empty() {
                item.push_str(&format!(
                    r#","containerID":{}"#,
                    go_text::json_string(&s.container_id)
                ));
            }
            item.push('}');
            item
        })
        .collect();
    format!("[{}]", items.join(","))
}
