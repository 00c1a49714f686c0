//! The live mode of `explain` (docs/explain.md §1): a snapshot of the cluster state read through GET and LIST
//! only, filed into a [`FixtureCluster`] exactly as `--objects` would be, for the same explanation.
//!
//! Nothing here writes: every request is a GET (of one object, or of a collection).

use std::error::Error as _;

use kruise_webhooks::fixture::FixtureCluster;
use serde_json::{Value, json};

/// A kind `explain` reads: where it is served and how it is named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resource {
    /// API group (`""`: the core group).
    pub group: &'static str,
    /// Versions tried in this order; a 404 at every one means the cluster does not serve the kind.
    pub versions: &'static [&'static str],
    /// The resource (plural).
    pub plural: &'static str,
    /// The kind, set on the objects of a LIST (their items carry none).
    pub kind: &'static str,
    /// Namespaced (else cluster-scoped).
    pub namespaced: bool,
    /// How a message names one object of it (`pod`, `deployment`, `statefulset.apps.kruise.io`).
    pub singular: &'static str,
}

const fn resource(
    group: &'static str,
    versions: &'static [&'static str],
    plural: &'static str,
    kind: &'static str,
    singular: &'static str,
) -> Resource {
    Resource {
        group,
        versions,
        plural,
        kind,
        namespaced: true,
        singular,
    }
}

/// Kruise kinds: v1beta1 first, v1alpha1 when the cluster serves only that (OpenKruise 1.8's CRDs).
const KRUISE: &[&str] = &["v1beta1", "v1alpha1"];

const POD: Resource = resource("", &["v1"], "pods", "Pod", "pod");
const NAMESPACE: Resource = Resource {
    namespaced: false,
    ..resource("", &["v1"], "namespaces", "Namespace", "namespace")
};
const DEPLOYMENT: Resource = resource("apps", &["v1"], "deployments", "Deployment", "deployment");
const REPLICA_SET: Resource = resource("apps", &["v1"], "replicasets", "ReplicaSet", "replicaset");
const STATEFUL_SET: Resource = resource(
    "apps",
    &["v1"],
    "statefulsets",
    "StatefulSet",
    "statefulset",
);
const JOB: Resource = resource("batch", &["v1"], "jobs", "Job", "job");
const CLONE_SET: Resource = resource(
    "apps.kruise.io",
    KRUISE,
    "clonesets",
    "CloneSet",
    "cloneset",
);
/// Advanced StatefulSet: v1beta1 only.
const ADVANCED_STATEFUL_SET: Resource = resource(
    "apps.kruise.io",
    &["v1beta1"],
    "statefulsets",
    "StatefulSet",
    "statefulset.apps.kruise.io",
);
const SIDECAR_SET: Resource = Resource {
    namespaced: false,
    ..resource(
        "apps.kruise.io",
        KRUISE,
        "sidecarsets",
        "SidecarSet",
        "sidecarset",
    )
};
const CONTROLLER_REVISION: Resource = resource(
    "apps",
    &["v1"],
    "controllerrevisions",
    "ControllerRevision",
    "controllerrevision",
);
const POD_UNAVAILABLE_BUDGET: Resource = resource(
    "policy.kruise.io",
    KRUISE,
    "podunavailablebudgets",
    "PodUnavailableBudget",
    "podunavailablebudget",
);
const WORKLOAD_SPREAD: Resource = resource(
    "apps.kruise.io",
    KRUISE,
    "workloadspreads",
    "WorkloadSpread",
    "workloadspread",
);
const PERSISTENT_POD_STATE: Resource = resource(
    "apps.kruise.io",
    KRUISE,
    "persistentpodstates",
    "PersistentPodState",
    "persistentpodstate",
);
/// PodProbeMarker: v1alpha1 only.
const POD_PROBE_MARKER: Resource = resource(
    "apps.kruise.io",
    &["v1alpha1"],
    "podprobemarkers",
    "PodProbeMarker",
    "podprobemarker",
);
const MUTATING_CONFIGURATION: Resource = Resource {
    namespaced: false,
    ..resource(
        "admissionregistration.k8s.io",
        &["v1"],
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfiguration",
    )
};
const VALIDATING_CONFIGURATION: Resource = Resource {
    namespaced: false,
    ..resource(
        "admissionregistration.k8s.io",
        &["v1"],
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfiguration",
    )
};

/// What is listed in the target's namespace (beside the target itself).
const IN_NAMESPACE: &[Resource] = &[
    POD,
    POD_UNAVAILABLE_BUDGET,
    WORKLOAD_SPREAD,
    PERSISTENT_POD_STATE,
    POD_PROBE_MARKER,
    DEPLOYMENT,
    REPLICA_SET,
    STATEFUL_SET,
    ADVANCED_STATEFUL_SET,
    CLONE_SET,
    JOB,
];

impl Resource {
    /// `pods`, `sidecarsets.apps.kruise.io`: as the API server names it in RBAC messages.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_owned()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_owned()
        } else {
            format!("{}/{version}", self.group)
        }
    }

    fn path(&self, version: &str, namespace: Option<&str>, name: Option<&str>) -> String {
        let mut path = if self.group.is_empty() {
            format!("/api/{version}")
        } else {
            format!("/apis/{}/{version}", self.group)
        };
        if let (true, Some(ns)) = (self.namespaced, namespace) {
            path.push_str(&format!("/namespaces/{ns}"));
        }
        path.push('/');
        path.push_str(self.plural);
        if let Some(name) = name {
            path.push('/');
            path.push_str(name);
        }
        path
    }
}

/// The kind of a `<kind>/<name>` target, as kubectl spells it; `None` for a word that is not one (the target is
/// then `<namespace>/<pod>`).
fn kind_of(word: &str) -> Option<Resource> {
    Some(match word.to_ascii_lowercase().as_str() {
        "pod" | "pods" | "po" => POD,
        "deployment" | "deployments" | "deploy" => DEPLOYMENT,
        "replicaset" | "replicasets" | "rs" => REPLICA_SET,
        "statefulset" | "statefulsets" | "sts" => STATEFUL_SET,
        "job" | "jobs" => JOB,
        "cloneset" | "clonesets" => CLONE_SET,
        "statefulset.apps.kruise.io" | "statefulsets.apps.kruise.io" | "asts" => {
            ADVANCED_STATEFUL_SET
        }
        _ => return None,
    })
}

/// What to explain: one object of the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveTarget {
    /// Its kind.
    pub resource: Resource,
    /// Its namespace; `None`: the client's default (the kubeconfig context's, else `default`).
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
}

impl LiveTarget {
    /// Reads `<namespace>/<pod>` or `<kind>/<name>` (`namespace`: `-n`, for `<kind>/<name>`).
    ///
    /// # Errors
    /// A target that is not two non-empty parts, or `-n` naming another namespace than `<namespace>/<pod>`.
    pub fn parse(target: &str, namespace: Option<&str>) -> Result<Self, String> {
        let Some((first, name)) = target
            .split_once('/')
            .filter(|(a, b)| !a.is_empty() && !b.is_empty() && !b.contains('/'))
        else {
            return Err(format!(
                "target {target:?}: want <namespace>/<pod> or <kind>/<name>"
            ));
        };
        if let Some(resource) = kind_of(first) {
            return Ok(Self {
                resource,
                namespace: namespace.map(str::to_owned),
                name: name.to_owned(),
            });
        }
        if let Some(ns) = namespace.filter(|ns| *ns != first) {
            return Err(format!(
                "target {target:?} is the pod {name} in the namespace {first}, but -n says {ns}"
            ));
        }
        Ok(Self {
            resource: POD,
            namespace: Some(first.to_owned()),
            name: name.to_owned(),
        })
    }
}

/// Where the installed configurations and the SidecarSet revisions are read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveOptions {
    /// The Kruise namespace: where the SidecarSets' ControllerRevisions live.
    pub kruise_namespace: String,
    /// Our MutatingWebhookConfiguration.
    pub mutating_configuration: String,
    /// Our ValidatingWebhookConfiguration.
    pub validating_configuration: String,
}

/// A read that failed: exit code 2, one line.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// The target does not exist.
    #[error("{what} {namespace}/{name} not found")]
    NotFound {
        /// `pod`, `deployment`, ...
        what: &'static str,
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// RBAC refused a read.
    #[error("cannot {verb} {resource}: forbidden: {message}")]
    Forbidden {
        /// `get` or `list`.
        verb: &'static str,
        /// `sidecarsets.apps.kruise.io`.
        resource: String,
        /// The API server's Status message.
        message: String,
    },
    /// Any other answer of the API server that is not the object.
    #[error("cannot {verb} {resource}: {code} {reason}: {message}")]
    Refused {
        /// `get` or `list`.
        verb: &'static str,
        /// The resource.
        resource: String,
        /// The HTTP status.
        code: u16,
        /// The Status reason.
        reason: String,
        /// The Status message.
        message: String,
    },
    /// No answer: the API server could not be reached.
    #[error("cannot reach the API server{}: {cause}", server.as_ref().map(|s| format!(" {s}")).unwrap_or_default())]
    Unreachable {
        /// Its URL, when known.
        server: Option<String>,
        /// Why, the error's causes joined.
        cause: String,
    },
    /// An answer that is not the JSON object or list asked for.
    #[error("cannot {verb} {resource}: {message}")]
    Malformed {
        /// `get` or `list`.
        verb: &'static str,
        /// The resource.
        resource: String,
        /// What was wrong.
        message: String,
    },
    /// No client: the kubeconfig (or the in-cluster configuration) cannot be read.
    #[error("cannot load the kubeconfig: {0}")]
    Kubeconfig(String),
}

/// `err` and its causes, `: `-joined, each once.
pub fn causes(err: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next = Some(err);
    while let Some(e) = next {
        let text = e.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        next = e.source();
    }
    parts.join(": ")
}

fn failed(err: kube::Error, verb: &'static str, resource: &Resource) -> LiveError {
    match err {
        kube::Error::Api(status) if status.code == 403 => LiveError::Forbidden {
            verb,
            resource: resource.qualified(),
            message: status.message,
        },
        kube::Error::Api(status) => LiveError::Refused {
            verb,
            resource: resource.qualified(),
            code: status.code,
            reason: status.reason,
            message: status.message,
        },
        kube::Error::SerdeError(e) => LiveError::Malformed {
            verb,
            resource: resource.qualified(),
            message: e.to_string(),
        },
        other => LiveError::Unreachable {
            server: None,
            // The top level only says which kind of error ("ServiceError: ..."): its causes say what happened.
            cause: other.source().map_or_else(|| other.to_string(), causes),
        },
    }
}

/// GET of `path`: the JSON answered, `None` on 404.
async fn get(
    client: &kube::Client,
    path: &str,
    verb: &'static str,
    resource: &Resource,
) -> Result<Option<Value>, LiveError> {
    let request = http::Request::get(path)
        .body(Vec::new())
        .map_err(|e| LiveError::Malformed {
            verb,
            resource: resource.qualified(),
            message: e.to_string(),
        })?;
    match client.request::<Value>(request).await {
        Ok(v) => Ok(Some(v)),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(None),
        Err(e) => Err(failed(e, verb, resource)),
    }
}

/// GET of one object, at the first version served: the object with its apiVersion and kind, `None` when no
/// version has it.
async fn get_object(
    client: &kube::Client,
    resource: &Resource,
    namespace: Option<&str>,
    name: &str,
) -> Result<Option<Value>, LiveError> {
    for version in resource.versions {
        let path = resource.path(version, namespace, Some(name));
        if let Some(mut object) = get(client, &path, "get", resource).await? {
            object["apiVersion"] = json!(resource.api_version(version));
            object["kind"] = json!(resource.kind);
            return Ok(Some(object));
        }
    }
    Ok(None)
}

/// LIST at the first version served, each item with its apiVersion and kind; empty when no version is served.
async fn list(
    client: &kube::Client,
    resource: &Resource,
    namespace: Option<&str>,
) -> Result<Vec<Value>, LiveError> {
    for version in resource.versions {
        let path = resource.path(version, namespace, None);
        let Some(mut answer) = get(client, &path, "list", resource).await? else {
            continue;
        };
        let Some(items) = answer.get_mut("items").and_then(Value::as_array_mut) else {
            return Err(LiveError::Malformed {
                verb: "list",
                resource: resource.qualified(),
                message: "the answer has no items".to_owned(),
            });
        };
        let mut items = std::mem::take(items);
        for item in &mut items {
            item["apiVersion"] = json!(resource.api_version(version));
            item["kind"] = json!(resource.kind);
        }
        return Ok(items);
    }
    Ok(Vec::new())
}

/// What was read.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The cluster state, as `--objects` would give it.
    pub cluster: FixtureCluster,
    /// The target, with its apiVersion and kind.
    pub target: Value,
}

/// Reads the target and the cluster state around it (docs/explain.md §1, "Live"), GET and LIST only.
///
/// # Errors
/// The target not found, a read refused, the API server unreachable.
pub async fn snapshot(
    client: kube::Client,
    target: &LiveTarget,
    options: &LiveOptions,
) -> Result<Snapshot, LiveError> {
    let namespace = target
        .namespace
        .clone()
        .unwrap_or_else(|| client.default_namespace().to_owned());
    let Some(object) =
        get_object(&client, &target.resource, Some(&namespace), &target.name).await?
    else {
        return Err(LiveError::NotFound {
            what: target.resource.singular,
            namespace,
            name: target.name.clone(),
        });
    };
    let mut objects = Vec::new();
    if let Some(ns) = get_object(&client, &NAMESPACE, None, &namespace).await? {
        objects.push(ns);
    }
    objects.extend(list(&client, &SIDECAR_SET, None).await?);
    objects.extend(
        list(
            &client,
            &CONTROLLER_REVISION,
            Some(&options.kruise_namespace),
        )
        .await?,
    );
    for resource in IN_NAMESPACE {
        objects.extend(list(&client, resource, Some(&namespace)).await?);
    }
    for (resource, name) in [
        (&MUTATING_CONFIGURATION, &options.mutating_configuration),
        (&VALIDATING_CONFIGURATION, &options.validating_configuration),
    ] {
        objects.extend(get_object(&client, resource, None, name).await?);
    }
    let mut cluster = FixtureCluster::default();
    for object in objects {
        cluster
            .insert(object.clone())
            .map_err(|message| LiveError::Malformed {
                verb: "read",
                resource: format!(
                    "{} {}",
                    object["kind"].as_str().unwrap_or_default(),
                    object["metadata"]["name"].as_str().unwrap_or_default()
                ),
                message,
            })?;
    }
    Ok(Snapshot {
        cluster,
        target: object,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_read_as_kubectl_spells_them() {
        let t = LiveTarget::parse("shop/web-0", None).unwrap();
        assert_eq!(
            (t.resource, t.namespace.as_deref(), t.name.as_str()),
            (POD, Some("shop"), "web-0")
        );
        let t = LiveTarget::parse("deploy/web", Some("shop")).unwrap();
        assert_eq!(t.resource, DEPLOYMENT);
        assert_eq!(t.namespace.as_deref(), Some("shop"));
        assert_eq!(
            LiveTarget::parse("deployment/web", None).unwrap().namespace,
            None
        );
        assert_eq!(
            LiveTarget::parse("asts/db", None).unwrap().resource,
            ADVANCED_STATEFUL_SET
        );
        assert_eq!(
            LiveTarget::parse("statefulset.apps.kruise.io/db", None)
                .unwrap()
                .resource
                .group,
            "apps.kruise.io"
        );
        assert_eq!(
            LiveTarget::parse("sts/db", None).unwrap().resource,
            STATEFUL_SET
        );
        assert_eq!(LiveTarget::parse("jobs/r", None).unwrap().resource, JOB);
        assert_eq!(
            LiveTarget::parse("cloneset/c", None).unwrap().resource,
            CLONE_SET
        );
        assert_eq!(
            LiveTarget::parse("rs/r", None).unwrap().resource,
            REPLICA_SET
        );
        assert_eq!(LiveTarget::parse("po/p", None).unwrap().resource, POD);
        for bad in ["web-0", "/web", "shop/", "a/b/c"] {
            assert!(LiveTarget::parse(bad, None).is_err(), "{bad}");
        }
        assert!(LiveTarget::parse("shop/web-0", Some("other")).is_err());
        assert!(LiveTarget::parse("shop/web-0", Some("shop")).is_ok());
    }

    #[test]
    fn paths_and_names() {
        assert_eq!(
            SIDECAR_SET.path("v1beta1", Some("x"), None),
            "/apis/apps.kruise.io/v1beta1/sidecarsets"
        );
        assert_eq!(
            POD.path("v1", Some("shop"), Some("web-0")),
            "/api/v1/namespaces/shop/pods/web-0"
        );
        assert_eq!(
            NAMESPACE.path("v1", None, Some("shop")),
            "/api/v1/namespaces/shop"
        );
        assert_eq!(SIDECAR_SET.qualified(), "sidecarsets.apps.kruise.io");
        assert_eq!(POD.qualified(), "pods");
    }
}
