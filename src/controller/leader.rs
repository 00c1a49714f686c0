//! Leader election on the coordination.k8s.io/v1 Lease `<namespace>/kruise-manager` (spec/webhook-server.md
//! §9), the lock OpenKruise's manager takes, so this binary and a not-yet-terminated OpenKruise leader never
//! run controllers side by side during a swap.
//!
//! The algorithm is client-go's `leaderelection` (`tryAcquireOrRenew`), with its timings (lease 15 s, renew
//! deadline 10 s, retry 2 s by default):
//! - a candidate reads the Lease every retry period (jittered by up to 1.2 x); it creates it when absent and
//!   takes it over when the holder is empty or when the record has not changed for the lease duration, as
//!   measured on **this** replica's clock since it last saw the record change (clocks of different
//!   machines are never compared);
//! - the leader renews every retry period: first optimistically (an update on the resourceVersion it wrote
//!   last), then, when that fails, by re-reading the Lease (the slow path, counted in
//!   `leader_election_slowpath_total{name}`) and updating on the fresh resourceVersion;
//! - a 409 Conflict is never retried blindly: the next attempt re-reads the Lease;
//! - leadership ends when no renewal succeeds within the renew deadline, or at once when the Lease shows
//!   another holder; the replica then goes back to being a candidate;
//! - on shutdown a leader **releases** the Lease (client-go's `ReleaseOnCancel: true`, DECISIONS 23; OpenKruise
//!   leaves it to expire, spec §9): once the controllers have stopped, it updates the Lease on the
//!   resourceVersion it wrote last with `holderIdentity: ""`, `leaseDurationSeconds: 1`, `acquireTime` =
//!   `renewTime` = now and `leaseTransitions` kept, as client-go's `release` does. A candidate takes over a
//!   Lease with an empty holder at once, so a rolling update hands leadership over in one retry period
//!   instead of the lease duration. The release is attempted only while this replica still holds the Lease,
//!   at most once and within [`RELEASE_TIMEOUT`]; if it fails the Lease simply expires.
//!
//! Leadership is published on a watch channel ([`LeaderElector::is_leader`]) and in the
//! `kruise_manager_is_leader` gauge. The controllers write through [`gated`]: a client that refuses, without
//! sending it, every request other than a GET made while this replica does not lead. Dropping a controller
//! on leadership loss (src/controller/runtime.rs) abandons its reconciles, but a reconcile polled in the
//! same instant could still start a write; the gate makes "no controller write after leadership is lost"
//! hold at the point a request is issued. (A request already sent when leadership ends cannot be called
//! back: the API server has no fencing, as for client-go's controllers.) All timing uses tokio's clock (tests run with a paused clock); the
//! Lease's `acquireTime` / `renewTime` are wall-clock timestamps.

use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, PostParams};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::config::LeaderElectionConfig;
use crate::metrics::{LeaseLabels, Metrics};

/// client-go's `JitterFactor` for the candidate's retry period.
const JITTER_FACTOR: f64 = 1.2;

/// The longest a release of the Lease on shutdown may take (client-go allows the renew deadline; a pod being
/// terminated has less to spare, and a release that does not come in time only costs the lease duration).
pub const RELEASE_TIMEOUT: Duration = Duration::from_secs(3);

/// 64 random bits: the SipHash of nothing under a fresh `RandomState` (its keys come from the operating
/// system's random source, and every new state on a thread uses new keys).
fn random_u64() -> u64 {
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
}

/// A random (version 4) UUID.
pub fn random_uuid() -> String {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&random_u64().to_be_bytes());
    bytes[8..].copy_from_slice(&random_u64().to_be_bytes());
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// This replica's holder identity, `<hostname>_<uuid>` as OpenKruise's manager builds it.
pub fn default_identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned());
    format!("{host}_{}", random_uuid())
}

/// `period` stretched by a random factor in [1, 1 + `factor`) (`wait.Jitter`).
pub(crate) fn jitter(period: Duration, factor: f64) -> Duration {
    // The top 53 bits as a uniform draw from [0, 1).
    let unit = (random_u64() >> 11) as f64 / (1u64 << 53) as f64;
    period.mul_f64(1.0 + unit * factor)
}

/// A write refused because this replica does not lead.
#[derive(Debug, thiserror::Error)]
#[error("not the leader: {method} {path} refused")]
pub struct NotLeader {
    /// The method of the refused request.
    pub method: http::Method,
    /// Its path.
    pub path: String,
}

/// `client` for the controllers: every request but a GET (reads and watches) is refused with [`NotLeader`],
/// without reaching the API server, while `leader` is false.
pub fn gated(client: Client, leader: watch::Receiver<bool>) -> Client {
    let namespace = client.default_namespace().to_owned();
    let service = tower::service_fn(move |request: http::Request<kube::client::Body>| {
        let client = client.clone();
        let leading = *leader.borrow();
        async move {
            if request.method() != http::Method::GET && !leading {
                let refused = NotLeader {
                    method: request.method().clone(),
                    path: request.uri().path().to_owned(),
                };
                tracing::warn!(error = %refused, "a controller write after leadership ended");
                return Err(kube::Error::Service(Box::new(refused)));
            }
            client.send(request).await
        }
    });
    Client::new(service, namespace)
}

/// The candidate's retry period, jittered as client-go's.
fn jittered(period: Duration) -> Duration {
    jitter(period, JITTER_FACTOR)
}

/// Now, to the microsecond the Lease stores (so a re-read record compares equal to the one written).
fn now_micro() -> MicroTime {
    let now = Timestamp::now();
    MicroTime(Timestamp::from_microsecond(now.as_microsecond()).unwrap_or(now))
}

/// The Lease record as last observed to change.
struct Observed {
    /// The Lease last read or written: its resourceVersion guards the next update.
    lease: Lease,
    /// Its record (`spec`).
    record: LeaseSpec,
    /// When the record was last seen to change, on this replica's clock.
    at: Instant,
}

/// The election state machine (client-go's `LeaderElector`).
struct Elector {
    api: Api<Lease>,
    namespace: String,
    name: String,
    identity: String,
    lease_duration: Duration,
    renew_deadline: Duration,
    retry_period: Duration,
    observed: Option<Observed>,
    metrics: Metrics,
    leader: watch::Sender<bool>,
}

/// What a Lease call can end in.
enum CallError {
    NotFound,
    Other(String),
}

impl Elector {
    fn observed_holder(&self) -> Option<&str> {
        self.observed
            .as_ref()
            .and_then(|o| o.record.holder_identity.as_deref())
    }

    /// The observed record names this replica.
    fn holds_lease(&self) -> bool {
        self.observed_holder() == Some(self.identity.as_str())
    }

    /// The observed record has not expired: it changed less than its lease duration ago.
    fn lease_valid(&self, now: Instant) -> bool {
        self.observed.as_ref().is_some_and(|o| {
            let secs = o.record.lease_duration_seconds.unwrap_or(0).max(0);
            o.at + Duration::from_secs(u64::try_from(secs).unwrap_or(0)) > now
        })
    }

    fn observe_written(&mut self, lease: Lease, record: LeaseSpec) {
        self.observed = Some(Observed {
            lease,
            record,
            at: Instant::now(),
        });
    }

    async fn call<T>(
        &self,
        deadline: Instant,
        fut: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, CallError> {
        match tokio::time::timeout_at(deadline, fut).await {
            Err(_) => Err(CallError::Other("timed out".to_owned())),
            Ok(Err(kube::Error::Api(s))) if s.code == 404 => Err(CallError::NotFound),
            Ok(Err(e)) => Err(CallError::Other(e.to_string())),
            Ok(Ok(v)) => Ok(v),
        }
    }

    async fn update(&self, deadline: Instant, record: &LeaseSpec) -> Result<Lease, CallError> {
        let Some(observed) = &self.observed else {
            return Err(CallError::Other("lease not read yet".to_owned()));
        };
        let mut lease = observed.lease.clone();
        lease.spec = Some(record.clone());
        self.call(
            deadline,
            self.api.replace(&self.name, &PostParams::default(), &lease),
        )
        .await
    }

    /// One attempt (client-go's `tryAcquireOrRenew`); true when this replica holds the Lease afterwards.
    async fn try_acquire_or_renew(&mut self, deadline: Instant) -> bool {
        let now = now_micro();
        let mut record = LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(
                i32::try_from(self.lease_duration.as_secs()).unwrap_or(i32::MAX),
            ),
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            lease_transitions: Some(0),
            ..LeaseSpec::default()
        };

        // 1. Fast path: the leader updates on the resourceVersion it wrote last.
        if self.holds_lease() && self.lease_valid(Instant::now()) {
            if let Some(o) = &self.observed {
                record.acquire_time = o.record.acquire_time.clone();
                record.lease_transitions = o.record.lease_transitions;
            }
            match self.update(deadline, &record).await {
                Ok(lease) => {
                    self.observe_written(lease, record);
                    return true;
                }
                Err(CallError::NotFound) => {
                    tracing::warn!(lease = %self.name, "renewing the leader Lease: not found; falling back to the slow path");
                }
                Err(CallError::Other(e)) => {
                    tracing::warn!(lease = %self.name, error = %e, "renewing the leader Lease failed; falling back to the slow path");
                }
            }
        }

        // 2. Read the Lease, or create it.
        let current = match self.call(deadline, self.api.get(&self.name)).await {
            Ok(lease) => lease,
            Err(CallError::NotFound) => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(self.name.clone()),
                        namespace: Some(self.namespace.clone()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(record.clone()),
                };
                return match self
                    .call(deadline, self.api.create(&PostParams::default(), &lease))
                    .await
                {
                    Ok(created) => {
                        self.observe_written(created, record);
                        true
                    }
                    Err(CallError::NotFound | CallError::Other(_)) => {
                        // A 409 here means another replica created it first: the next attempt reads it.
                        tracing::info!(lease = %self.name, "creating the leader Lease failed; will re-read it");
                        false
                    }
                };
            }
            Err(CallError::Other(e)) => {
                tracing::warn!(lease = %self.name, error = %e, "reading the leader Lease failed");
                return false;
            }
        };

        // 3. Note when the record last changed; refuse while another holder's lease is valid.
        let old = current.spec.clone().unwrap_or_default();
        match &mut self.observed {
            Some(o) if o.record == old => o.lease = current,
            _ => {
                self.observed = Some(Observed {
                    lease: current,
                    record: old.clone(),
                    at: Instant::now(),
                })
            }
        }
        let holder = old.holder_identity.as_deref().unwrap_or("");
        if !holder.is_empty() && self.lease_valid(Instant::now()) && !self.holds_lease() {
            tracing::debug!(lease = %self.name, holder, "the leader Lease is held and has not expired");
            return false;
        }

        // 4. Take over or renew, on the resourceVersion just read.
        if self.holds_lease() {
            record.acquire_time = old.acquire_time.clone();
            record.lease_transitions = old.lease_transitions;
            self.metrics
                .leader_slowpath
                .get_or_create(&LeaseLabels {
                    name: self.name.clone(),
                })
                .inc();
        } else {
            record.lease_transitions = Some(old.lease_transitions.unwrap_or(0) + 1);
        }
        match self.update(deadline, &record).await {
            Ok(lease) => {
                self.observe_written(lease, record);
                true
            }
            Err(CallError::NotFound) => false,
            Err(CallError::Other(e)) => {
                tracing::warn!(lease = %self.name, error = %e, "updating the leader Lease failed");
                false
            }
        }
    }

    /// Gives the Lease up (client-go's `release`): only while this replica holds it; true when released.
    async fn release(&mut self, deadline: Instant) -> bool {
        if !self.holds_lease() {
            return false;
        }
        let now = now_micro();
        let record = LeaseSpec {
            holder_identity: Some(String::new()),
            lease_duration_seconds: Some(1),
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            lease_transitions: self
                .observed
                .as_ref()
                .and_then(|o| o.record.lease_transitions),
            ..LeaseSpec::default()
        };
        match self.update(deadline, &record).await {
            Ok(lease) => {
                tracing::info!(lease = %self.name, identity = %self.identity, "released the leader Lease");
                self.observe_written(lease, record);
                true
            }
            Err(CallError::NotFound) => {
                tracing::warn!(lease = %self.name, "releasing the leader Lease: not found");
                false
            }
            Err(CallError::Other(e)) => {
                tracing::warn!(lease = %self.name, error = %e, "releasing the leader Lease failed; it will expire");
                false
            }
        }
    }

    /// Leadership ends on shutdown: the gauge goes to 0 and the Lease is released.
    async fn resign(mut self) {
        if self
            .leader
            .send_if_modified(|v| std::mem::replace(v, false))
        {
            tracing::info!(lease = %self.name, identity = %self.identity, "stopped leading: shutting down");
        }
        self.metrics.is_leader.set(0);
        self.release(Instant::now() + RELEASE_TIMEOUT).await;
    }

    fn set_leader(&self, leader: bool) {
        let changed = self
            .leader
            .send_if_modified(|v| std::mem::replace(v, leader) != leader);
        self.metrics.is_leader.set(i64::from(leader));
        if changed && leader {
            tracing::info!(lease = %self.name, identity = %self.identity, "became leader");
        } else if changed {
            tracing::warn!(lease = %self.name, identity = %self.identity, "stopped leading");
        }
    }

    /// Candidate, leader, candidate again… until `stop` turns true.
    async fn run(mut self, mut stop: watch::Receiver<bool>) {
        loop {
            // Candidate.
            loop {
                if self
                    .try_acquire_or_renew(Instant::now() + self.renew_deadline)
                    .await
                {
                    break;
                }
                if sleep_or_stop(jittered(self.retry_period), &mut stop).await {
                    return self.set_leader(false);
                }
            }
            self.set_leader(true);
            // Leader.
            loop {
                if sleep_or_stop(self.retry_period, &mut stop).await {
                    return self.resign().await;
                }
                let deadline = Instant::now() + self.renew_deadline;
                let renewed = loop {
                    if self.try_acquire_or_renew(deadline).await {
                        break true;
                    }
                    if !self.holds_lease() {
                        tracing::warn!(lease = %self.name, holder = self.observed_holder().unwrap_or(""), "the leader Lease has another holder");
                        break false;
                    }
                    if Instant::now() + self.retry_period >= deadline {
                        tracing::warn!(lease = %self.name, "no renewal of the leader Lease within the renew deadline");
                        break false;
                    }
                    if sleep_or_stop(self.retry_period, &mut stop).await {
                        // Still the holder as far as this replica knows: release what it may hold.
                        return self.resign().await;
                    }
                };
                if !renewed {
                    self.set_leader(false);
                    break;
                }
            }
        }
    }
}

/// Sleeps for `period`; true when `stop` turned true (or its sender is gone) meanwhile.
async fn sleep_or_stop(period: Duration, stop: &mut watch::Receiver<bool>) -> bool {
    if *stop.borrow() {
        return true;
    }
    tokio::select! {
        () = tokio::time::sleep(period) => *stop.borrow(),
        changed = stop.changed() => changed.is_err() || *stop.borrow(),
    }
}

/// A running election (or, with election disabled, a constant "leader").
pub struct LeaderElector {
    is_leader: watch::Receiver<bool>,
    /// Kept open when election is disabled, so receivers never see a closed channel.
    _constant: Option<watch::Sender<bool>>,
    stop: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
}

impl LeaderElector {
    /// Starts competing for the Lease `config.namespace/config.name` as `identity` (see
    /// [`default_identity`]).
    pub fn start(
        client: Client,
        config: &LeaderElectionConfig,
        identity: String,
        metrics: Metrics,
    ) -> Self {
        let (leader, is_leader) = watch::channel(false);
        let (stop, stop_rx) = watch::channel(false);
        metrics.is_leader.set(0);
        let elector = Elector {
            api: Api::namespaced(client, &config.namespace),
            name: config.name.clone(),
            namespace: config.namespace.clone(),
            identity,
            lease_duration: config.lease_duration,
            renew_deadline: config.renew_deadline,
            retry_period: config.retry_period,
            observed: None,
            metrics,
            leader,
        };
        tracing::info!(lease = %format!("{}/{}", config.namespace, config.name), identity = %elector.identity, "competing for leadership");
        let task = tokio::spawn(elector.run(stop_rx));
        Self {
            is_leader,
            _constant: None,
            stop,
            task: Some(task),
        }
    }

    /// Election disabled (`--enable-leader-election=false`): this replica always leads.
    pub fn always_leader(metrics: &Metrics) -> Self {
        let (constant, is_leader) = watch::channel(true);
        metrics.is_leader.set(1);
        Self {
            is_leader,
            _constant: Some(constant),
            stop: watch::channel(false).0,
            task: None,
        }
    }

    /// Leadership: true while this replica may run the controllers.
    pub fn is_leader(&self) -> watch::Receiver<bool> {
        self.is_leader.clone()
    }

    /// Stops competing; leadership (and the gauge) go to false and a Lease this replica holds is released
    /// (within [`RELEASE_TIMEOUT`]). Call it after the controllers stopped: nothing may write once another
    /// replica can lead.
    pub async fn stop(mut self) {
        let _ = self.stop.send(true);
        if let Some(task) = self.task.take()
            && let Err(e) = task.await
        {
            tracing::error!(error = %e, "the leader election task failed");
        }
    }
}
