//! Which resources the cluster serves, asked of discovery: at start-up when CustomResourceDefinitions cannot
//! be listed ([`served_version`]), and for the optional workload kinds ([`super::workloads::ServedKinds`]).

use std::time::Duration;

use kube::Client;

use super::versions::{KruiseKind, Version};

/// Whether the cluster serves `resource` in `group_version`, as OpenKruise decides it (webhook-server.md §4):
/// only a group/version that is listed without the resource reads as no. One that cannot be fetched (404, or
/// still failing after 4 attempts 0.5 s × 5ⁿ apart) reads as present, so that a transient apiserver error at
/// start-up does not leave this replica without a webhook path the configuration still routes to it.
pub async fn discover(client: &Client, group_version: &str, resource: &str) -> bool {
    match lookup(client, group_version, resource).await {
        Some(Listed::Yes) => return true,
        Some(Listed::No) => return false,
        Some(Listed::NotFound) | None => {}
    }
    tracing::warn!(
        group_version,
        resource,
        "group/version not discoverable: assuming the resource is served"
    );
    true
}

/// The version `kind` is served at, as discovery says: the newest of [`KruiseKind::known`] whose
/// group/version lists the resource. A group/version that is not found (404) is not served; one that cannot
/// be fetched at all reads as serving the kind at that version (as [`discover`]).
pub async fn served_version(client: &Client, kind: KruiseKind) -> Option<Version> {
    for &version in kind.known() {
        let group_version = kind.api_version(version);
        match lookup(client, &group_version, kind.plural()).await {
            Some(Listed::Yes) => return Some(version),
            Some(Listed::No | Listed::NotFound) => {}
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

#[derive(Debug, PartialEq, Eq)]
enum Listed {
    Yes,
    No,
    NotFound,
}

/// What discovery says of `resource` in `group_version`; `None` when it cannot be asked (4 attempts).
async fn lookup(client: &Client, group_version: &str, resource: &str) -> Option<Listed> {
    let mut delay = Duration::from_millis(500);
    for attempt in 1..=4 {
        match client.list_api_group_resources(group_version).await {
            Ok(list) => {
                return Some(if list.resources.iter().any(|r| r.name == resource) {
                    Listed::Yes
                } else {
                    Listed::No
                });
            }
            Err(kube::Error::Api(e)) if e.code == 404 => return Some(Listed::NotFound),
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
