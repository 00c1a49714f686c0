//! The shared copies of the strings the pod cache holds many times over: every pod of a workload carries
//! the same labels, the same SidecarSet hash annotations (a few hundred bytes each), the same container
//! names, images and image IDs. Each pod the watch decodes is pointed at one copy of each
//! ([`kruise_webhooks::api::pod::SlimPod::share_strings`]), so 10,000 pods of a few hundred workloads hold
//! each distinct string once instead of 10,000 times.
//!
//! Strings no pod holds any more (a pod's unique value, a workload long deleted) are dropped when the table
//! has doubled since it was last swept: the table costs at most about twice what is in use.

use std::collections::HashSet;
use std::sync::{Arc, LazyLock, Mutex};

use kruise_webhooks::api::pod::SlimPod;

struct Table {
    strings: HashSet<Arc<str>>,
    /// The size at which the table is next swept.
    sweep_at: usize,
}

/// The smallest size at which the table is swept.
const MIN_SWEEP: usize = 4096;

static TABLE: LazyLock<Mutex<Table>> = LazyLock::new(|| {
    Mutex::new(Table {
        strings: HashSet::new(),
        sweep_at: MIN_SWEEP,
    })
});

fn shared_in(table: &mut Table, s: &str) -> Arc<str> {
    if let Some(shared) = table.strings.get(s) {
        return shared.clone();
    }
    if table.strings.len() >= table.sweep_at {
        // Held by the table only: nobody reads it any more.
        table.strings.retain(|s| Arc::strong_count(s) > 1);
        table.sweep_at = (table.strings.len() * 2).max(MIN_SWEEP);
    }
    let shared: Arc<str> = Arc::from(s);
    table.strings.insert(shared.clone());
    shared
}

/// The shared copy of `s`.
pub fn intern(s: &str) -> Arc<str> {
    shared_in(&mut TABLE.lock().unwrap_or_else(|p| p.into_inner()), s)
}

/// What the pod watch does to each pod before it is stored: the metadata nothing reads dropped, the strings
/// shared (one lock for the whole pod).
pub fn strip_and_share(pod: &mut SlimPod) {
    super::shared::strip_unread_metadata(pod);
    let mut table = TABLE.lock().unwrap_or_else(|p| p.into_inner());
    pod.share_strings(&mut |s| shared_in(&mut table, s));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_strings_share_one_copy_and_unheld_ones_are_swept() {
        let a = intern("app.kubernetes.io/name-intern-test");
        let b = intern(&String::from("app.kubernetes.io/name-intern-test"));
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(&*a, "app.kubernetes.io/name-intern-test");
        // Past the sweep size, the strings nobody holds go; held ones stay shared.
        let held: Vec<Arc<str>> = (0..10).map(|i| intern(&format!("held-{i}"))).collect();
        for i in 0..3 * MIN_SWEEP {
            intern(&format!("dropped-{i}"));
        }
        let table = TABLE.lock().unwrap();
        assert!(
            table.strings.len() < 3 * MIN_SWEEP,
            "{}",
            table.strings.len()
        );
        assert!(held.iter().all(|h| table.strings.contains(h)));
        assert!(table.strings.contains(&*a));
    }

    #[test]
    fn pods_of_one_workload_share_their_labels_annotations_and_images() {
        let pod = |name: &str| -> SlimPod {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": name, "namespace": "ns", "labels": {"app": "web"},
                    "annotations": {"kruise.io/sidecarset-hash": "{\"a\":{\"hash\":\"h\"}}"}},
                "spec": {"containers": [{"name": "app", "image": "registry/web:1"}]},
                "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                    "containerStatuses": [{"name": "app", "image": "registry/web:1", "imageID": "registry/web@sha256:0"}]}
            }))
            .unwrap()
        };
        let (mut p, mut q) = (pod("web-0"), pod("web-1"));
        assert_eq!(p.labels, q.labels);
        strip_and_share(&mut p);
        strip_and_share(&mut q);
        let value = |p: &SlimPod| {
            p.annotations
                .get("kruise.io/sidecarset-hash")
                .unwrap()
                .as_ptr()
        };
        assert_eq!(value(&p), value(&q));
        let image_id = |p: &SlimPod| {
            p.status
                .as_ref()
                .unwrap()
                .container_statuses
                .as_ref()
                .unwrap()[0]
                .image_id
                .as_ptr()
        };
        assert_eq!(image_id(&p), image_id(&q));
        // Still read as decoded.
        assert_eq!(p.labels.get("app"), Some("web"));
        assert_eq!(p.metadata.name.as_deref(), Some("web-0"));
    }
}
