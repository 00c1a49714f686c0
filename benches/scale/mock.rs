//! An in-process mock kube-apiserver for the scale bench: a `tower` service behind a real `kube::Client`.
//! It serves LIST (a `resourceVersion=0` list whole, as the apiserver's watch cache does; other lists in
//! pages of `limit`), WATCH (newline-delimited events, replayed from the requested resourceVersion), the
//! SidecarSet status PATCH (optimistic concurrency on the resourceVersion, then a MODIFIED event), the
//! SidecarSet GET, and ControllerRevision POST and GET. Objects are generated from their index
//! ([`super::objects`]); only what changed is held, so the measured process holds the caches, not the mock.

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use futures::channel::mpsc;
use http::{Method, Request, Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use serde_json::Value;

use super::objects::{self, Sizes};

type Body = UnsyncBoxBody<Bytes, Infallible>;

/// A resource the mock serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `ControllerRevision`s of kruise-system.
    Revisions,
    /// `Namespace`s.
    Namespaces,
    /// `Pod`s.
    Pods,
    /// `PersistentVolumeClaim`s (none).
    Claims,
    /// `SidecarSet`s.
    SidecarSets,
    /// `PodUnavailableBudget`s.
    Budgets,
    /// `WorkloadSpread`s.
    Spreads,
    /// `Node`s (none: the sidecar terminator's cache).
    Nodes,
    /// `ContainerRecreateRequest`s (none: the sidecar terminator's cache).
    Crrs,
    /// `PersistentPodState`s (none: the pod webhook's PersistentPodState step).
    PersistentPodStates,
    /// `apps/v1` and `apps.kruise.io/v1beta1` StatefulSets (none: the PersistentPodState controllers' caches).
    StatefulSets,
}

/// Collection paths, longest first (the Namespaces path is a prefix of the revisions').
const ROUTES: [(&str, Kind, &str, &str); 12] = [
    (
        "/apis/apps/v1/namespaces/kruise-system/controllerrevisions",
        Kind::Revisions,
        "apps/v1",
        "ControllerRevisionList",
    ),
    (
        "/api/v1/namespaces",
        Kind::Namespaces,
        "v1",
        "NamespaceList",
    ),
    ("/api/v1/pods", Kind::Pods, "v1", "PodList"),
    (
        "/api/v1/persistentvolumeclaims",
        Kind::Claims,
        "v1",
        "PersistentVolumeClaimList",
    ),
    (
        "/apis/apps.kruise.io/v1beta1/sidecarsets",
        Kind::SidecarSets,
        "apps.kruise.io/v1beta1",
        "SidecarSetList",
    ),
    (
        "/apis/policy.kruise.io/v1beta1/podunavailablebudgets",
        Kind::Budgets,
        "policy.kruise.io/v1beta1",
        "PodUnavailableBudgetList",
    ),
    (
        "/apis/apps.kruise.io/v1beta1/workloadspreads",
        Kind::Spreads,
        "apps.kruise.io/v1beta1",
        "WorkloadSpreadList",
    ),
    ("/api/v1/nodes", Kind::Nodes, "v1", "NodeList"),
    (
        "/apis/apps.kruise.io/v1beta1/containerrecreaterequests",
        Kind::Crrs,
        "apps.kruise.io/v1beta1",
        "ContainerRecreateRequestList",
    ),
    (
        "/apis/apps.kruise.io/v1beta1/persistentpodstates",
        Kind::PersistentPodStates,
        "apps.kruise.io/v1beta1",
        "PersistentPodStateList",
    ),
    (
        "/apis/apps/v1/statefulsets",
        Kind::StatefulSets,
        "apps/v1",
        "StatefulSetList",
    ),
    (
        "/apis/apps.kruise.io/v1beta1/statefulsets",
        Kind::StatefulSets,
        "apps.kruise.io/v1beta1",
        "StatefulSetList",
    ),
];

/// A write (status PATCH, revision POST) the mock accepted.
#[derive(Debug, Clone)]
pub struct Write {
    /// The request path.
    pub path: String,
    /// When it arrived.
    pub at: Instant,
}

#[derive(Default)]
struct State {
    /// The last resourceVersion handed out.
    resource_version: u64,
    /// Pods changed since the start: resourceVersion and readiness.
    pods: HashMap<usize, (u64, bool)>,
    /// SidecarSets whose status was written: resourceVersion and status.
    sets: HashMap<usize, (u64, String)>,
    /// ControllerRevisions created by the controller, by name.
    revisions: BTreeMap<String, String>,
    /// Every event since the start, for watches that resume from an older resourceVersion.
    events: Vec<(Kind, u64, Bytes)>,
    watchers: Vec<(Kind, mpsc::UnboundedSender<Bytes>)>,
    writes: Vec<Write>,
    unexpected: Vec<String>,
}

/// The mock apiserver.
#[derive(Clone)]
pub struct MockApi {
    sizes: Sizes,
    /// The resourceVersion of every object in the initial lists.
    initial: u64,
    state: Arc<Mutex<State>>,
    written: Arc<tokio::sync::Notify>,
}

fn text(status: StatusCode, body: impl Into<Bytes>) -> Response<Body> {
    Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(body.into()).boxed_unsync())
        .expect("a valid response")
}

fn failure(code: StatusCode, reason: &str, message: &str) -> Response<Body> {
    let body = serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code.as_u16()});
    text(code, body.to_string())
}

fn query<'a>(uri: &'a http::Uri, key: &str) -> Option<&'a str> {
    uri.query()?
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v)
}

/// The SidecarSet a revision name `sidecarset-<j>-<hash>` belongs to (`j` has 4 digits or more).
fn set_of_revision(name: &str) -> Option<usize> {
    name.strip_prefix("sidecarset-")?
        .split('-')
        .next()?
        .parse()
        .ok()
}

fn index_of(name: &str) -> Option<usize> {
    name.rsplit('-').next()?.parse().ok()
}

impl MockApi {
    /// A mock serving `sizes` objects, every SidecarSet with its revision and an up-to-date status.
    pub fn new(sizes: Sizes) -> Self {
        let initial = 1;
        let state = State {
            resource_version: 100,
            ..State::default()
        };
        Self {
            sizes,
            initial,
            state: Arc::new(Mutex::new(state)),
            written: Arc::new(tokio::sync::Notify::new()),
        }
    }

    /// A client of this mock.
    pub fn client(&self) -> kube::Client {
        let mock = self.clone();
        let service = tower::service_fn(move |request: Request<kube::client::Body>| {
            let mock = mock.clone();
            async move { Ok::<_, Infallible>(mock.handle(request).await) }
        });
        kube::Client::new(service, "default")
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes so far.
    pub fn writes(&self) -> Vec<Write> {
        self.lock().writes.clone()
    }

    /// Requests the mock could not answer.
    pub fn unexpected(&self) -> Vec<String> {
        self.lock().unexpected.clone()
    }

    /// When the first write since `since` to a path ending in `suffix` arrived; `None` after `timeout`.
    pub async fn wait_for_write(
        &self,
        since: Instant,
        suffix: &str,
        timeout: Duration,
    ) -> Option<Instant> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.written.notified();
            tokio::pin!(notified);
            // Registered before looking, so a write in between still wakes us.
            notified.as_mut().enable();
            let found = self
                .lock()
                .writes
                .iter()
                .find(|w| w.at >= since && w.path.ends_with(suffix))
                .map(|w| w.at);
            if found.is_some() {
                return found;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return None;
            }
        }
    }

    fn set_status(&self, state: &State, j: usize) -> (u64, String) {
        state.sets.get(&j).cloned().unwrap_or_else(|| {
            let pods = self.sizes.pods_of(j);
            (
                self.initial,
                objects::sidecar_set_status(&self.sizes, j, pods, pods),
            )
        })
    }

    fn sidecar_set(&self, state: &State, j: usize) -> String {
        let (resource_version, status) = self.set_status(state, j);
        objects::sidecar_set(j, resource_version, Some(&status))
    }

    /// How many objects of `kind` there are.
    fn count(&self, state: &State, kind: Kind) -> usize {
        let sizes = &self.sizes;
        match kind {
            Kind::Namespaces => sizes.namespaces,
            Kind::Pods => sizes.pods,
            Kind::Claims
            | Kind::Nodes
            | Kind::Crrs
            | Kind::PersistentPodStates
            | Kind::StatefulSets => 0,
            Kind::SidecarSets => sizes.sidecar_sets,
            Kind::Revisions => sizes.sidecar_sets + state.revisions.len(),
            Kind::Budgets => sizes.budgets,
            Kind::Spreads => sizes.spreads,
        }
    }

    /// Object `i` of `kind`, as JSON text (generated: only a page is ever held).
    fn item(&self, state: &State, kind: Kind, i: usize) -> String {
        let sizes = &self.sizes;
        let at = self.initial;
        match kind {
            Kind::Namespaces => objects::namespace(i, at),
            Kind::Pods => {
                let (rv, ready) = state.pods.get(&i).copied().unwrap_or((at, true));
                objects::pod(sizes, i, rv, ready)
            }
            Kind::Claims
            | Kind::Nodes
            | Kind::Crrs
            | Kind::PersistentPodStates
            | Kind::StatefulSets => String::new(),
            Kind::SidecarSets => self.sidecar_set(state, i),
            Kind::Revisions => match i.checked_sub(sizes.sidecar_sets) {
                None => objects::revision(i, at).1,
                Some(created) => state
                    .revisions
                    .values()
                    .nth(created)
                    .cloned()
                    .unwrap_or_default(),
            },
            Kind::Budgets => objects::budget(sizes, i, at),
            Kind::Spreads => objects::spread(sizes, i, at),
        }
    }

    /// The byte length of the whole LIST of `kind`.
    pub fn list_bytes(&self, kind: Kind) -> usize {
        let state = self.lock();
        (0..self.count(&state, kind))
            .map(|i| self.item(&state, kind, i).len() + 1)
            .sum()
    }

    /// Publishes a watch event of `kind` for `object` at `resource_version`.
    fn emit(
        &self,
        state: &mut State,
        kind: Kind,
        event: &str,
        object: &str,
        resource_version: u64,
    ) {
        let line = Bytes::from(format!(r#"{{"type":"{event}","object":{object}}}"#) + "\n");
        state.events.push((kind, resource_version, line.clone()));
        state
            .watchers
            .retain(|(k, tx)| *k != kind || tx.unbounded_send(line.clone()).is_ok());
    }

    /// Pod `i` turns Ready or not (a MODIFIED event, as the kubelet's status update brings).
    pub fn set_pod_ready(&self, i: usize, ready: bool) {
        let mut state = self.lock();
        state.resource_version += 1;
        let rv = state.resource_version;
        state.pods.insert(i, (rv, ready));
        let pod = objects::pod(&self.sizes, i, rv, ready);
        self.emit(&mut state, Kind::Pods, "MODIFIED", &pod, rv);
    }

    async fn handle(&self, request: Request<kube::client::Body>) -> Response<Body> {
        let (parts, body) = request.into_parts();
        let path = parts.uri.path().to_owned();
        // Events (the missed-sidecars reports): accepted and counted as writes.
        if parts.method == Method::POST && path.ends_with("/events") {
            let body = body.collect_bytes().await.unwrap_or_default();
            self.record(&mut self.lock(), &path);
            return text(StatusCode::CREATED, body);
        }
        let Some(&(prefix, kind, api_version, list_kind)) = ROUTES
            .iter()
            .find(|(prefix, ..)| path == *prefix || path.starts_with(&format!("{prefix}/")))
        else {
            return self.unknown(&parts.method, &parts.uri);
        };
        let rest = path[prefix.len()..].trim_start_matches('/');
        let body = body.collect_bytes().await.unwrap_or_default();
        match (&parts.method, kind, rest) {
            (&Method::GET, _, "") if query(&parts.uri, "watch") == Some("true") => {
                self.watch(kind, &parts.uri)
            }
            (&Method::GET, _, "") => self.list(kind, api_version, list_kind, &parts.uri),
            (&Method::GET, Kind::SidecarSets, name) => match index_of(name) {
                Some(j) if j < self.sizes.sidecar_sets => {
                    let state = self.lock();
                    text(StatusCode::OK, self.sidecar_set(&state, j))
                }
                _ => failure(StatusCode::NOT_FOUND, "NotFound", name),
            },
            (&Method::PATCH, Kind::SidecarSets, name) if name.ends_with("/status") => {
                self.patch_status(&path, name.trim_end_matches("/status"), &body)
            }
            (&Method::POST, Kind::Revisions, "") => self.create_revision(&path, &body),
            (&Method::GET, Kind::Revisions, name) => {
                let state = self.lock();
                let stored = state.revisions.get(name).cloned().or_else(|| {
                    let j = set_of_revision(name)?;
                    let (n, text) = objects::revision(j, self.initial);
                    (n == name).then_some(text)
                });
                match stored {
                    Some(text) => self::text(StatusCode::OK, text),
                    None => failure(StatusCode::NOT_FOUND, "NotFound", name),
                }
            }
            _ => self.unknown(&parts.method, &parts.uri),
        }
    }

    fn unknown(&self, method: &Method, uri: &http::Uri) -> Response<Body> {
        self.lock().unexpected.push(format!("{method} {uri}"));
        failure(StatusCode::NOT_FOUND, "NotFound", "not served by the mock")
    }

    fn list(
        &self,
        kind: Kind,
        api_version: &str,
        list_kind: &str,
        uri: &http::Uri,
    ) -> Response<Body> {
        let state = self.lock();
        let count = self.count(&state, kind);
        // The watch cache serves resourceVersion=0 whole, whatever the limit; other lists come in pages.
        let whole = query(uri, "resourceVersion") == Some("0");
        let start: usize = query(uri, "continue")
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let limit = query(uri, "limit")
            .and_then(|l| l.parse().ok())
            .filter(|_| !whole)
            .unwrap_or(usize::MAX);
        let end = start.saturating_add(limit).min(count);
        let cont = if end < count {
            format!(r#","continue":"{end}""#)
        } else {
            String::new()
        };
        let mut out = format!(
            r#"{{"kind":"{list_kind}","apiVersion":"{api_version}","metadata":{{"resourceVersion":"{}"{cont}}},"items":["#,
            state.resource_version
        );
        for i in start.min(end)..end {
            if i > start {
                out.push(',');
            }
            out.push_str(&self.item(&state, kind, i));
        }
        out.push_str("]}");
        drop(state);
        text(StatusCode::OK, out)
    }

    fn watch(&self, kind: Kind, uri: &http::Uri) -> Response<Body> {
        let from: u64 = query(uri, "resourceVersion")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let (tx, rx) = mpsc::unbounded();
        let mut state = self.lock();
        for (k, rv, line) in &state.events {
            if *k == kind && *rv > from {
                let _ = tx.unbounded_send(line.clone());
            }
        }
        state.watchers.push((kind, tx));
        let body = StreamBody::new(rx.map(|line| Ok::<_, Infallible>(Frame::data(line))));
        Response::builder()
            .status(StatusCode::OK)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(body.boxed_unsync())
            .expect("a valid response")
    }

    fn record(&self, state: &mut State, path: &str) {
        state.writes.push(Write {
            path: path.to_owned(),
            at: Instant::now(),
        });
        self.written.notify_waiters();
    }

    fn patch_status(&self, path: &str, name: &str, body: &[u8]) -> Response<Body> {
        let Some(j) = index_of(name).filter(|j| *j < self.sizes.sidecar_sets) else {
            return failure(StatusCode::NOT_FOUND, "NotFound", name);
        };
        let Ok(patch) = serde_json::from_slice::<Value>(body) else {
            return failure(StatusCode::BAD_REQUEST, "BadRequest", "not JSON");
        };
        let mut state = self.lock();
        let (current, _) = self.set_status(&state, j);
        let expected = patch
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str);
        if expected.is_some_and(|rv| rv != current.to_string()) {
            return failure(
                StatusCode::CONFLICT,
                "Conflict",
                "the object has been modified",
            );
        }
        state.resource_version += 1;
        let rv = state.resource_version;
        let status = patch.get("status").cloned().unwrap_or(Value::Null);
        state.sets.insert(j, (rv, status.to_string()));
        let set = self.sidecar_set(&state, j);
        self.emit(&mut state, Kind::SidecarSets, "MODIFIED", &set, rv);
        self.record(&mut state, path);
        text(StatusCode::OK, set)
    }

    fn create_revision(&self, path: &str, body: &[u8]) -> Response<Body> {
        let Ok(mut revision) = serde_json::from_slice::<Value>(body) else {
            return failure(StatusCode::BAD_REQUEST, "BadRequest", "not JSON");
        };
        let name = revision
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let mut state = self.lock();
        let initial = set_of_revision(&name)
            .is_some_and(|j| objects::sidecar_set_revision(&self.sizes, j) == name);
        if initial || state.revisions.contains_key(&name) {
            return failure(StatusCode::CONFLICT, "AlreadyExists", &name);
        }
        state.resource_version += 1;
        let rv = state.resource_version;
        revision["metadata"]["resourceVersion"] = Value::String(rv.to_string());
        let stored = revision.to_string();
        state.revisions.insert(name, stored.clone());
        self.emit(&mut state, Kind::Revisions, "ADDED", &stored, rv);
        self.record(&mut state, path);
        text(StatusCode::CREATED, stored)
    }
}
