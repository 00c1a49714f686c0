//! An in-process stand-in for the kube-apiserver, as a `tower` service behind real `kube::Client`s: every
//! client made by [`StandIn::client`] talks to the same objects, so several server instances (replicas) can
//! share one cluster.
//!
//! It holds JSON objects by collection and serves what the server's caches and the PUB gate use: LIST
//! (whole), WATCH (the events since the requested resourceVersion, then live ones), GET of one object, POST
//! (a uid given, and a Kruise object its first generation),
//! `PUT .../status` with optimistic concurrency (a resourceVersion that is not the stored one is a 409 with
//! the API server's text), and POST of events (counted). Faults can be injected into status writes: a share
//! of them failing with 500, or the next few answering 409 after a concurrent write of its own. It can also
//! go away altogether ([`StandIn::go_down`]): open watches end and every request fails to connect, until
//! [`StandIn::come_back`].
//!
//! Every request of a [`StandIn::client`] is authorized as the shipped ServiceAccount
//! `kruise-system/kruise-webhook` against the RBAC of `deploy/base/rbac.yaml` ([`rbac`]), as the real API
//! server does: a call the rules do not grant is answered 403 with the API server's text, so a test whose code
//! under test makes it fails. [`StandIn::with_rbac`] takes other rules (a rule removed, to show that).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::StreamExt;
use futures::channel::mpsc;
use http::{Method, Request, Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use serde_json::{Value, json};

type Body = UnsyncBoxBody<Bytes, Infallible>;

/// Collections served: (path of all objects, namespaced path segment, list kind).
const COLLECTIONS: &[(&str, &str, &str)] = &[
    ("/api/v1/namespaces", "", "NamespaceList"),
    ("/api/v1/pods", "pods", "PodList"),
    (
        "/api/v1/persistentvolumeclaims",
        "persistentvolumeclaims",
        "PersistentVolumeClaimList",
    ),
    (
        "/apis/policy.kruise.io/v1beta1/podunavailablebudgets",
        "podunavailablebudgets",
        "PodUnavailableBudgetList",
    ),
    // Cluster-scoped: an empty segment.
    (
        "/apis/apps.kruise.io/v1beta1/sidecarsets",
        "",
        "SidecarSetList",
    ),
    (
        "/apis/apps/v1/controllerrevisions",
        "controllerrevisions",
        "ControllerRevisionList",
    ),
    // WorkloadSpread placement (tests/workloadspread_placement.rs): the WorkloadSpreads and the workloads
    // whose stores owner chains are walked through.
    (
        "/apis/apps.kruise.io/v1beta1/workloadspreads",
        "workloadspreads",
        "WorkloadSpreadList",
    ),
    ("/apis/apps/v1/deployments", "deployments", "DeploymentList"),
    ("/apis/apps/v1/replicasets", "replicasets", "ReplicaSetList"),
    (
        "/apis/apps/v1/statefulsets",
        "statefulsets",
        "StatefulSetList",
    ),
    (
        "/apis/apps.kruise.io/v1alpha1/clonesets",
        "clonesets",
        "CloneSetList",
    ),
    // CloneSets at v1beta1 too (master's storage version): a v1beta1 object is kept apart from v1alpha1 ones.
    (
        "/apis/apps.kruise.io/v1beta1/clonesets",
        "clonesets",
        "CloneSetList",
    ),
    // The same kinds at v1alpha1, the only version OpenKruise 1.8's CRDs serve (DECISIONS 25): objects are
    // stored per version, as in a cluster that serves only that one.
    (
        "/apis/policy.kruise.io/v1alpha1/podunavailablebudgets",
        "podunavailablebudgets",
        "PodUnavailableBudgetList",
    ),
    (
        "/apis/apps.kruise.io/v1alpha1/sidecarsets",
        "",
        "SidecarSetList",
    ),
    (
        "/apis/apps.kruise.io/v1alpha1/workloadspreads",
        "workloadspreads",
        "WorkloadSpreadList",
    ),
    // The pod webhook's PersistentPodState and PodProbeMarker steps (spec/pod-mutating-misc.md §7, §9).
    (
        "/apis/apps.kruise.io/v1beta1/persistentpodstates",
        "persistentpodstates",
        "PersistentPodStateList",
    ),
    (
        "/apis/apps.kruise.io/v1alpha1/persistentpodstates",
        "persistentpodstates",
        "PersistentPodStateList",
    ),
    (
        "/apis/apps.kruise.io/v1alpha1/podprobemarkers",
        "podprobemarkers",
        "PodProbeMarkerList",
    ),
    // The PersistentPodState controllers (docs/persistentpodstate.md §3): Advanced StatefulSets, and Nodes
    // (cluster-scoped: an empty segment).
    (
        "/apis/apps.kruise.io/v1beta1/statefulsets",
        "statefulsets",
        "StatefulSetList",
    ),
    ("/api/v1/nodes", "", "NodeList"),
    // The CRDs the server follows (docs/startup-order.md).
    (
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "",
        "CustomResourceDefinitionList",
    ),
    // What `explain` reads live (docs/explain.md §1): Jobs, and the webhook configurations (cluster-scoped).
    ("/apis/batch/v1/jobs", "jobs", "JobList"),
    (
        "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
        "",
        "MutatingWebhookConfigurationList",
    ),
    (
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
        "",
        "ValidatingWebhookConfigurationList",
    ),
];

/// `<resource>.<group>` of a collection path, for the API server's texts.
fn resource_of(collection: &str) -> String {
    let mut parts = collection.rsplit('/');
    let resource = parts.next().unwrap_or_default();
    let _version = parts.next();
    match parts.next() {
        Some(group) if collection.starts_with("/apis/") => format!("{resource}.{group}"),
        _ => resource.to_owned(),
    }
}

/// A status write as the stand-in saw it.
#[derive(Debug, Clone)]
pub struct StatusWrite {
    /// `namespace/name`.
    pub object: String,
    /// The resourceVersion the write carried.
    pub resource_version: String,
    /// The HTTP status answered.
    pub code: u16,
}

#[derive(Default)]
struct State {
    resource_version: u64,
    /// Collection path to (namespace, name) to object.
    objects: BTreeMap<&'static str, BTreeMap<(String, String), Value>>,
    /// Every event, for watches resuming from an older resourceVersion.
    events: Vec<(&'static str, u64, Bytes)>,
    watchers: Vec<(&'static str, mpsc::UnboundedSender<Bytes>)>,
    status_writes: Vec<StatusWrite>,
    events_posted: Vec<Value>,
    /// Share of status writes answered 500 (0 to 1), drawn from `draws`.
    failure_rate: f64,
    draws: u64,
    /// Status writes still to be refused with 500 (before any other check).
    failures: usize,
    /// How long each status write takes before it is looked at.
    status_write_delay: std::time::Duration,
    /// Status writes still to be refused with 409 (after bumping the object's resourceVersion, as a
    /// concurrent writer would).
    conflicts: usize,
    /// Requests the stand-in does not serve, and those RBAC refused.
    unexpected: Vec<String>,
    /// Requests refused by RBAC, as the API server's message.
    forbidden: Vec<String>,
    /// Path prefixes (`/apis/<group>/<version>`) of versions the cluster does not serve: every request under
    /// one is answered 404, as for a CRD without that version.
    unserved: Vec<String>,
    /// Down: every request fails as a refused connection, and is listed in `refused`.
    down: bool,
    /// Requests refused while down, as `METHOD path`.
    refused: Vec<String>,
    /// Every request other than a GET, as `METHOD path`.
    writes: Vec<String>,
    /// Called with each object stored, under the stand-in's lock (so in the order of the writes).
    observers: Vec<Observer>,
    /// Receive each object stored of a collection.
    subscribers: Vec<(&'static str, mpsc::UnboundedSender<Value>)>,
}

type Observer = Box<dyn FnMut(&Value) + Send>;

/// The stand-in API server.
#[derive(Clone)]
pub struct StandIn {
    state: Arc<Mutex<State>>,
    /// What the clients' identity is granted.
    rbac: Arc<rbac::Rules>,
}

impl Default for StandIn {
    fn default() -> Self {
        Self {
            state: Arc::default(),
            rbac: Arc::new(rbac::Rules::shipped()),
        }
    }
}

fn respond(status: StatusCode, body: impl Into<Bytes>) -> Response<Body> {
    Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(body.into()).boxed_unsync())
        .expect("a valid response")
}

fn failure(code: StatusCode, reason: &str, message: &str) -> Response<Body> {
    let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code.as_u16()});
    respond(code, body.to_string())
}

fn query<'a>(uri: &'a http::Uri, key: &str) -> Option<&'a str> {
    uri.query()?
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v)
}

/// Where a request path points: the collection, and within it namespace, name and subresource.
type Target = (&'static str, Option<String>, Option<String>, Option<String>);

/// The collection of a request path.
fn route(path: &str) -> Option<Target> {
    for (all, segment, _) in COLLECTIONS {
        if path == *all {
            return Some((all, None, None, None));
        }
        if segment.is_empty() {
            continue;
        }
        // /api/v1/namespaces/<ns>/pods[/<name>[/<sub>]] and the same under /apis/<group>/<version>.
        let base = all.rsplit_once('/').map(|(b, _)| b).unwrap_or("");
        let Some(rest) = path.strip_prefix(&format!("{base}/namespaces/")) else {
            continue;
        };
        let mut parts = rest.split('/');
        let (Some(ns), Some(seg)) = (parts.next(), parts.next()) else {
            continue;
        };
        if seg != *segment {
            continue;
        }
        let name = parts.next().map(str::to_owned);
        let sub = parts.next().map(str::to_owned);
        return Some((all, Some(ns.to_owned()), name, sub));
    }
    // A cluster-scoped object: <all>/<name>[/<sub>].
    for (all, segment, _) in COLLECTIONS {
        let Some(rest) = path.strip_prefix(&format!("{all}/")) else {
            continue;
        };
        if !segment.is_empty() {
            continue;
        }
        let mut parts = rest.split('/');
        let name = parts.next().map(str::to_owned);
        let sub = parts.next().map(str::to_owned);
        return Some((all, None, name, sub));
    }
    None
}

impl StandIn {
    /// An empty cluster.
    pub fn new() -> Self {
        let stand_in = Self::default();
        stand_in.lock().resource_version = 100;
        stand_in
    }

    /// An empty cluster whose clients are granted `rules` (e.g. the shipped rules with one taken out).
    pub fn with_rbac(rules: rbac::Rules) -> Self {
        let stand_in = Self {
            state: Arc::default(),
            rbac: Arc::new(rules),
        };
        stand_in.lock().resource_version = 100;
        stand_in
    }

    /// A client of this stand-in (any number of them share its objects), authorized as the shipped
    /// ServiceAccount (module docs).
    pub fn client(&self) -> kube::Client {
        let stand_in = self.clone();
        let service = tower::service_fn(move |request: Request<kube::client::Body>| {
            let stand_in = stand_in.clone();
            async move {
                if let Err(message) = stand_in.rbac.authorize(request.method(), request.uri()) {
                    let mut state = stand_in.lock();
                    state.forbidden.push(message.clone());
                    state.unexpected.push(format!(
                        "{} {}: {message}",
                        request.method(),
                        request.uri()
                    ));
                    return Ok(failure(StatusCode::FORBIDDEN, "Forbidden", &message));
                }
                {
                    let mut state = stand_in.lock();
                    if state.down {
                        let call = format!("{} {}", request.method(), request.uri().path());
                        state.refused.push(call);
                        return Err(std::io::Error::new(
                            std::io::ErrorKind::ConnectionRefused,
                            "the stand-in API server is down",
                        ));
                    }
                }
                Ok(stand_in.handle(request).await)
            }
        });
        kube::Client::new(service, "default")
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The collection of `object`'s kind, at its apiVersion when it has one (else the first served).
    fn collection_of(object: &Value) -> &'static str {
        let kind = object["kind"].as_str().unwrap_or_default();
        let version = object["apiVersion"].as_str().map(|v| {
            if v.contains('/') {
                format!("/apis/{v}/")
            } else {
                format!("/api/{v}/")
            }
        });
        COLLECTIONS
            .iter()
            .find(|(path, _, list)| {
                list.strip_suffix("List") == Some(kind)
                    && version
                        .as_ref()
                        .is_none_or(|v| path.starts_with(v.as_str()))
            })
            .map(|(path, ..)| *path)
            .unwrap_or_else(|| panic!("the stand-in does not serve {kind}"))
    }

    fn key(object: &Value) -> (String, String) {
        (
            object["metadata"]["namespace"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            object["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        )
    }

    /// Stores `object` (with a fresh resourceVersion) and tells the watchers.
    pub fn put(&self, mut object: Value) {
        let mut state = self.lock();
        let collection = Self::collection_of(&object);
        Self::store(&mut state, collection, &mut object, "ADDED");
    }

    fn store(state: &mut State, collection: &'static str, object: &mut Value, event: &str) {
        state.resource_version += 1;
        let rv = state.resource_version;
        object["metadata"]["resourceVersion"] = json!(rv.to_string());
        let key = Self::key(object);
        let exists = state
            .objects
            .get(collection)
            .is_some_and(|c| c.contains_key(&key));
        let event = if exists && event == "ADDED" {
            "MODIFIED"
        } else {
            event
        };
        state
            .objects
            .entry(collection)
            .or_default()
            .insert(key, object.clone());
        for observe in &mut state.observers {
            observe(object);
        }
        state
            .subscribers
            .retain(|(c, tx)| *c != collection || tx.unbounded_send(object.clone()).is_ok());
        Self::announce(state, collection, rv, event, object);
    }

    /// Records the watch event of a write at `rv` and sends it to the collection's watchers.
    fn announce(state: &mut State, collection: &'static str, rv: u64, event: &str, object: &Value) {
        let line = Bytes::from(format!(r#"{{"type":"{event}","object":{object}}}"#) + "\n");
        state.events.push((collection, rv, line.clone()));
        state
            .watchers
            .retain(|(c, tx)| *c != collection || tx.unbounded_send(line.clone()).is_ok());
    }

    /// The stored object.
    pub fn get(&self, kind: &str, namespace: &str, name: &str) -> Option<Value> {
        self.get_at(None, kind, namespace, name)
    }

    /// [`StandIn::get`] of the object stored at `api_version` (`None`: the kind's first collection).
    pub fn get_at(
        &self,
        api_version: Option<&str>,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Option<Value> {
        let collection = Self::collection_of(&json!({"kind": kind, "apiVersion": api_version}));
        self.lock()
            .objects
            .get(collection)?
            .get(&(namespace.to_owned(), name.to_owned()))
            .cloned()
    }

    /// Answers this share (0 to 1) of the coming status writes with 500.
    pub fn fail_status_writes(&self, rate: f64) {
        self.lock().failure_rate = rate;
    }

    /// Refuses the next `n` status writes with 500, storing nothing.
    pub fn fail_next_status_writes(&self, n: usize) {
        self.lock().failures = n;
    }

    /// Makes every status write take `delay` before it is looked at (writes overlap as they would in flight).
    pub fn delay_status_writes(&self, delay: std::time::Duration) {
        self.lock().status_write_delay = delay;
    }

    /// Refuses the next `n` status writes with 409, each after a write of its own (the resourceVersion
    /// moves, the content stays), as when another replica or the controller wrote in between.
    pub fn conflict_next_status_writes(&self, n: usize) {
        self.lock().conflicts = n;
    }

    /// Every status write seen.
    pub fn status_writes(&self) -> Vec<StatusWrite> {
        self.lock().status_writes.clone()
    }

    /// Every event posted.
    pub fn events(&self) -> Vec<Value> {
        self.lock().events_posted.clone()
    }

    /// The API server goes away: open watches end, and every request from now on fails as a refused
    /// connection (objects stay; [`StandIn::update`] still edits them, as writers the server cannot see).
    pub fn go_down(&self) {
        let mut state = self.lock();
        state.down = true;
        // Dropping the senders ends the watch streams.
        state.watchers.clear();
    }

    /// The API server is back: requests are served again (watches resume from their resourceVersion).
    pub fn come_back(&self) {
        self.lock().down = false;
    }

    /// The cluster stops serving `group_version` (`apps.kruise.io/v1beta1`): every request under it is
    /// answered 404 (objects stored at it stay, unseen), as in a cluster whose CRDs lack that version.
    pub fn unserve(&self, group_version: &str) {
        self.lock().unserved.push(format!("/apis/{group_version}/"));
    }

    /// Every request refused while down, as `METHOD path`.
    pub fn refused(&self) -> Vec<String> {
        self.lock().refused.clone()
    }

    /// Requests the stand-in does not serve, and those RBAC refused (the tests that check this list fail
    /// on a call the shipped RBAC does not grant).
    pub fn unexpected(&self) -> Vec<String> {
        self.lock().unexpected.clone()
    }

    /// Requests RBAC refused, as the API server's message.
    pub fn forbidden(&self) -> Vec<String> {
        self.lock().forbidden.clone()
    }

    async fn handle(&self, request: Request<kube::client::Body>) -> Response<Body> {
        let (parts, body) = request.into_parts();
        let path = parts.uri.path().to_owned();
        let body = body.collect_bytes().await.unwrap_or_default();
        if parts.method != Method::GET {
            self.lock().writes.push(format!("{} {path}", parts.method));
        }
        if parts.method == Method::POST && path.ends_with("/events") {
            let event: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let mut state = self.lock();
            // As the API server: a name taken in the namespace is AlreadyExists.
            let named = |e: &Value| {
                (
                    e["metadata"]["namespace"].clone(),
                    e["metadata"]["name"].clone(),
                )
            };
            if state
                .events_posted
                .iter()
                .any(|e| named(e) == named(&event))
            {
                return failure(
                    StatusCode::CONFLICT,
                    "AlreadyExists",
                    &format!("events {} already exists", event["metadata"]["name"]),
                );
            }
            state.events_posted.push(event.clone());
            return respond(StatusCode::CREATED, event.to_string());
        }
        if self
            .lock()
            .unserved
            .iter()
            .any(|prefix| path.starts_with(prefix.as_str()))
        {
            return failure(
                StatusCode::NOT_FOUND,
                "NotFound",
                "the server could not find the requested resource",
            );
        }
        let Some((collection, namespace, name, sub)) = route(&path) else {
            return self.unknown(&parts.method, &parts.uri);
        };
        match (&parts.method, name, sub.as_deref()) {
            (&Method::GET, None, None) if query(&parts.uri, "watch") == Some("true") => {
                self.watch(collection, &parts.uri)
            }
            (&Method::GET, None, None) => self.list(collection, namespace.as_deref()),
            (&Method::GET, Some(name), None) => {
                let state = self.lock();
                let key = (namespace.unwrap_or_default(), name.clone());
                match state.objects.get(collection).and_then(|c| c.get(&key)) {
                    Some(object) => respond(StatusCode::OK, object.to_string()),
                    None => failure(
                        StatusCode::NOT_FOUND,
                        "NotFound",
                        &format!("{name:?} not found"),
                    ),
                }
            }
            (&Method::PUT, Some(name), Some("status")) => {
                let delay = self.lock().status_write_delay;
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                self.replace_status(collection, namespace.unwrap_or_default(), name, &body)
            }
            (&Method::POST, None, None) => self.create(collection, namespace, &body),
            (&Method::PUT, Some(name), None) => {
                self.replace(collection, (namespace.unwrap_or_default(), name), &body)
            }
            (&Method::PATCH, Some(name), None | Some("status")) => {
                let strategic = parts
                    .headers
                    .get(http::header::CONTENT_TYPE)
                    .is_some_and(|t| {
                        t.as_bytes()
                            .starts_with(b"application/strategic-merge-patch")
                    });
                self.patch(
                    collection,
                    (namespace.unwrap_or_default(), name),
                    &body,
                    strategic,
                )
            }
            (&Method::DELETE, Some(name), None) => {
                self.delete(collection, (namespace.unwrap_or_default(), name))
            }
            _ => self.unknown(&parts.method, &parts.uri),
        }
    }

    fn unknown(&self, method: &Method, uri: &http::Uri) -> Response<Body> {
        self.lock().unexpected.push(format!("{method} {uri}"));
        failure(
            StatusCode::NOT_FOUND,
            "NotFound",
            "not served by the stand-in",
        )
    }

    fn list(&self, collection: &'static str, namespace: Option<&str>) -> Response<Body> {
        let state = self.lock();
        let list_kind = COLLECTIONS
            .iter()
            .find(|(c, ..)| *c == collection)
            .map(|(.., k)| *k)
            .unwrap_or("List");
        let items: Vec<&Value> = state
            .objects
            .get(collection)
            .into_iter()
            .flat_map(|c| c.iter())
            .filter(|((ns, _), _)| namespace.is_none_or(|n| n == ns))
            .map(|(_, v)| v)
            .collect();
        let list = json!({"kind": list_kind, "apiVersion": "v1",
            "metadata": {"resourceVersion": state.resource_version.to_string()}, "items": items});
        respond(StatusCode::OK, list.to_string())
    }

    fn watch(&self, collection: &'static str, uri: &http::Uri) -> Response<Body> {
        let from: u64 = query(uri, "resourceVersion")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let (tx, rx) = mpsc::unbounded();
        let mut state = self.lock();
        for (c, rv, line) in &state.events {
            if *c == collection && *rv > from {
                let _ = tx.unbounded_send(line.clone());
            }
        }
        state.watchers.push((collection, tx));
        let body = StreamBody::new(rx.map(|line| Ok::<_, Infallible>(Frame::data(line))));
        Response::builder()
            .status(StatusCode::OK)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(body.boxed_unsync())
            .expect("a valid response")
    }

    fn replace_status(
        &self,
        collection: &'static str,
        namespace: String,
        name: String,
        body: &[u8],
    ) -> Response<Body> {
        let mut state = self.lock();
        let object = format!("{namespace}/{name}");
        let Ok(sent) = serde_json::from_slice::<Value>(body) else {
            return failure(StatusCode::BAD_REQUEST, "BadRequest", "not JSON");
        };
        let sent_rv = sent["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let record = |state: &mut State, code: u16| {
            state.status_writes.push(StatusWrite {
                object: object.clone(),
                resource_version: sent_rv.clone(),
                code,
            });
        };
        let key = (namespace, name.clone());
        let Some(mut stored) = state
            .objects
            .get(collection)
            .and_then(|c| c.get(&key))
            .cloned()
        else {
            record(&mut state, 404);
            return failure(
                StatusCode::NOT_FOUND,
                "NotFound",
                &format!("{} {name:?} not found", resource_of(collection)),
            );
        };
        let conflict_text = format!(
            "Operation cannot be fulfilled on {} {name:?}: the object has been modified; please apply your changes to the latest version and try again",
            resource_of(collection)
        );
        if state.failures > 0 {
            state.failures -= 1;
            record(&mut state, 500);
            return failure(
                StatusCode::INTERNAL_SERVER_ERROR,
                "InternalError",
                "etcdserver: request timed out",
            );
        }
        if state.conflicts > 0 {
            state.conflicts -= 1;
            // Someone else wrote: same content, a new resourceVersion.
            Self::store(&mut state, collection, &mut stored, "MODIFIED");
            record(&mut state, 409);
            return failure(StatusCode::CONFLICT, "Conflict", &conflict_text);
        }
        if stored["metadata"]["resourceVersion"].as_str() != Some(sent_rv.as_str()) {
            record(&mut state, 409);
            return failure(StatusCode::CONFLICT, "Conflict", &conflict_text);
        }
        if state.failure_rate > 0.0 {
            // A fixed sequence of draws (splitmix64), so a run can be repeated.
            state.draws = state.draws.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state.draws;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            let draw = ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64;
            if draw < state.failure_rate {
                record(&mut state, 500);
                return failure(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "InternalError",
                    "etcdserver: request timed out",
                );
            }
        }
        stored["status"] = sent["status"].clone();
        Self::store(&mut state, collection, &mut stored, "MODIFIED");
        record(&mut state, 200);
        respond(StatusCode::OK, stored.to_string())
    }

    // -----------------------------------------------------------------------------------------------------
    // Object writes (POST, PUT, PATCH, DELETE), as the SidecarSet controller makes them
    // -----------------------------------------------------------------------------------------------------

    /// Every request other than a GET so far, as `METHOD path`.
    pub fn writes(&self) -> Vec<String> {
        self.lock().writes.clone()
    }

    /// Calls `observe` with every object stored from now on, under the stand-in's lock: it sees the
    /// writes one at a time, in order, and nothing is written while it runs.
    pub fn observe(&self, observe: impl FnMut(&Value) + Send + 'static) {
        self.lock().observers.push(Box::new(observe));
    }

    /// Every object of `kind` stored from now on.
    pub fn subscribe(&self, kind: &str) -> mpsc::UnboundedReceiver<Value> {
        let collection = Self::collection_of(&json!({"kind": kind}));
        let (tx, rx) = mpsc::unbounded();
        self.lock().subscribers.push((collection, tx));
        rx
    }

    /// Every stored object of `kind`.
    pub fn all(&self, kind: &str) -> Vec<Value> {
        let collection = Self::collection_of(&json!({"kind": kind}));
        self.lock()
            .objects
            .get(collection)
            .map(|c| c.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Deletes a stored object (watchers see it go), as another client would. False when there is none.
    pub fn remove(&self, kind: &str, namespace: &str, name: &str) -> bool {
        let collection = Self::collection_of(&json!({"kind": kind}));
        let key = (namespace.to_owned(), name.to_owned());
        self.delete(collection, key).status() == StatusCode::OK
    }

    /// Edits a stored object in place, as a kubelet or another controller would (one atomic write, a new
    /// resourceVersion); `edit` returns false to leave it as it is. False when there is no such object.
    pub fn update(
        &self,
        kind: &str,
        namespace: &str,
        name: &str,
        edit: impl FnOnce(&mut Value) -> bool,
    ) -> bool {
        let collection = Self::collection_of(&json!({"kind": kind}));
        let mut state = self.lock();
        let key = (namespace.to_owned(), name.to_owned());
        let Some(mut object) = state
            .objects
            .get(collection)
            .and_then(|c| c.get(&key))
            .cloned()
        else {
            return false;
        };
        if !edit(&mut object) {
            return false;
        }
        Self::store(&mut state, collection, &mut object, "MODIFIED");
        true
    }

    fn not_found(name: &str) -> Response<Body> {
        failure(
            StatusCode::NOT_FOUND,
            "NotFound",
            &format!("{name:?} not found"),
        )
    }

    fn conflict(name: &str) -> Response<Body> {
        failure(
            StatusCode::CONFLICT,
            "Conflict",
            &format!(
                "Operation cannot be fulfilled on {name:?}: the object has been modified; please apply your changes to the latest version and try again"
            ),
        )
    }

    fn create(
        &self,
        collection: &'static str,
        namespace: Option<String>,
        body: &[u8],
    ) -> Response<Body> {
        let Ok(mut object) = serde_json::from_slice::<Value>(body) else {
            return failure(StatusCode::BAD_REQUEST, "BadRequest", "not JSON");
        };
        if let Some(ns) = namespace {
            object["metadata"]["namespace"] = json!(ns);
        }
        let mut state = self.lock();
        let key = Self::key(&object);
        if state
            .objects
            .get(collection)
            .is_some_and(|c| c.contains_key(&key))
        {
            return failure(
                StatusCode::CONFLICT,
                "AlreadyExists",
                &format!("{:?} already exists", key.1),
            );
        }
        // As the API server does: a new object gets a uid (and a custom resource its first generation).
        if object["metadata"]["uid"].is_null() {
            object["metadata"]["uid"] = json!(format!("uid-{}", state.resource_version + 1));
        }
        if object["metadata"]["generation"].is_null()
            && collection.starts_with("/apis/apps.kruise.io/")
        {
            object["metadata"]["generation"] = json!(1);
        }
        Self::store(&mut state, collection, &mut object, "ADDED");
        respond(StatusCode::CREATED, object.to_string())
    }

    /// PUT of the whole object: refused on a stale resourceVersion; the status stays the stored one, the
    /// generation goes up with a change of the spec.
    fn replace(
        &self,
        collection: &'static str,
        key: (String, String),
        body: &[u8],
    ) -> Response<Body> {
        let Ok(mut sent) = serde_json::from_slice::<Value>(body) else {
            return failure(StatusCode::BAD_REQUEST, "BadRequest", "not JSON");
        };
        let mut state = self.lock();
        let Some(stored) = state.objects.get(collection).and_then(|c| c.get(&key)) else {
            return Self::not_found(&key.1);
        };
        if sent["metadata"]["resourceVersion"] != stored["metadata"]["resourceVersion"] {
            return Self::conflict(&key.1);
        }
        // The generation is the server's: one more when the spec changed.
        if let Some(generation) = stored["metadata"]["generation"].as_i64() {
            let changed = sent["spec"] != stored["spec"];
            sent["metadata"]["generation"] = json!(generation + i64::from(changed));
        }
        if let Some(status) = stored.get("status").cloned() {
            sent["status"] = status;
        }
        Self::store(&mut state, collection, &mut sent, "MODIFIED");
        respond(StatusCode::OK, sent.to_string())
    }

    /// A merge patch, or a strategic one (lists named `conditions` merge by `type`, other lists are
    /// replaced: all the SidecarSet controller sends); a resourceVersion in the patch is a precondition.
    fn patch(
        &self,
        collection: &'static str,
        key: (String, String),
        body: &[u8],
        strategic: bool,
    ) -> Response<Body> {
        let Ok(patch) = serde_json::from_slice::<Value>(body) else {
            return failure(StatusCode::BAD_REQUEST, "BadRequest", "not JSON");
        };
        let mut state = self.lock();
        let Some(mut object) = state
            .objects
            .get(collection)
            .and_then(|c| c.get(&key))
            .cloned()
        else {
            return Self::not_found(&key.1);
        };
        if let Some(rv) = patch["metadata"].get("resourceVersion")
            && !rv.is_null()
            && *rv != object["metadata"]["resourceVersion"]
        {
            return Self::conflict(&key.1);
        }
        merge(&mut object, &patch, strategic);
        Self::store(&mut state, collection, &mut object, "MODIFIED");
        respond(StatusCode::OK, object.to_string())
    }

    fn delete(&self, collection: &'static str, key: (String, String)) -> Response<Body> {
        let mut state = self.lock();
        let Some(mut object) = state
            .objects
            .get_mut(collection)
            .and_then(|c| c.remove(&key))
        else {
            return Self::not_found(&key.1);
        };
        state.resource_version += 1;
        let rv = state.resource_version;
        object["metadata"]["resourceVersion"] = json!(rv.to_string());
        Self::announce(&mut state, collection, rv, "DELETED", &object);
        respond(StatusCode::OK, object.to_string())
    }
}

/// RFC 7386 merge of `patch` into `target`; with `strategic`, lists named `conditions` merge by `type`.
fn merge(target: &mut Value, patch: &Value, strategic: bool) {
    let Value::Object(fields) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    for (k, v) in fields {
        if v.is_null() {
            target.as_object_mut().map(|t| t.remove(k));
            continue;
        }
        let slot = &mut target[k.as_str()];
        match (strategic && k == "conditions", v, &mut *slot) {
            (true, Value::Array(items), Value::Array(existing)) => {
                for item in items {
                    match existing.iter_mut().find(|e| e["type"] == item["type"]) {
                        Some(e) => merge(e, item, strategic),
                        None => existing.push(item.clone()),
                    }
                }
            }
            _ => merge(slot, v, strategic),
        }
    }
}

/// RBAC as the API server evaluates it for one ServiceAccount: its RequestInfo (verb, API group, resource,
/// subresource, namespace, name; a `metadata.name` field selector names the object of a list or watch) and
/// the rules of the Roles and ClusterRoles bound to it.
pub mod rbac {
    use std::path::Path;

    use http::{Method, Uri};
    use serde_json::Value;

    /// The namespace and name of the shipped ServiceAccount.
    pub const SERVICE_ACCOUNT: (&str, &str) = ("kruise-system", "kruise-webhook");

    /// One rule, and the namespace it applies in (`None`: every namespace and cluster scope: a ClusterRole
    /// bound by a ClusterRoleBinding).
    #[derive(Debug, Clone)]
    pub struct Rule {
        /// Where it applies.
        pub namespace: Option<String>,
        /// `apiGroups`.
        pub groups: Vec<String>,
        /// `resources` (`pods`, `pods/status`, `*`, `*/scale`).
        pub resources: Vec<String>,
        /// `verbs`.
        pub verbs: Vec<String>,
        /// `resourceNames` (empty: any).
        pub names: Vec<String>,
    }

    /// What the identity is granted.
    #[derive(Debug, Clone)]
    pub struct Rules {
        /// The user name the API server would name in a refusal.
        pub user: String,
        /// The rules.
        pub rules: Vec<Rule>,
    }

    fn strings(v: &Value) -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(str::to_owned))
            .collect()
    }

    impl Rules {
        /// The rules `deploy/base/rbac.yaml` grants the shipped ServiceAccount.
        pub fn shipped() -> Self {
            let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/base/rbac.yaml");
            let text = std::fs::read_to_string(&path).expect("deploy/base/rbac.yaml");
            let objects: Vec<Value> =
                serde_saphyr::from_multiple(&text).expect("deploy/base/rbac.yaml parses");
            Self::of(&objects, SERVICE_ACCOUNT)
        }

        /// The rules `objects` (Roles, ClusterRoles and their bindings) grant ServiceAccount `account`.
        pub fn of(objects: &[Value], account: (&str, &str)) -> Self {
            let mut rules = Vec::new();
            for binding in objects {
                let kind = binding["kind"].as_str().unwrap_or_default();
                if kind != "RoleBinding" && kind != "ClusterRoleBinding" {
                    continue;
                }
                let names_us = binding["subjects"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|s| {
                        s["kind"] == "ServiceAccount"
                            && s["namespace"] == account.0
                            && s["name"] == account.1
                    });
                if !names_us {
                    continue;
                }
                let scope = (kind == "RoleBinding").then(|| {
                    binding["metadata"]["namespace"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned()
                });
                let role_kind = binding["roleRef"]["kind"].as_str().unwrap_or_default();
                let role_name = &binding["roleRef"]["name"];
                let role = objects.iter().find(|o| {
                    o["kind"] == role_kind
                        && o["metadata"]["name"] == *role_name
                        && (role_kind == "ClusterRole"
                            || o["metadata"]["namespace"].as_str() == scope.as_deref())
                });
                for rule in role
                    .and_then(|r| r["rules"].as_array())
                    .into_iter()
                    .flatten()
                {
                    rules.push(Rule {
                        namespace: scope.clone(),
                        groups: strings(&rule["apiGroups"]),
                        resources: strings(&rule["resources"]),
                        verbs: strings(&rule["verbs"]),
                        names: strings(&rule["resourceNames"]),
                    });
                }
            }
            Self {
                user: format!("system:serviceaccount:{}:{}", account.0, account.1),
                rules,
            }
        }

        /// These rules with `verb` taken away from every rule naming `resource` (`pods/status`, ...).
        #[must_use]
        pub fn without(mut self, resource: &str, verb: &str) -> Self {
            let mut rules = Vec::new();
            for rule in self.rules {
                if !rule.resources.iter().any(|r| r == resource) {
                    rules.push(rule);
                    continue;
                }
                let mut others = rule.clone();
                others.resources.retain(|r| r != resource);
                let mut this = rule;
                this.resources = vec![resource.to_owned()];
                this.verbs.retain(|v| v != verb);
                rules.extend(
                    [others, this]
                        .into_iter()
                        .filter(|r| !r.resources.is_empty() && !r.verbs.is_empty()),
                );
            }
            self.rules = rules;
            self
        }

        /// Whether the request is granted; the API server's refusal text otherwise.
        ///
        /// # Errors
        /// The 403 message, as the API server words it.
        pub fn authorize(&self, method: &Method, uri: &Uri) -> Result<(), String> {
            let Some(info) = RequestInfo::of(method, uri) else {
                // Not a resource request (discovery, /version): every ServiceAccount may.
                return Ok(());
            };
            let resource = match &info.subresource {
                Some(sub) => format!("{}/{sub}", info.resource),
                None => info.resource.clone(),
            };
            let granted = self.rules.iter().any(|rule| {
                let in_scope = match (&rule.namespace, &info.namespace) {
                    (None, _) => true,
                    (Some(scope), Some(ns)) => scope == ns,
                    (Some(_), None) => false,
                };
                let any =
                    |list: &[String], value: &str| list.iter().any(|x| x == "*" || x == value);
                let resource_ok = rule.resources.iter().any(|r| {
                    r == "*"
                        || *r == resource
                        || info
                            .subresource
                            .as_ref()
                            .is_some_and(|sub| *r == format!("*/{sub}"))
                });
                let name_ok = rule.names.is_empty()
                    || info.name.as_ref().is_some_and(|n| rule.names.contains(n));
                in_scope
                    && any(&rule.groups, &info.group)
                    && resource_ok
                    && any(&rule.verbs, &info.verb)
                    && name_ok
            });
            if granted {
                return Ok(());
            }
            let object = match &info.name {
                Some(name) if info.verb != "list" && info.verb != "watch" => {
                    format!("{} {name:?}", info.resource)
                }
                _ => info.resource.clone(),
            };
            let scope = match &info.namespace {
                Some(ns) => format!("in the namespace {ns:?}"),
                None => "at the cluster scope".to_owned(),
            };
            Err(format!(
                "{object} is forbidden: User {:?} cannot {} resource {resource:?} in API group {:?} {scope}",
                self.user, info.verb, info.group
            ))
        }
    }

    /// What the API server's RequestInfo resolves a resource request to.
    #[derive(Debug, PartialEq, Eq)]
    pub struct RequestInfo {
        /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`.
        pub verb: String,
        /// The API group (`""` for the core group).
        pub group: String,
        /// The resource.
        pub resource: String,
        /// The subresource.
        pub subresource: Option<String>,
        /// The namespace.
        pub namespace: Option<String>,
        /// The object's name.
        pub name: Option<String>,
    }

    impl RequestInfo {
        /// `None` for a request that is not for a resource (discovery).
        pub fn of(method: &Method, uri: &Uri) -> Option<Self> {
            let parts: Vec<&str> = uri.path().trim_matches('/').split('/').collect();
            let (group, rest) = match parts.as_slice() {
                ["api", _version, rest @ ..] => ("", rest),
                ["apis", group, _version, rest @ ..] => (*group, rest),
                _ => return None,
            };
            let (namespace, rest) = match rest {
                ["namespaces", ns, more @ ..] if !more.is_empty() => (Some((*ns).to_owned()), more),
                // /api/v1/namespaces/<name>: the namespace object itself.
                ["namespaces", ns] => (Some((*ns).to_owned()), &["namespaces", ns][..]),
                other => (None, other),
            };
            let (resource, name, subresource) = match rest {
                [resource] => (*resource, None, None),
                [resource, name] => (*resource, Some((*name).to_owned()), None),
                [resource, name, sub, ..] => {
                    (*resource, Some((*name).to_owned()), Some((*sub).to_owned()))
                }
                _ => return None,
            };
            let query = |key: &str| {
                uri.query().and_then(|q| {
                    q.split('&')
                        .filter_map(|kv| kv.split_once('='))
                        .find(|(k, _)| *k == key)
                        .map(|(_, v)| v.to_owned())
                })
            };
            let verb = match (method.as_str(), &name) {
                ("GET", Some(_)) => "get",
                ("GET", None) if query("watch").as_deref() == Some("true") => "watch",
                ("GET", None) => "list",
                ("POST", _) => "create",
                ("PUT", _) => "update",
                ("PATCH", _) => "patch",
                ("DELETE", Some(_)) => "delete",
                ("DELETE", None) => "deletecollection",
                _ => return None,
            };
            // A list or watch naming one object by field selector is authorized for that name.
            let name = name.or_else(|| {
                let selector = query("fieldSelector")?;
                let selector = selector.replace("%3D", "=").replace("%3d", "=");
                selector
                    .split(',')
                    .find_map(|term| term.strip_prefix("metadata.name=").map(str::to_owned))
            });
            Some(Self {
                verb: verb.to_owned(),
                group: group.to_owned(),
                resource: resource.to_owned(),
                subresource,
                namespace,
                name,
            })
        }
    }
}
