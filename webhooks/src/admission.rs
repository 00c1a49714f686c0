//! The `admission.k8s.io` AdmissionReview wire format, v1 and v1beta1.
//!
//! Requests keep `object` / `oldObject` as raw JSON text ([`RawJson`]) so that patches are computed against
//! exactly what the apiserver sent (DECISIONS 13). Responses encode `patch` as a base64 string, as the
//! apiserver's Go types do (kube-core serialises it as an array of numbers, three times larger).
//! Reference: <https://kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/>.

use std::borrow::Cow;
use std::collections::BTreeMap;

use base64::Engine;
use serde::de::IntoDeserializer;
use serde::{Deserialize, Serialize};

use crate::de::nullable;
use serde_json::Value;

use crate::WebhookError;
use crate::json::{self, Cursor, RawJson};
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
    pub object: Option<RawJson>,
    /// The existing object (UPDATE, DELETE); `null` is read as absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_object: Option<RawJson>,
    /// Dry-run request: side effects must be suppressed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
    /// Operation options (CreateOptions, DeleteOptions, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<RawJson>,
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
    pub fn old_object(&self) -> Option<&RawJson> {
        self.old_object.as_ref().filter(|v| !is_empty_object(v))
    }

    /// The new object when present and not an empty object.
    pub fn object(&self) -> Option<&RawJson> {
        self.object.as_ref().filter(|v| !is_empty_object(v))
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
pub fn labels_of(obj: &RawJson) -> BTreeMap<String, String> {
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

fn is_empty_object(v: &RawJson) -> bool {
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

/// A key as written, when it has no escape: the cursor decodes an escaped key (`Owned`), and reads one
/// it cannot decode (a lone surrogate) as `""`, so an empty key is left to serde too.
fn plain(key: Cow<'_, str>) -> Result<&str, Unusual> {
    match key {
        Cow::Borrowed(k) if !k.is_empty() => Ok(k),
        _ => unusual(),
    }
}

/// Calls `each` with every member of the object at the cursor and its key ([`plain`]); a value that is
/// not an object, or a key that is not plain, is left to serde.
fn members<'a>(
    c: &mut Cursor<'a>,
    mut each: impl FnMut(&mut Cursor<'a>, &'a str) -> Result<(), Unusual>,
) -> Result<(), Unusual> {
    c.object(|c, key| each(c, plain(key)?))
        .unwrap_or_else(unusual)
}

/// Decodes an AdmissionReview body.
///
/// # Errors
/// [`ReviewError`] when the body is empty, not JSON, not a v1/v1beta1 AdmissionReview, or has no request.
pub fn decode_review(body: &[u8]) -> Result<AdmissionReview, ReviewError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ReviewError::Empty);
    }
    // UTF-8 checked once over the whole body, so the readers need not check strings again.
    let text = std::str::from_utf8(body).map_err(|e| {
        ReviewError::Malformed(format!("invalid UTF-8 at byte {}", e.valid_up_to()))
    })?;
    let Ok(ends) = json::scan(text, json::MAX_ENDS) else {
        return whole(text).and_then(checked_review);
    };
    // The review is read from the text checked once; a body of unusual shape goes to serde whole, which
    // then decides, and words any error with its place in the body as sent.
    let wire = match direct(text, &ends) {
        Some(wire) => wire,
        None => whole(text)?,
    };
    checked_review(wire)
}

/// Not read here: the caller reads the body another way.
type Unusual = String;

/// `Err` for a member [`direct`] leaves to serde.
fn unusual<T>() -> Result<T, Unusual> {
    Err(String::new())
}

/// Sets a member read once; a second one is left to serde (which refuses a field written twice).
fn once<T>(slot: &mut Option<T>, value: T) -> Result<(), Unusual> {
    match slot.replace(value) {
        None => Ok(()),
        Some(_) => unusual(),
    }
}

/// A string or `null` (`None`) at the cursor.
fn string_or_null(c: &mut Cursor<'_>) -> Result<Option<String>, Unusual> {
    match c.string() {
        Some(Some(s)) => Ok(Some(s.into_owned())),
        Some(None) => unusual(),
        None if c.null() => Ok(None),
        None => unusual(),
    }
}

/// A string at the cursor.
fn string(c: &mut Cursor<'_>) -> Result<String, Unusual> {
    string_or_null(c)?.map_or_else(unusual, Ok)
}

/// A list of strings at the cursor.
fn strings(c: &mut Cursor<'_>) -> Result<Vec<String>, Unusual> {
    if c.peek() != Some(b'[') {
        return unusual();
    }
    c.i += 1;
    let mut out = Vec::new();
    while c.peek().is_some_and(|b| b != b']') {
        out.push(string(c)?);
        c.separator();
    }
    c.i += 1;
    Ok(out)
}

/// An object of the three string members `names` (each absent or `null` read as `""`), or `null` (`None`).
fn three(c: &mut Cursor<'_>, names: [&str; 3]) -> Result<Option<[String; 3]>, Unusual> {
    if c.null() {
        return Ok(None);
    }
    let mut read: [Option<Option<String>>; 3] = Default::default();
    members(c, |c, key| match names.iter().position(|&n| n == key) {
        Some(i) => once(&mut read[i], string_or_null(c)?),
        None => {
            c.value();
            Ok(())
        }
    })?;
    Ok(Some(read.map(|v| v.flatten().unwrap_or_default())))
}

fn gvk(c: &mut Cursor<'_>) -> Result<Option<GroupVersionKind>, Unusual> {
    Ok(
        three(c, ["group", "version", "kind"])?.map(|[group, version, kind]| GroupVersionKind {
            group,
            version,
            kind,
        }),
    )
}

fn gvr(c: &mut Cursor<'_>) -> Result<Option<GroupVersionResource>, Unusual> {
    Ok(
        three(c, ["group", "version", "resource"])?.map(|[group, version, resource]| {
            GroupVersionResource {
                group,
                version,
                resource,
            }
        }),
    )
}

/// `userInfo` at the cursor (`null`: `None`).
fn user_info(c: &mut Cursor<'_>) -> Result<Option<UserInfo>, Unusual> {
    if c.null() {
        return Ok(None);
    }
    let (mut username, mut uid, mut groups, mut extra) = (None, None, None, None);
    members(c, |c, key| match key {
        "username" => once(&mut username, string_or_null(c)?),
        "uid" => once(&mut uid, string(c)?),
        "groups" => once(&mut groups, strings(c)?),
        "extra" => {
            let mut map = BTreeMap::new();
            members(c, |c, key| {
                map.insert(key.to_owned(), strings(c)?);
                Ok(())
            })?;
            once(&mut extra, map)
        }
        _ => {
            c.value();
            Ok(())
        }
    })?;
    Ok(Some(UserInfo {
        username: username.flatten().unwrap_or_default(),
        uid: uid.unwrap_or_default(),
        groups: groups.unwrap_or_default(),
        extra: extra.unwrap_or_default(),
    }))
}

/// `request` at the cursor, an object.
fn request(text: &str, ends: &json::Ends, c: &mut Cursor<'_>) -> Result<AdmissionRequest, Unusual> {
    let (mut uid, mut kind, mut resource, mut sub_resource) = (None, None, None, None);
    let (mut request_kind, mut request_resource, mut request_sub_resource) = (None, None, None);
    let (mut name, mut namespace, mut operation, mut user) = (None, None, None, None);
    let (mut object, mut old_object, mut dry_run, mut options) = (None, None, None, None);
    members(c, |c, key| {
        match key {
            "uid" => once(&mut uid, string_or_null(c)?)?,
            "kind" => once(&mut kind, gvk(c)?)?,
            "resource" => once(&mut resource, gvr(c)?)?,
            "subResource" => once(&mut sub_resource, string_or_null(c)?)?,
            "requestKind" => once(&mut request_kind, gvk(c)?)?,
            "requestResource" => once(&mut request_resource, gvr(c)?)?,
            "requestSubResource" => once(&mut request_sub_resource, string_or_null(c)?)?,
            "name" => once(&mut name, string_or_null(c)?)?,
            "namespace" => once(&mut namespace, string_or_null(c)?)?,
            "operation" => {
                // Spelled as serde reads it (the derive's names).
                let spelled = string(c)?;
                let op = Operation::deserialize(spelled.as_str().into_deserializer())
                    .map_err(|_: serde::de::value::Error| String::new())?;
                once(&mut operation, op)?;
            }
            "userInfo" => once(&mut user, user_info(c)?)?,
            "dryRun" => {
                let value = match c.value() {
                    "true" => Some(true),
                    "false" => Some(false),
                    "null" => None,
                    _ => return unusual(),
                };
                once(&mut dry_run, value)?;
            }
            key @ ("object" | "oldObject" | "options") => {
                let value = c.value();
                let span = c.i - value.len()..c.i;
                let raw = (value != "null").then(|| RawJson::checked(text, ends, span));
                let slot = match key {
                    "object" => &mut object,
                    "oldObject" => &mut old_object,
                    _ => &mut options,
                };
                once(slot, raw)?;
            }
            _ => {
                c.value();
            }
        }
        Ok(())
    })?;
    Ok(AdmissionRequest {
        uid: uid.flatten().unwrap_or_default(),
        kind: kind.flatten().unwrap_or_default(),
        resource: resource.flatten().unwrap_or_default(),
        sub_resource: sub_resource.flatten().unwrap_or_default(),
        request_kind: request_kind.flatten(),
        request_resource: request_resource.flatten(),
        request_sub_resource: request_sub_resource.flatten(),
        name: name.flatten().unwrap_or_default(),
        namespace: namespace.flatten(),
        operation: operation.map_or_else(unusual, Ok)?,
        user_info: user.flatten().unwrap_or_default(),
        object: object.flatten(),
        old_object: old_object.flatten(),
        dry_run: dry_run.flatten(),
        options: options.flatten(),
    })
}

/// The review read straight from text [`json::scan`] accepted, when it has the usual shape: each member
/// the types name holds what serde takes for it (`null` included), none is written twice, no key has an
/// escape. Members the types do not name are skipped, as serde skips them. `None` for anything else: the
/// caller reads the body through serde, which decides, and words any error.
fn direct(text: &str, ends: &json::Ends) -> Option<WireReview> {
    let (mut api_version, mut kind, mut req) = (None, None, None);
    let mut c = Cursor::new(text, ends);
    members(&mut c, |c, key| {
        match key {
            "apiVersion" => once(&mut api_version, string_or_null(c)?)?,
            "kind" => once(&mut kind, string_or_null(c)?)?,
            "request" => {
                let read = match c.peek() {
                    Some(b'{') => Some(request(text, ends, c)?),
                    Some(b'n') if c.null() => None,
                    _ => return unusual(),
                };
                once(&mut req, read)?;
            }
            _ => {
                c.value();
            }
        }
        Ok(())
    })
    .ok()?;
    Some(WireReview {
        api_version: api_version.flatten().unwrap_or_default(),
        kind: kind.flatten().unwrap_or_default(),
        request: req.flatten(),
    })
}

/// The review read by serde from the body as a whole (serde's own message when it is not one).
fn whole(text: &str) -> Result<WireReview, ReviewError> {
    serde_json::from_str(text).map_err(|e| ReviewError::Malformed(e.to_string()))
}

fn checked_review(wire: WireReview) -> Result<AdmissionReview, ReviewError> {
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
    /// The JSON patch (base64 on the wire).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<PatchText>,
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
                Some(PatchText(crate::json::patch::to_json(&verdict.patch))),
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

    /// The patch's JSON text (tests and the `review` command).
    pub fn patch_bytes(&self) -> Option<Vec<u8>> {
        self.patch.as_ref().map(|p| p.0.clone())
    }
}

/// `patch` of an [`AdmissionResponse`]: the JSON patch's text, which the wire carries as a string of its
/// base64 (standard alphabet, padded, as Go marshals `[]byte`). Kept as the text, so that
/// [`encode_review`] writes the letters straight into the answer. Decoding a response takes the base64 back, and refuses a
/// string that is not base64.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchText(pub Vec<u8>);

impl Serialize for PatchText {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut letters = String::new();
        json::write_base64(&mut letters, &self.0);
        serializer.serialize_str(&letters)
    }
}

impl<'de> Deserialize<'de> for PatchText {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let letters = String::deserialize(deserializer)?;
        base64::engine::general_purpose::STANDARD
            .decode(letters.as_bytes())
            .map(PatchText)
            .map_err(|e| serde::de::Error::custom(format_args!("patch: not base64: {e}")))
    }
}

/// Appends `value` as serde writes it (strings, numbers and maps of them: serialising cannot fail); plain
/// strings go through [`json::write_string`].
fn write_json(out: &mut String, value: &impl Serialize) {
    out.push_str(&serde_json::to_string(value).unwrap_or_default());
}

/// Encodes a response in the request's AdmissionReview version; `None` writes no apiVersion/kind (the shape
/// controller-runtime uses for bodies it could not decode).
///
/// The bytes are those of serialising `{apiVersion, kind, response}` with serde, written field by field so
/// that the patch, most of the answer, goes straight from its text to its base64 letters in the answer.
pub fn encode_review(api_version: Option<&str>, response: &AdmissionResponse) -> Vec<u8> {
    let patch_len = response
        .patch
        .as_ref()
        .map_or(0, |p| p.0.len().div_ceil(3) * 4);
    let mut out = String::with_capacity(192 + response.uid.len() + patch_len);
    out.push('{');
    if let Some(version) = api_version {
        out.push_str("\"apiVersion\":");
        json::write_string(&mut out, version);
        out.push_str(",\"kind\":\"AdmissionReview\",");
    }
    out.push_str("\"response\":{\"uid\":");
    json::write_string(&mut out, &response.uid);
    out.push_str(if response.allowed {
        ",\"allowed\":true"
    } else {
        ",\"allowed\":false"
    });
    if let Some(status) = &response.status {
        out.push_str(",\"status\":");
        write_json(&mut out, status);
    }
    if let Some(patch) = &response.patch {
        // Base64 letters need no escape.
        out.push_str(",\"patch\":\"");
        json::write_base64(&mut out, &patch.0);
        out.push('"');
    }
    if let Some(patch_type) = &response.patch_type {
        out.push_str(",\"patchType\":");
        json::write_string(&mut out, patch_type);
    }
    if !response.warnings.is_empty() {
        out.push_str(",\"warnings\":");
        write_json(&mut out, &response.warnings);
    }
    if !response.audit_annotations.is_empty() {
        out.push_str(",\"auditAnnotations\":");
        write_json(&mut out, &response.audit_annotations);
    }
    out.push_str("}}");
    out.into_bytes()
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

    /// Every body decodes as serde alone decodes it: the same request (raw members included) or the same
    /// error, message included, whether it is read directly or left to serde.
    #[test]
    fn the_direct_read_decodes_as_serde_reads_the_whole_body() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut bodies: Vec<String> = ["examples/requests", "tests/fixtures"]
            .iter()
            .flat_map(|dir| walk(&root.join(dir)))
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .filter_map(|p| std::fs::read_to_string(p).ok())
            .filter(|t| t.contains("AdmissionReview"))
            .collect();
        assert!(bodies.len() > 10, "found {} review bodies", bodies.len());
        assert!(
            bodies.iter().all(|b| read_directly(b)),
            "the reviews an apiserver sends are read without serde"
        );
        let head = r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","#;
        for request in [
            r#""request":{"uid":"u","operation":"CREATE","object":{"a":[1,{"b":"c\"}"]}},"oldObject":null}"#,
            r#""request":{"uid":"u","operation":"CREATE","object" : { } , "options":{"dryRun":["All"]}, "name":"n"}"#,
            r#""request":{"operation":"DELETE","oldObject":{"x":1},"oldObject":{"x":2}}"#,
            r#""request":{"operation":"DELETE","old\u004fbject":{"x":1}}"#,
            r#""request":{"operation":"CREATE","object":{}},"request":{"operation":"DELETE"}"#,
            r#""request":{"operation":"CREATE","object":{}},"request":null"#,
            r#""request":null,"request":{"operation":"CREATE"}"#,
            r#""request":"yes""#,
            r#""request":{"operation":"EXPLODE","object":{"spec":{}}}"#,
            r#""request":{"uid":7,"operation":"CREATE","object":{}}"#,
            r#""request":{"operation":"CREATE","object":{"a":01}}"#,
            r#""request":{"operation":"CREATE","object":{"a":"tab	"}}"#,
            r#""request":{"operation":"CREATE","object":[1,2,]}"#,
            r#""requ\u0065st":{"operation":"CREATE","object":{}}"#,
            r#""request":{"operation":"CREATE","unknown":{"deep":[[[]]]},"object":true}"#,
            r#""request":{"operation":"CREATE","obj\ud800ect":{},"object":{}}"#,
            r#""request":{"operation":"CREATE","":1,"object":{}}"#,
            r#""":{"x":1},"request":{"operation":"CREATE","object":{}}"#,
            // Left to serde, which decides.
            r#""request":{"operation":"CREATE","userInfo":{"uid":null}}"#,
            r#""request":{"operation":"CREATE","userInfo":{"groups":null}}"#,
            r#""request":{"operation":"CREATE","userInfo":{"groups":["a",null]}}"#,
            r#""request":{"operation":"CREATE","userInfo":{"extra":null}}"#,
            r#""request":{"operation":"CREATE","userInfo":{"extra":{"k":"v"}}}"#,
            r#""request":{"operation":"CREATE","userInfo":{"username":"a","username":"b"}}"#,
            r#""request":{"operation":"CREATE","userInfo":"me"}"#,
            r#""request":{"operation":"CREATE","kind":{"kind":"Pod","kind":"Pod"}}"#,
            r#""request":{"operation":"CREATE","kind":"Pod"}"#,
            r#""request":{"operation":"CREATE","resource":[]}"#,
            r#""request":{"operation":"CREATE","dryRun":"true"}"#,
            r#""request":{"operation":"CREATE","dryRun":1}"#,
            r#""request":{"operation":"CREATE","name":1}"#,
            r#""request":{"operation":"CREATE","namespace":"a","namespace":"b"}"#,
            r#""request":{"operation":null}"#,
            r#""request":{"operation":"create"}"#,
            r#""request":{"uid":"u"}"#,
            r#""request":{"operation":"CREATE","uid":"\ud800"}"#,
            r#""request":{"operation":"CREATE","object":{},"object":null}"#,
            r#""request":{"operation":"CREATE"},"apiVersion":"admission.k8s.io/v1beta1""#,
            r#""request":{"operation":"CREATE"},"kind":null"#,
            r#""request":{"operation":"CREATE"},"kind":7"#,
            r#""request":[]"#,
        ] {
            bodies.push(format!("{head}{request}}}"));
        }
        // Read without serde when each member is what serde takes for it.
        for request in [
            r#""request":{"uid":null,"kind":null,"resource":{"group":null,"resource":"pods","x":[1]},"subResource":null,"requestKind":null,"requestResource":null,"requestSubResource":null,"name":null,"namespace":null,"operation":"UPDATE","userInfo":null,"object":null,"oldObject":null,"dryRun":null,"options":null}"#,
            r#""request":{"uid":"a\"b\u00e9\n","kind":{"group":"apps","version":"v1","kind":"Deployment","kind2":"x"},"requestKind":{"group":"apps","version":"v1beta1","kind":"Deployment"},"requestResource":{"group":"apps","version":"v1beta1","resource":"deployments"},"requestSubResource":"scale","namespace":"","operation":"CONNECT","dryRun":true,"object":{}}"#,
            r#""request":{"operation":"DELETE","userInfo":{"username":null,"uid":"u","groups":[],"extra":{"a":["1","2"],"b":[],"a":["3"]},"more":{}},"dryRun":false}"#,
            r#""request":{"operation":"CREATE","userInfo":{"username":"x","groups":["a", "b\tc" ]}, "object" : {"a":1} }"#,
            // The group/version/kind spellings around the apiserver's compact one, read in one pass.
            r#""request":{"kind":{"group":"","version":"v1","kind":"Pod"},"requestKind":{"group":"","version":"v1","kind":"Pod","x":1},"operation":"CREATE"}"#,
            r#""request":{"kind":{"version":"v1","group":"","kind":"Pod"},"requestKind":{"group":"","version":"v\u0031","kind":"Pod"},"operation":"CREATE"}"#,
            r#""request":{"kind":{"group":"" ,"version":"v1","kind":"Pod"},"requestKind":{"group":"","version":"v1"},"operation":"CREATE"}"#,
            r#""request":{"kind":{"group":"","version":"v1","kind":"Pod" },"requestKind":{"group":"a\"b","version":"v1","kind":"P"},"operation":"CREATE"}"#,
            r#""request":{"kind":{"group":"","version":"v1","kinds":"Pod"},"requestKind":{"group":"","version":"v1","kind":""},"operation":"CREATE"}"#,
            r#""request":{"kind": {"group":"","version":"v1","kind":"Pod"},"requestKind":{},"operation":"CREATE"}"#,
        ] {
            let body = format!("{head}{request}}}");
            assert!(read_directly(&body), "{body}");
            bodies.push(body);
        }
        // Deeper than the check follows: decoded by serde alone.
        let deep = "[".repeat(2 * json::MAX_NESTING) + &"]".repeat(2 * json::MAX_NESTING);
        bodies.push(format!(
            r#"{head}"request":{{"operation":"CREATE","object":{{"a":{deep}}}}}}}"#
        ));
        assert!(json::scan(bodies.last().expect("pushed"), json::MAX_ENDS).is_err());
        for body in &bodies {
            let by_serde = whole(body).and_then(checked_review);
            assert_eq!(
                format!("{:?}", decode_review(body.as_bytes())),
                format!("{by_serde:?}"),
                "{body}"
            );
        }
    }

    /// Whether `body` takes the direct read (not serde's).
    fn read_directly(body: &str) -> bool {
        json::scan(body, json::MAX_ENDS)
            .ok()
            .and_then(|ends| direct(body, &ends))
            .is_some()
    }

    fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .flat_map(|e| {
                let path = e.path();
                if path.is_dir() {
                    walk(&path)
                } else {
                    vec![path]
                }
            })
            .collect()
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

    /// An allowing verdict with the patch `ops`.
    fn patching(ops: Value) -> Verdict {
        let mut v = Verdict::allow();
        v.patch = crate::json::patch::from_json(ops).unwrap();
        v
    }

    #[test]
    fn encodes_the_patch_as_a_base64_string_and_echoes_version_and_uid() {
        let v = patching(json!([{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}]));
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
    fn a_response_reads_back_from_its_wire_form_and_a_patch_must_be_base64() {
        let v =
            patching(json!([{"op": "add", "path": "/metadata/labels", "value": {"a": "b\u{e9}"}}]));
        let response = AdmissionResponse::from_verdict("u", &v);
        let wire: Value = serde_json::from_slice(&encode_review(Some(V1), &response)).unwrap();
        let back: AdmissionResponse = serde_json::from_value(wire["response"].clone()).unwrap();
        assert_eq!(back, response);
        assert_eq!(
            back.patch_bytes().unwrap(),
            r#"[{"op":"add","path":"/metadata/labels","value":{"a":"bé"}}]"#.as_bytes()
        );
        let err = serde_json::from_value::<AdmissionResponse>(
            json!({"uid": "u", "allowed": true, "patch": "a\"b"}),
        )
        .unwrap_err();
        assert!(err.to_string().contains("patch: not base64"), "{err}");
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
        let mut patched = patching(
            json!([{"op": "add", "path": "/metadata/labels", "value": {"a": "b\"\u{e9}"}}]),
        );
        patched.warnings = vec!["w \"1\"".into(), "w2".into()];
        patched.audit_annotations.insert("k".into(), "v\n".into());
        let responses = [
            AdmissionResponse::from_verdict("u\"1", &patched),
            AdmissionResponse::from_verdict("u", &Verdict::deny(Denial::forbidden("no \"x\""))),
            AdmissionResponse::errored("", 400, "bad\tbody"),
            AdmissionResponse {
                status: None,
                ..AdmissionResponse::errored("u", 500, "m")
            },
            AdmissionResponse {
                patch: Some(PatchText((0..=255).collect())),
                ..AdmissionResponse::errored("u", 500, "m")
            },
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

    /// Values a request's members may hold, as text: what serde takes for some members and refuses for
    /// others.
    const VALUES: [&str; 17] = [
        r#""s""#,
        r#""a\"b\u00e9\n""#,
        r#""\ud800""#,
        r#""CREATE""#,
        r#""CONNECT""#,
        "null",
        "true",
        "false",
        "7",
        "[]",
        r#"["g1", "g\u0032"]"#,
        r#"["g", null]"#,
        "{}",
        r#"{"group": "apps", "version": null, "kind": "K", "resource": "r", "x": [1]}"#,
        r#"{"username": "u", "uid": "i", "groups": ["g"], "extra": {"k": ["v"], "j": []}}"#,
        r#"{"uid": null}"#,
        r#"{"a": {"b": [1, "c"]}}"#,
    ];

    /// A request's members, one unknown and two keys serde reads as members but escaped or empty, each with
    /// the indexes in [`VALUES`] it usually holds.
    const REQUEST_MEMBERS: [(&str, &[usize]); 18] = [
        ("uid", &[0, 1, 5]),
        ("kind", &[5, 12, 13]),
        ("resource", &[5, 12, 13]),
        ("subResource", &[0, 5]),
        ("requestKind", &[5, 13]),
        ("requestResource", &[5, 13]),
        ("requestSubResource", &[0, 5]),
        ("name", &[0, 1, 5]),
        ("namespace", &[0, 5]),
        ("operation", &[3, 4]),
        ("userInfo", &[5, 12, 14]),
        ("object", &[5, 12, 16]),
        ("oldObject", &[5, 12, 16]),
        ("dryRun", &[5, 6, 7]),
        ("options", &[5, 16]),
        ("unknown", &[2, 8, 10, 16]),
        (r"n\u0061me", &[0]),
        ("", &[0]),
    ];

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4096))]

        /// Requests of usual members holding usual values, with now and then a value of another type, a
        /// repeated member, an escaped or empty key: decoding gives what serde gives reading the body whole,
        /// the request or the error.
        #[test]
        fn any_request_decodes_as_serde_reads_it(
            members in proptest::collection::vec(
                (0..REQUEST_MEMBERS.len(), 0..8usize, 0..VALUES.len(), 0..REQUEST_MEMBERS.len()),
                0..10,
            ),
            request_null in proptest::bool::weighted(0.05),
        ) {
            let mut fields = Vec::new();
            for &(member, usual, other, second) in &members {
                let (key, values) = REQUEST_MEMBERS[member];
                // Mostly the member's own values; otherwise any.
                let value = if usual < 7 { VALUES[values[usual % values.len()]] } else { VALUES[other] };
                // Mostly members seen once; otherwise an escaped, empty or repeated key.
                if member >= 16 && second % 3 != 0 {
                    continue;
                }
                if fields.iter().any(|f: &String| f.starts_with(&format!("\"{key}\":"))) && second % 4 != 0 {
                    continue;
                }
                fields.push(format!(r#""{key}": {value}"#));
            }
            let request = if request_null { "null".to_owned() } else { format!("{{{}}}", fields.join(",")) };
            let body = format!(r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{request}}}"#);
            let by_serde = whole(&body).and_then(checked_review);
            proptest::prop_assert_eq!(
                format!("{:?}", decode_review(body.as_bytes())),
                format!("{by_serde:?}"),
                "{}", body
            );
        }
    }

    /// A request with every member holding a usual value is read directly (the property test above checks
    /// the reads agree; reading a member wrongly fails it, as tried by breaking `dryRun`, `uid` and
    /// `username`).
    #[test]
    fn a_request_with_every_member_is_read_directly() {
        let body = |fields: &str| {
            format!(
                r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{{fields}}}}}"#
            )
        };
        let usual: Vec<String> = REQUEST_MEMBERS[..15]
            .iter()
            .map(|(key, values)| format!(r#""{key}": {}"#, VALUES[values[values.len() - 1]]))
            .collect();
        assert!(
            read_directly(&body(&usual.join(","))),
            "{}",
            usual.join(",")
        );
    }
}
