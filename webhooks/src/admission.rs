//! The `admission.k8s.io` AdmissionReview wire format, v1 and v1beta1.
//!
//! Requests keep `object` / `oldObject` as raw [`serde_json::Value`]s so that patches are computed against
//! exactly what the apiserver sent (DECISIONS 13). Responses encode `patch` as a base64 string, as the
//! apiserver's Go types do (kube-core serialises it as an array of numbers, three times larger).
//! Reference: <https://kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/>.

use std::collections::BTreeMap;

use base64::Engine;
use serde::{Deserialize, Serialize};

use crate::de::nullable;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::WebhookError;
use crate::patch::write_str;
use crate::verdict::{Decision, Verdict};

/// `admission.k8s.io/v1`.
pub const V1: &str = "admission.k8s.io/v1";
/// `admission.k8s.io/v1beta1`.
pub const V1BETA1: &str = "admission.k8s.io/v1beta1";

/// Group, version and kind of the object in a request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupVersionKind {
    /// API group, `""` for core.
    #[serde(default, deserialize_with = "nullable")]
    pub group: String,
    /// API version.
    #[serde(default, deserialize_with = "nullable")]
    pub version: String,
    /// Kind.
    #[serde(default, deserialize_with = "nullable")]
    pub kind: String,
}

/// Group, version and resource of a request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupVersionResource {
    /// API group, `""` for core.
    #[serde(default, deserialize_with = "nullable")]
    pub group: String,
    /// API version.
    #[serde(default, deserialize_with = "nullable")]
    pub version: String,
    /// Plural resource name.
    #[serde(default, deserialize_with = "nullable")]
    pub resource: String,
}

/// The operation being admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Operation {
    /// CREATE.
    Create,
    /// UPDATE.
    Update,
    /// DELETE.
    Delete,
    /// CONNECT.
    Connect,
}

impl Operation {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "CREATE",
            Self::Update => "UPDATE",
            Self::Delete => "DELETE",
            Self::Connect => "CONNECT",
        }
    }
}

/// `request.userInfo`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserInfo {
    /// The requesting user's name.
    #[serde(default, deserialize_with = "nullable")]
    pub username: String,
    /// The user's UID.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The user's groups.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// Extra attributes.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Vec<String>>,
}

/// `request` of an AdmissionReview. `object`, `oldObject` and `options` stay raw JSON: each webhook decodes
/// exactly the typed view it needs in one pass, and patches are computed against the bytes the apiserver sent.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionRequest {
    /// Echoed in the response.
    #[serde(default, deserialize_with = "nullable")]
    pub uid: String,
    /// Kind of the object (possibly converted to the webhook's version).
    #[serde(default, deserialize_with = "nullable")]
    pub kind: GroupVersionKind,
    /// Resource being admitted.
    #[serde(default, deserialize_with = "nullable")]
    pub resource: GroupVersionResource,
    /// Subresource (`eviction`, `status`, …), `""` for the main resource.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub sub_resource: String,
    /// The kind the client sent, before conversion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_kind: Option<GroupVersionKind>,
    /// The resource the client sent, before conversion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_resource: Option<GroupVersionResource>,
    /// The subresource the client sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_sub_resource: Option<String>,
    /// Object name (may be empty on CREATE with generateName).
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
    /// Object namespace; absent or empty for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The operation.
    pub operation: Operation,
    /// The requesting user.
    #[serde(default, deserialize_with = "nullable")]
    pub user_info: UserInfo,
    /// The new object (CREATE, UPDATE, CONNECT); `null` is read as absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<Box<RawValue>>,
    /// The existing object (UPDATE, DELETE); `null` is read as absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_object: Option<Box<RawValue>>,
    /// Dry-run request: side effects must be suppressed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
    /// Operation options (CreateOptions, DeleteOptions, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Box<RawValue>>,
}

impl AdmissionRequest {
    /// The namespace, `""` for cluster-scoped objects.
    pub fn namespace(&self) -> &str {
        self.namespace.as_deref().unwrap_or("")
    }

    /// True for dry-run requests (the flag on the request or `dryRun` in the options).
    pub fn is_dry_run(&self) -> bool {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Options {
            #[serde(default)]
            dry_run: Option<Vec<String>>,
        }
        self.dry_run.unwrap_or(false)
            || self
                .options
                .as_ref()
                .and_then(|o| serde_json::from_str::<Options>(o.get()).ok())
                .and_then(|o| o.dry_run)
                .is_some_and(|d| !d.is_empty())
    }

    /// The old object when present and not an empty object (`{}` is sent by pre-1.16 apiservers).
    pub fn old_object(&self) -> Option<&RawValue> {
        self.old_object.as_deref().filter(|v| !is_empty_object(v))
    }

    /// The new object when present and not an empty object.
    pub fn object(&self) -> Option<&RawValue> {
        self.object.as_deref().filter(|v| !is_empty_object(v))
    }

    /// The new object as a JSON tree (for patching); `None` when absent or empty.
    pub fn object_value(&self) -> Option<Value> {
        self.object()
            .and_then(|o| serde_json::from_str(o.get()).ok())
    }

    /// `metadata.labels` of the new and old objects (absent objects and labels read as empty).
    pub fn object_labels(&self) -> [Option<BTreeMap<String, String>>; 2] {
        [self.object(), self.old_object()].map(|o| o.map(labels_of))
    }
}

/// `metadata.labels` of a raw object (empty when absent or malformed).
pub fn labels_of(obj: &RawValue) -> BTreeMap<String, String> {
    #[derive(Deserialize, Default)]
    struct Meta {
        #[serde(default, deserialize_with = "nullable")]
        labels: BTreeMap<String, String>,
    }
    #[derive(Deserialize)]
    struct Obj {
        #[serde(default, deserialize_with = "nullable")]
        metadata: Meta,
    }
    serde_json::from_str::<Obj>(obj.get())
        .map(|o| o.metadata.labels)
        .unwrap_or_default()
}

fn is_empty_object(v: &RawValue) -> bool {
    let text = v.get().trim();
    text == "null"
        || (text.starts_with('{')
            && text.ends_with('}')
            && text[1..text.len() - 1].trim().is_empty())
}

/// A decoded AdmissionReview request: its version (echoed in the answer) and the request.
#[derive(Debug, Clone)]
pub struct AdmissionReview {
    /// `admission.k8s.io/v1` or `admission.k8s.io/v1beta1`.
    pub api_version: &'static str,
    /// The request.
    pub request: AdmissionRequest,
}

/// Why a body is not an AdmissionReview this server can answer (answered before any webhook runs).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ReviewError {
    /// The body is empty.
    #[error("request body is empty")]
    Empty,
    /// The body is not JSON or not an AdmissionReview object.
    #[error("couldn't decode AdmissionReview: {0}")]
    Malformed(String),
    /// apiVersion/kind are not an AdmissionReview this server speaks.
    #[error(
        "unsupported apiVersion/kind {api_version:?}/{kind:?}: expected admission.k8s.io/v1 or admission.k8s.io/v1beta1 AdmissionReview"
    )]
    WrongType {
        /// What the body said.
        api_version: String,
        /// What the body said.
        kind: String,
    },
    /// No `request` in the review.
    #[error("AdmissionReview has no request")]
    MissingRequest,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireReview {
    #[serde(default, deserialize_with = "nullable")]
    api_version: String,
    #[serde(default, deserialize_with = "nullable")]
    kind: String,
    #[serde(default)]
    request: Option<AdmissionRequest>,
}

/// Decodes an AdmissionReview body.
///
/// # Errors
/// [`ReviewError`] when the body is empty, not JSON, not a v1/v1beta1 AdmissionReview, or has no request.
pub fn decode_review(body: &[u8]) -> Result<AdmissionReview, ReviewError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ReviewError::Empty);
    }
    // UTF-8 checked once over the whole body (word at a time), so the parser need not check strings again.
    let text = std::str::from_utf8(body).map_err(|e| {
        ReviewError::Malformed(format!("invalid UTF-8 at byte {}", e.valid_up_to()))
    })?;
    let wire: WireReview =
        serde_json::from_str(text).map_err(|e| ReviewError::Malformed(e.to_string()))?;
    let api_version = match (wire.api_version.as_str(), wire.kind.as_str()) {
        (V1, "AdmissionReview") => V1,
        (V1BETA1, "AdmissionReview") => V1BETA1,
        _ => {
            return Err(ReviewError::WrongType {
                api_version: wire.api_version,
                kind: wire.kind,
            });
        }
    };
    let request = wire.request.ok_or(ReviewError::MissingRequest)?;
    Ok(AdmissionReview {
        api_version,
        request,
    })
}

/// `response.status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    /// HTTP-like code: 200 allow, 403 denial, 4xx/5xx errors.
    pub code: u16,
    /// Machine-readable reason (`Forbidden`), when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Human-readable message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// `response` of an AdmissionReview.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionResponse {
    /// The request's uid.
    pub uid: String,
    /// The verdict.
    pub allowed: bool,
    /// Code and message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    /// Base64 of the JSON patch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    /// `JSONPatch` when `patch` is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch_type: Option<String>,
    /// Warnings for the client.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Audit annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub audit_annotations: BTreeMap<String, String>,
}

impl AdmissionResponse {
    /// The answer for a verdict: allow = `{code: 200}`, deny = its code/reason/message, plus the patch.
    pub fn from_verdict(uid: &str, verdict: &Verdict) -> Self {
        let (allowed, status) = match &verdict.decision {
            Decision::Allow => (
                true,
                Status {
                    code: 200,
                    reason: None,
                    message: verdict.allow_message.clone(),
                },
            ),
            Decision::Deny(d) => (
                false,
                Status {
                    code: d.code,
                    reason: d.reason.map(str::to_owned),
                    message: Some(d.message.clone()),
                },
            ),
        };
        let (patch, patch_type) = if allowed && !verdict.patch.is_empty() {
            (
                Some(crate::patch::encode_base64(&verdict.patch)),
                Some("JSONPatch".to_owned()),
            )
        } else {
            (None, None)
        };
        Self {
            uid: uid.to_owned(),
            allowed,
            status: Some(status),
            patch,
            patch_type,
            warnings: verdict.warnings.clone(),
            audit_annotations: verdict.audit_annotations.clone(),
        }
    }

    /// `errored(code, err)`: not allowed, code and message, no reason (controller-runtime's shape).
    pub fn errored(uid: &str, code: u16, message: impl Into<String>) -> Self {
        Self {
            uid: uid.to_owned(),
            allowed: false,
            status: Some(Status {
                code,
                reason: None,
                message: Some(message.into()),
            }),
            patch: None,
            patch_type: None,
            warnings: Vec::new(),
            audit_annotations: BTreeMap::new(),
        }
    }

    /// The answer for a webhook that could not decide.
    pub fn from_error(uid: &str, err: &WebhookError) -> Self {
        Self::errored(uid, err.http_code(), err.to_string())
    }

    /// The patch bytes, decoded from base64 (tests and the `review` command).
    pub fn patch_bytes(&self) -> Option<Vec<u8>> {
        self.patch
            .as_ref()
            .and_then(|p| base64::engine::general_purpose::STANDARD.decode(p).ok())
    }
}

/// Appends `value` as JSON (strings, numbers and maps of them: serialising cannot fail); plain strings go
/// through [`write_str`].
fn write_json(out: &mut Vec<u8>, value: &impl Serialize) {
    let _ = serde_json::to_writer(&mut *out, value);
}

/// Encodes a response in the request's AdmissionReview version; `None` writes no apiVersion/kind (the shape
/// controller-runtime uses for bodies it could not decode).
///
/// The bytes are those of serialising `{apiVersion, kind, response}` with serde, written field by field so
/// that the patch, most of the answer, is checked for escapes in one vectorized pass and copied whole.
pub fn encode_review(api_version: Option<&str>, response: &AdmissionResponse) -> Vec<u8> {
    let patch_len = response.patch.as_ref().map_or(0, String::len);
    let mut out = Vec::with_capacity(192 + response.uid.len() + patch_len);
    out.push(b'{');
    if let Some(version) = api_version {
        out.extend_from_slice(b"\"apiVersion\":");
        write_str(&mut out, version);
        out.extend_from_slice(b",\"kind\":\"AdmissionReview\",");
    }
    out.extend_from_slice(b"\"response\":{\"uid\":");
    write_str(&mut out, &response.uid);
    out.extend_from_slice(if response.allowed {
        b",\"allowed\":true"
    } else {
        b",\"allowed\":false"
    });
    if let Some(status) = &response.status {
        out.extend_from_slice(b",\"status\":");
        write_json(&mut out, status);
    }
    if let Some(patch) = &response.patch {
        out.extend_from_slice(b",\"patch\":");
        write_str(&mut out, patch);
    }
    if let Some(patch_type) = &response.patch_type {
        out.extend_from_slice(b",\"patchType\":");
        write_str(&mut out, patch_type);
    }
    if !response.warnings.is_empty() {
        out.extend_from_slice(b",\"warnings\":");
        write_json(&mut out, &response.warnings);
    }
    if !response.audit_annotations.is_empty() {
        out.extend_from_slice(b",\"auditAnnotations\":");
        write_json(&mut out, &response.audit_annotations);
    }
    out.extend_from_slice(b"}}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::Denial;
    use serde_json::json;

    fn review(api_version: &str) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "apiVersion": api_version, "kind": "AdmissionReview",
            "request": {"uid": "u1", "kind": {"group": "", "version": "v1", "kind": "Service"},
                        "resource": {"group": "", "version": "v1", "resource": "services"},
                        "name": "svc1", "namespace": "default", "operation": "DELETE",
                        "userInfo": {"username": "alice"}, "object": null,
                        "oldObject": {"metadata": {"name": "svc1"}},
                        "options": {"dryRun": ["All"]}}
        }))
        .unwrap()
    }

    #[test]
    fn decodes_v1_and_v1beta1_and_remembers_the_version() {
        assert_eq!(decode_review(&review(V1)).unwrap().api_version, V1);
        let r = decode_review(&review(V1BETA1)).unwrap();
        assert_eq!(r.api_version, V1BETA1);
        assert_eq!(r.request.uid, "u1");
        assert_eq!(r.request.operation, Operation::Delete);
        assert!(r.request.object.is_none(), "null object reads as absent");
        assert_eq!(r.request.object_labels()[1], Some(BTreeMap::new()));
        assert!(r.request.is_dry_run(), "dryRun in DeleteOptions counts");
    }

    #[test]
    fn rejects_bodies_that_are_not_reviews() {
        assert_eq!(decode_review(b"").unwrap_err(), ReviewError::Empty);
        assert_eq!(decode_review(b"  \n").unwrap_err(), ReviewError::Empty);
        assert!(matches!(
            decode_review(b"not json"),
            Err(ReviewError::Malformed(_))
        ));
        assert_eq!(
            decode_review(b"{\"kind\":\"\xff\"}").unwrap_err(),
            ReviewError::Malformed("invalid UTF-8 at byte 9".into())
        );
        assert!(matches!(
            decode_review(b"[1,2]"),
            Err(ReviewError::Malformed(_))
        ));
        assert!(matches!(
            decode_review(br#"{"apiVersion":"v1","kind":"Pod"}"#),
            Err(ReviewError::WrongType { .. })
        ));
        assert_eq!(
            decode_review(br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#)
                .unwrap_err(),
            ReviewError::MissingRequest
        );
        assert_eq!(
            decode_review(
                br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":null}"#
            )
            .unwrap_err(),
            ReviewError::MissingRequest
        );
        assert!(matches!(
            decode_review(br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x","operation":"EXPLODE"}}"#),
            Err(ReviewError::Malformed(_))
        ));
    }

    #[test]
    fn encodes_the_patch_as_a_base64_string_and_echoes_version_and_uid() {
        let mut v = Verdict::allow();
        v.patch = serde_json::from_value(
            json!([{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}]),
        )
        .unwrap();
        let bytes = encode_review(Some(V1BETA1), &AdmissionResponse::from_verdict("u9", &v));
        let out: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(out["apiVersion"], V1BETA1);
        assert_eq!(out["kind"], "AdmissionReview");
        assert_eq!(out["response"]["uid"], "u9");
        assert_eq!(out["response"]["allowed"], true);
        assert_eq!(out["response"]["status"], json!({"code": 200}));
        assert_eq!(out["response"]["patchType"], "JSONPatch");
        let patch = base64::engine::general_purpose::STANDARD
            .decode(out["response"]["patch"].as_str().unwrap())
            .unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&patch).unwrap(),
            json!([{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}])
        );
    }

    #[test]
    fn denial_has_code_and_message_and_no_patch() {
        let v = Verdict::deny(Denial::forbidden("no"));
        let out: Value = serde_json::from_slice(&encode_review(
            Some(V1),
            &AdmissionResponse::from_verdict("u", &v),
        ))
        .unwrap();
        assert_eq!(
            out["response"],
            json!({"uid": "u", "allowed": false, "status": {"code": 403, "message": "no"}})
        );
    }

    #[test]
    fn the_answer_is_byte_for_byte_what_serde_writes() {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Wire<'a> {
            #[serde(skip_serializing_if = "Option::is_none")]
            api_version: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            kind: Option<&'a str>,
            response: &'a AdmissionResponse,
        }
        let mut patched = Verdict::allow();
        patched.patch = serde_json::from_value(
            json!([{"op": "add", "path": "/metadata/labels", "value": {"a": "b\"\u{e9}"}}]),
        )
        .unwrap();
        patched.warnings = vec!["w \"1\"".into(), "w2".into()];
        patched.audit_annotations.insert("k".into(), "v\n".into());
        let mut not_base64 = AdmissionResponse::from_verdict("u", &patched);
        not_base64.patch = Some("a\"b\\c\u{1}".into());
        let responses = [
            AdmissionResponse::from_verdict("u\"1", &patched),
            AdmissionResponse::from_verdict("u", &Verdict::deny(Denial::forbidden("no \"x\""))),
            AdmissionResponse::errored("", 400, "bad\tbody"),
            AdmissionResponse {
                status: None,
                ..AdmissionResponse::errored("u", 500, "m")
            },
            not_base64,
        ];
        for response in &responses {
            for api_version in [None, Some(V1), Some(V1BETA1)] {
                let wanted = serde_json::to_vec(&Wire {
                    api_version,
                    kind: api_version.map(|_| "AdmissionReview"),
                    response,
                })
                .unwrap();
                assert_eq!(
                    String::from_utf8(encode_review(api_version, response)).unwrap(),
                    String::from_utf8(wanted).unwrap()
                );
            }
        }
    }

    #[test]
    fn early_errors_carry_no_api_version() {
        let out: Value = serde_json::from_slice(&encode_review(
            None,
            &AdmissionResponse::errored("", 400, "bad"),
        ))
        .unwrap();
        assert_eq!(
            out,
            json!({"response": {"uid": "", "allowed": false, "status": {"code": 400, "message": "bad"}}})
        );
    }
}
