//! Replicas of the server on the stand-in API server ([`super::apiserver`]): caches of their own, over a
//! client of their own, synced before a test goes on.

use std::time::Duration;

use kruise_webhook::AppState;
use kruise_webhook::cache::{Cluster, LiveCache};
use kruise_webhook::config::ServeConfig;

/// The cluster view over `cache`, once every informer has synced (a test that waits more than 10 s fails).
pub async fn synced(cache: LiveCache) -> Cluster {
    let cluster = Cluster::Live(cache);
    tokio::time::timeout(Duration::from_secs(10), async {
        while !cluster.synced() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("caches synced");
    cluster
}

/// A replica of the server over `cache`, synced ([`synced`]), with the loopback configuration.
pub async fn replica(cache: LiveCache) -> AppState {
    let cluster = synced(cache).await;
    let config = ServeConfig::for_loopback(Vec::new(), std::env::temp_dir());
    AppState::new(config, cluster)
}
