//! Which version of a Kruise kind the cluster serves, asked of discovery at start-up when
//! CustomResourceDefinitions cannot be listed ([`served_version`]).

use std::time::Duration;

use kube::Client;

use super::versions::{KruiseKind, Version};

/// The version `kind` is served at, as discovery says: the newest of [`KruiseKind::known`] whose
/// group/version lists the resource. A group/version that is not found (404) is not served; one that cannot
/// be fetched at all (still failing after 4 attempts 0.5 s × 5ⁿ apart) reads as serving the kind at that
/// version, so that a transient apiserver error at start-up does not leave this replica without a webhook path
/// the configuration still routes to it.
pub async fn served_version(client: &Client, kind: KruiseKind) -> Option<Version> {
    for &version in kind.known() {
        let group_version = kind.api_version(version);
        match lookup(client, &group_version, kind.plural()).await {
            Some(true) => return Some(version),
            Some(false) => {}
            None => {
                tracing::warn!(
                    group_version,
                    resource = kind.plural(),
                    "group/version not discoverable: assuming the resource is served"
                );
                return Some(version);
            }
        }
    }
    None
}

/// Whether `group_version` lists `resource` (a group/version not found: no); `None` when discovery cannot be
/// asked (4 attempts).
async fn lookup(client: &Client, group_version: &str, resource: &str) -> Option<bool> {
    let mut delay = Duration::from_millis(500);
    for attempt in 1..=4 {
        match client.list_api_group_resources(group_version).await {
            Ok(list) => return Some(list.resources.iter().any(|r| r.name == resource)),
            Err(kube::Error::Api(e)) if e.code == 404 => return Some(false),
            Err(e) => {
                tracing::warn!(group_version, attempt, error = %e, "discovery failed");
                if attempt < 4 {
                    tokio::time::sleep(delay).await;
                    delay *= 5;
                }
            }
        }
    }
    None
}
