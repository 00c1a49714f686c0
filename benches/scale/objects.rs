//! The objects the scale bench's mock apiserver serves, as JSON text the way a kube-apiserver returns them
//! (managedFields of the two or three managers that wrote them included). Generated from an index on
//! demand, so the mock itself holds almost nothing in the measured process.

use std::fmt::Write as _;

/// How many of each kind.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    /// Pods (`pods / sidecar_sets` per SidecarSet, spread over the namespaces).
    pub pods: usize,
    /// SidecarSets, each with one ControllerRevision in kruise-system.
    pub sidecar_sets: usize,
    /// PodUnavailableBudgets.
    pub budgets: usize,
    /// WorkloadSpreads.
    pub spreads: usize,
    /// Namespaces.
    pub namespaces: usize,
    /// Pods (the first ones) created without their SidecarSet's sidecars (no injected list): pods that missed
    /// their sidecars (docs/missed-sidecars.md).
    pub missed: usize,
}

impl Sizes {
    /// The SidecarSet (and workload) pod `i` belongs to.
    pub fn group_of(&self, pod: usize) -> usize {
        pod % self.sidecar_sets
    }

    /// How many pods SidecarSet `j` selects.
    pub fn pods_of(&self, set: usize) -> usize {
        self.pods / self.sidecar_sets + usize::from(set < self.pods % self.sidecar_sets)
    }

    /// The namespace of pod `i`.
    pub fn namespace_of(&self, pod: usize) -> usize {
        self.group_of(pod) % self.namespaces
    }
}

/// The hash annotation value the SidecarSets carry and the pods record (all pods are up to date).
pub const SET_HASH: &str = "8bz4b4x5x7z5w8wv42v9bz9f6v8x5d2wb4fcd4wf4w7x54c4x9c945dx8z6c2zz6";
const SET_HASH_WITHOUT_IMAGE: &str =
    "4w2b5v4x8z5w8wv6c9xz8dd4x69w4c5z9dz8b5c8d2xw5c8b7d6x8v6wz6f5c74";

fn time(second: usize) -> String {
    format!(
        "2025-01-02T03:{:02}:{:02}Z",
        (second / 60) % 60,
        second % 60
    )
}

/// Pod `i` at `resource_version`, Ready or not: a Deployment's pod with an injected mesh sidecar (and the
/// name of its workload's PUB, when it has one), as the apiserver returns it (about 4 KB).
pub fn pod(sizes: &Sizes, i: usize, resource_version: u64, ready: bool) -> String {
    let group = sizes.group_of(i);
    let ns = sizes.namespace_of(i);
    let hash = "7d9f8c6b5";
    let name = format!("web-{group:04}-{hash}-{:05x}", i * 7919 % 0xfffff);
    let uid = format!("0b1c2d3e-0000-4000-8000-{i:012}");
    let (a, b) = (i / 250 % 256, i % 250);
    let node = i % 50;
    let ready_text = if ready { "True" } else { "False" };
    let revision = sidecar_set_revision(sizes, group);
    let record = format!(
        r#"{{\"sidecarset-{group:04}\":{{\"updateTimestamp\":\"2025-01-02T03:04:05Z\",\"hash\":\"{SET_HASH}\",\"sidecarSetName\":\"sidecarset-{group:04}\",\"sidecarList\":[\"proxy\"],\"controllerRevision\":\"{revision}\"}}}}"#
    );
    let record_without_image = format!(
        r#"{{\"sidecarset-{group:04}\":{{\"updateTimestamp\":\"2025-01-02T03:04:05Z\",\"hash\":\"{SET_HASH_WITHOUT_IMAGE}\",\"sidecarSetName\":\"sidecarset-{group:04}\",\"sidecarList\":[\"proxy\"],\"controllerRevision\":\"\"}}}}"#
    );
    let mut s = String::with_capacity(4400);
    let _ = write!(
        s,
        r#"{{"kind":"Pod","apiVersion":"v1","metadata":{{"name":"{name}","generateName":"web-{group:04}-{hash}-","namespace":"ns-{ns:03}","uid":"{uid}","resourceVersion":"{resource_version}","creationTimestamp":"{created}","labels":{{"app":"web-{group:04}","pod-template-hash":"{hash}","tier":"frontend"}},"annotations":{{"kruise.io/sidecarset-hash":"{record}","kruise.io/sidecarset-hash-without-image":"{record_without_image}"{injected}{related}}},"ownerReferences":[{{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-{group:04}-{hash}","uid":"1b1c2d3e-0000-4000-8000-{group:012}","controller":true,"blockOwnerDeletion":true}}],"managedFields":[{{"manager":"kube-controller-manager","operation":"Update","apiVersion":"v1","time":"{created}","fieldsType":"FieldsV1","fieldsV1":{{"f:metadata":{{"f:generateName":{{}},"f:labels":{{".":{{}},"f:app":{{}},"f:pod-template-hash":{{}},"f:tier":{{}}}},"f:ownerReferences":{{".":{{}},"k:{{\"uid\":\"1b1c2d3e-0000-4000-8000-{group:012}\"}}":{{}}}}}},"f:spec":{{"f:containers":{{"k:{{\"name\":\"app\"}}":{{".":{{}},"f:image":{{}},"f:imagePullPolicy":{{}},"f:name":{{}},"f:resources":{{".":{{}},"f:requests":{{".":{{}},"f:cpu":{{}},"f:memory":{{}}}}}}}}}},"f:dnsPolicy":{{}},"f:restartPolicy":{{}},"f:schedulerName":{{}},"f:terminationGracePeriodSeconds":{{}}}}}}}},{{"manager":"kubelet","operation":"Update","apiVersion":"v1","time":"{started}","fieldsType":"FieldsV1","fieldsV1":{{"f:status":{{"f:conditions":{{"k:{{\"type\":\"ContainersReady\"}}":{{".":{{}},"f:lastProbeTime":{{}},"f:lastTransitionTime":{{}},"f:status":{{}},"f:type":{{}}}},"k:{{\"type\":\"Ready\"}}":{{".":{{}},"f:lastProbeTime":{{}},"f:lastTransitionTime":{{}},"f:status":{{}},"f:type":{{}}}}}},"f:containerStatuses":{{}},"f:hostIP":{{}},"f:phase":{{}},"f:podIP":{{}},"f:startTime":{{}}}}}},"subresource":"status"}}]}},"spec":{{"containers":[{{"name":"proxy","image":"registry.example.com/mesh/proxy:1.22.{tag}","resources":{{"requests":{{"cpu":"10m","memory":"32Mi"}}}},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}},{{"name":"app","image":"registry.example.com/team/web:2.4.1","ports":[{{"name":"http","containerPort":8080,"protocol":"TCP"}}],"resources":{{"requests":{{"cpu":"100m","memory":"128Mi"}}}},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","serviceAccount":"default","nodeName":"node-{node:02}","securityContext":{{}},"schedulerName":"default-scheduler","priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"}},"status":{{"phase":"Running","conditions":[{{"type":"Initialized","status":"True","lastProbeTime":null,"lastTransitionTime":"{created}"}},{{"type":"Ready","status":"{ready_text}","lastProbeTime":null,"lastTransitionTime":"{started}"}},{{"type":"ContainersReady","status":"{ready_text}","lastProbeTime":null,"lastTransitionTime":"{started}"}},{{"type":"PodScheduled","status":"True","lastProbeTime":null,"lastTransitionTime":"{created}"}}],"hostIP":"172.18.0.{node}","podIP":"10.244.{a}.{b}","startTime":"{created}","containerStatuses":[{{"name":"app","state":{{"running":{{"startedAt":"{started}"}}}},"lastState":{{}},"ready":{ready},"restartCount":0,"image":"registry.example.com/team/web:2.4.1","imageID":"registry.example.com/team/web@sha256:4f53c1e1b9a0b5d2e8f8a3b9c6d7e1f0a2b3c4d5e6f708192a3b4c5d6e7f8091","containerID":"containerd://{cid:064x}","started":true}},{{"name":"proxy","state":{{"running":{{"startedAt":"{started}"}}}},"lastState":{{}},"ready":true,"restartCount":0,"image":"registry.example.com/mesh/proxy:1.22.{tag}","imageID":"registry.example.com/mesh/proxy@sha256:9a8b7c6d5e4f30211a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7081","containerID":"containerd://{cid2:064x}","started":true}}],"qosClass":"Burstable"}}}}"#,
        created = time(i),
        started = time(i + 9),
        injected = if i < sizes.missed {
            String::new()
        } else {
            format!(r#","kruise.io/sidecarset-injected-list":"sidecarset-{group:04}""#)
        },
        // As the pod webhook annotates a pod its workload's PUB protects.
        related = if group < sizes.budgets {
            format!(r#","pub.kruise.io/related-pub":"pub-{group:04}""#)
        } else {
            String::new()
        },
        tag = group % TAGS,
        cid = (i as u128).wrapping_mul(0x9e37_79b9_7f4a_7c15),
        cid2 = (i as u128 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15),
    );
    s
}

/// SidecarSet `j` (cluster-scoped) at `resource_version`, with `status` (JSON) when one was written.
pub fn sidecar_set(j: usize, resource_version: u64, status: Option<&str>) -> String {
    let status = status
        .map(|s| format!(r#","status":{s}"#))
        .unwrap_or_default();
    format!(
        r#"{{"apiVersion":"apps.kruise.io/v1beta1","kind":"SidecarSet","metadata":{{"name":"sidecarset-{j:04}","uid":"2b1c2d3e-0000-4000-8000-{j:012}","resourceVersion":"{resource_version}","generation":1,"creationTimestamp":"2025-01-01T00:00:00Z","labels":{{"team":"mesh"}},"annotations":{{"kruise.io/sidecarset-hash":"{SET_HASH}","kruise.io/sidecarset-hash-without-image":"{SET_HASH_WITHOUT_IMAGE}"}},"managedFields":[{{"manager":"kubectl-client-side-apply","operation":"Update","apiVersion":"apps.kruise.io/v1beta1","time":"2025-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{{"f:metadata":{{"f:labels":{{".":{{}},"f:team":{{}}}}}},"f:spec":{{".":{{}},"f:containers":{{}},"f:selector":{{".":{{}},"f:matchLabels":{{".":{{}},"f:app":{{}}}}}},"f:updateStrategy":{{".":{{}},"f:type":{{}}}},"f:volumes":{{}}}}}}}},{{"manager":"kruise-manager","operation":"Update","apiVersion":"apps.kruise.io/v1beta1","time":"2025-01-01T00:00:01Z","fieldsType":"FieldsV1","fieldsV1":{{"f:status":{{".":{{}},"f:collisionCount":{{}},"f:latestRevision":{{}},"f:matchedPods":{{}},"f:observedGeneration":{{}},"f:readyPods":{{}},"f:updatedPods":{{}},"f:updatedReadyPods":{{}}}}}},"subresource":"status"}}]}},"spec":{{"selector":{{"matchLabels":{{"app":"web-{j:04}"}}}},"containers":[{{"name":"proxy","image":"registry.example.com/mesh/proxy:1.22.{tag}","args":["proxy","sidecar","--log-level=warning"],"env":[{{"name":"POD_NAME","valueFrom":{{"fieldRef":{{"apiVersion":"v1","fieldPath":"metadata.name"}}}}}},{{"name":"POD_NAMESPACE","valueFrom":{{"fieldRef":{{"apiVersion":"v1","fieldPath":"metadata.namespace"}}}}}}],"resources":{{"requests":{{"cpu":"10m","memory":"32Mi"}}}},"volumeMounts":[{{"name":"mesh-certs","mountPath":"/etc/mesh/certs","readOnly":true}}],"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent","podInjectPolicy":"BeforeAppContainer","shareVolumePolicy":{{"type":"disabled"}},"upgradeStrategy":{{"upgradeType":"ColdUpgrade"}}}}],"volumes":[{{"name":"mesh-certs","secret":{{"secretName":"mesh-certs","defaultMode":420}}}}],"updateStrategy":{{"type":"RollingUpdate","maxUnavailable":1}},"injectionStrategy":{{}}}}{status}}}"#,
        tag = j % TAGS,
    )
}

/// The name of SidecarSet `j`'s only ControllerRevision.
pub fn sidecar_set_revision(_sizes: &Sizes, j: usize) -> String {
    // The data, so the hash, depends on the image tag only.
    static HASHES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let hashes = HASHES.get_or_init(|| {
        (0..TAGS)
            .map(|tag| {
                let (name, _) = revision(tag, 1);
                name.rsplit('-').next().unwrap_or_default().to_owned()
            })
            .collect()
    });
    format!("sidecarset-{j:04}-{}", hashes[j % TAGS])
}

/// Image tags the SidecarSets use (`j % TAGS`).
const TAGS: usize = 7;

/// The ControllerRevision of SidecarSet `j` as the controller creates it (`candidate_revision`), stored at
/// `resource_version`: its name and JSON text.
pub fn revision(j: usize, resource_version: u64) -> (String, String) {
    let set: kruise_webhooks::api::sidecarset::SidecarSet =
        serde_json::from_str(&sidecar_set(j, 1, None)).expect("the SidecarSet parses");
    let new = kruise_webhooks::sidecarset::status::candidate_revision(&set, "kruise-system", 1, 0);
    // As stored: a resourceVersion and a uid.
    let meta = format!(
        r#""metadata":{{"resourceVersion":"{resource_version}","uid":"3b1c2d3e-0000-4000-8000-{j:012}","#
    );
    (
        new.name().to_owned(),
        new.body().replacen(r#""metadata":{"#, &meta, 1),
    )
}

/// The status the controller computes for SidecarSet `j` when `ready` of its `pods` are ready.
pub fn sidecar_set_status(sizes: &Sizes, j: usize, pods: usize, ready: usize) -> String {
    format!(
        r#"{{"observedGeneration":1,"matchedPods":{pods},"updatedPods":{pods},"readyPods":{ready},"updatedReadyPods":{ready},"latestRevision":"{}","collisionCount":0}}"#,
        sidecar_set_revision(sizes, j)
    )
}

/// Namespace `n`.
pub fn namespace(n: usize, resource_version: u64) -> String {
    format!(
        r#"{{"kind":"Namespace","apiVersion":"v1","metadata":{{"name":"ns-{n:03}","uid":"4b1c2d3e-0000-4000-8000-{n:012}","resourceVersion":"{resource_version}","creationTimestamp":"2025-01-01T00:00:00Z","labels":{{"kubernetes.io/metadata.name":"ns-{n:03}","team":"team-{}"}},"managedFields":[{{"manager":"kubectl-create","operation":"Update","apiVersion":"v1","time":"2025-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{{"f:metadata":{{"f:labels":{{".":{{}},"f:kubernetes.io/metadata.name":{{}},"f:team":{{}}}}}}}}}}]}},"spec":{{"finalizers":["kubernetes"]}},"status":{{"phase":"Active"}}}}"#,
        n % 10
    )
}

/// PodUnavailableBudget `j`, protecting workload `j`'s pods.
pub fn budget(sizes: &Sizes, j: usize, resource_version: u64) -> String {
    let group = j % sizes.sidecar_sets;
    let pods = sizes.pods_of(group);
    format!(
        r#"{{"apiVersion":"policy.kruise.io/v1beta1","kind":"PodUnavailableBudget","metadata":{{"name":"pub-{j:04}","namespace":"ns-{ns:03}","uid":"5b1c2d3e-0000-4000-8000-{j:012}","resourceVersion":"{resource_version}","generation":1,"creationTimestamp":"2025-01-01T00:00:00Z","annotations":{{"kubectl.kubernetes.io/last-applied-configuration":"{{\"apiVersion\":\"policy.kruise.io/v1beta1\",\"kind\":\"PodUnavailableBudget\",\"metadata\":{{\"annotations\":{{}},\"name\":\"pub-{j:04}\",\"namespace\":\"ns-{ns:03}\"}},\"spec\":{{\"maxUnavailable\":\"25%\",\"selector\":{{\"matchLabels\":{{\"app\":\"web-{group:04}\"}}}}}}}}\n"}},"managedFields":[{{"manager":"kubectl-client-side-apply","operation":"Update","apiVersion":"policy.kruise.io/v1beta1","time":"2025-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{{"f:metadata":{{"f:annotations":{{".":{{}},"f:kubectl.kubernetes.io/last-applied-configuration":{{}}}}}},"f:spec":{{".":{{}},"f:maxUnavailable":{{}},"f:selector":{{}}}}}}}},{{"manager":"kruise-manager","operation":"Update","apiVersion":"policy.kruise.io/v1beta1","time":"2025-01-01T00:00:01Z","fieldsType":"FieldsV1","fieldsV1":{{"f:status":{{".":{{}},"f:currentAvailable":{{}},"f:desiredAvailable":{{}},"f:observedGeneration":{{}},"f:totalReplicas":{{}},"f:unavailableAllowed":{{}}}}}},"subresource":"status"}}]}},"spec":{{"selector":{{"matchLabels":{{"app":"web-{group:04}"}}}},"maxUnavailable":"25%"}},"status":{{"observedGeneration":1,"unavailableAllowed":{allowed},"currentAvailable":{pods},"desiredAvailable":{desired},"totalReplicas":{pods}}}}}"#,
        ns = group % sizes.namespaces,
        // 25 % of the pods, rounded up (spec/podunavailablebudget.md §6.3).
        allowed = pods.div_ceil(4),
        desired = pods - pods.div_ceil(4),
    )
}

/// WorkloadSpread `j`, spreading workload `j` over two zones (each subset labels its pods with its zone),
/// its status as the controller writes it: the aggregate and the one pod version's subsets.
pub fn spread(sizes: &Sizes, j: usize, resource_version: u64) -> String {
    let group = j % sizes.sidecar_sets;
    let pods = sizes.pods_of(group);
    format!(
        r#"{{"apiVersion":"apps.kruise.io/v1beta1","kind":"WorkloadSpread","metadata":{{"name":"spread-{j:04}","namespace":"ns-{ns:03}","uid":"6b1c2d3e-0000-4000-8000-{j:012}","resourceVersion":"{resource_version}","generation":1,"creationTimestamp":"2025-01-01T00:00:00Z","managedFields":[{{"manager":"kubectl-create","operation":"Update","apiVersion":"apps.kruise.io/v1beta1","time":"2025-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{{"f:spec":{{".":{{}},"f:scheduleStrategy":{{".":{{}},"f:type":{{}}}},"f:subsets":{{}},"f:targetRef":{{".":{{}},"f:apiVersion":{{}},"f:kind":{{}},"f:name":{{}}}}}}}}}},{{"manager":"kruise-manager","operation":"Update","apiVersion":"apps.kruise.io/v1beta1","time":"2025-01-01T00:00:01Z","fieldsType":"FieldsV1","fieldsV1":{{"f:status":{{".":{{}},"f:observedGeneration":{{}},"f:subsetStatuses":{{}},"f:versionedSubsetStatuses":{{".":{{}},"f:7d9f8c6b5":{{}}}}}}}},"subresource":"status"}}]}},"spec":{{"targetRef":{{"apiVersion":"apps/v1","kind":"Deployment","name":"web-{group:04}"}},"subsets":[{{"name":"zone-a","requiredNodeSelector":{{"matchExpressions":[{{"key":"topology.kubernetes.io/zone","operator":"In","values":["zone-a"]}}]}},"maxReplicas":"50%","patch":{{"metadata":{{"labels":{{"topology.kubernetes.io/zone":"zone-a"}}}}}}}},{{"name":"zone-b","requiredNodeSelector":{{"matchExpressions":[{{"key":"topology.kubernetes.io/zone","operator":"In","values":["zone-b"]}}]}},"patch":{{"metadata":{{"labels":{{"topology.kubernetes.io/zone":"zone-b"}}}}}}}}],"scheduleStrategy":{{"type":"Fixed"}}}},"status":{{"observedGeneration":1,"subsetStatuses":[{{"name":"zone-a","missingReplicas":0,"creatingPods":{{}},"deletingPods":{{}},"replicas":{a}}},{{"name":"zone-b","missingReplicas":-1,"creatingPods":{{}},"deletingPods":{{}},"replicas":{b}}}],"versionedSubsetStatuses":{{"7d9f8c6b5":[{{"name":"zone-a","missingReplicas":0,"replicas":{a}}},{{"name":"zone-b","missingReplicas":-1,"replicas":{b}}}]}}}}}}"#,
        ns = group % sizes.namespaces,
        a = pods / 2,
        b = pods - pods / 2,
    )
}
