//! Which resources the cluster serves, asked once at start-up: the Kruise kinds whose webhook paths, caches
//! and controllers this replica runs, and the optional workload kinds ([`super::workloads::ServedKinds`]).

use std::time::Duration;

use kube::Client;

/// Whether the cluster serves `resource` in `group_version`, as OpenKruise decides it (webhook-server.md §4):
/// only a group/version that is listed without the resource reads as no. One that cannot be fetched (404, or
/// still failing after 4 attempts 0.5 s × 5ⁿ apart) reads as present, so that a transient apiserver error at
/// start-up does not leave this replica without a webhook path the configuration still routes to it.
pub async fn discover(client: &Client, group_version: &str, resource: &str) -> bool {
    let mut delay = Duration::from_millis(500);
    for attempt in 1..=4 {
        match client.list_api_group_resources(group_version).await {
            Ok(list) => return list.resources.iter().any(|r| r.name == resource),
            Err(kube::Error::Api(e)) if e.code == 404 => break,
            Err(e) => {
                tracing::warn!(group_version, attempt, error = %e, "discovery failed");
                if attempt < 4 {
                    tokio::time::sleep(delay).await;
                    delay *= 5;
                }
            }
        }
    }
    tracing::warn!(
        group_version,
        resource,
        "group/version not discoverable: assuming the resource is served"
    );
    true
}
