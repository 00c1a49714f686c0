//! Commits the status intents of a verdict against the API server before the answer stands (STYLE §2,
//! DECISIONS 10): the PodUnavailableBudget spends of the pod gate, and the WorkloadSpread records of the pod
//! webhooks (a pod's place reserved in a subset at CREATE, a pending deletion at DELETE or eviction).
//!
//! An intent is the object as the decision read it with the record added. It is written with
//! `PUT .../status` carrying that object's resourceVersion, so the API server refuses it (409) when anyone
//! wrote the object since: another replica's record, the status controller. Then the object is read again
//! and the pure decision runs again on the fresh object (it may now refuse, choose another subset, or find
//! the pod already recorded), at most [`ATTEMPTS`] writes in all, a jittered 1-8 ms apart. A record is
//! relied on only once written: a write that fails otherwise, or a conflict on the last attempt, refuses
//! the request with a message that says so (a PUB spend: 403; a WorkloadSpread record: 500 at CREATE, 400
//! at DELETE, as OpenKruise answers its errors there). Therefore no replica ever allows more disruptions
//! than the budget it read from the API server, nor places more pods in a subset than its `maxReplicas`.
//!
//! Within a replica the writes of one object are serialised by a lock per object, and each decision reads
//! the newest copy this replica knows ([`crate::cache`] keeps the object each write returned until the
//! informer catches up), so a replica never conflicts with itself: conflicts only come from other writers.
//!
//! A verdict may carry two intents (a pod deletion recorded in its WorkloadSpread, then spending its PUB):
//! they are committed one object at a time, in order, each after deciding again under that object's lock;
//! the record already written is then in the newest copy, so the new decision does not ask for it again.
//!
//! Without an API server (`--objects`, `review`) intents are not performed: the verdict stands as decided.

use std::time::Duration;

use kube::api::{Api, PostParams};
use tokio::time::Instant;

use kruise_webhooks::api::podunavailablebudget::PodUnavailableBudget;
use kruise_webhooks::api::workloadspread::WorkloadSpread;
use kruise_webhooks::verdict::{BudgetSpend, Denial, SpreadRecord, StatusIntent};
use kruise_webhooks::{Verdict, WebhookError};

use crate::cache::{Cluster, LiveCache};
use crate::metrics::Metrics;

/// Status writes per object: the first and two after conflicts.
pub const ATTEMPTS: usize = 3;
/// The longest a commit may take, reads and writes together: well inside the webhook's 10 s timeout.
pub const COMMIT_TIMEOUT: Duration = Duration::from_secs(6);
/// The most objects one verdict writes (a WorkloadSpread and a PUB today).
const MAX_OBJECTS: usize = 4;

/// The object one commit writes, and what a failure to write it answers.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    /// A PodUnavailableBudget: a spend not recorded refuses the disruption (403).
    Budget((String, String)),
    /// A WorkloadSpread: a record not written fails the request with this code.
    Spread((String, String), u16),
}

impl Target {
    fn of(intent: &StatusIntent) -> Self {
        match intent {
            StatusIntent::BudgetSpend(spend) => Self::Budget(spend.key()),
            StatusIntent::SpreadRecord(record) => Self::Spread(record.key(), record.failure_code),
        }
    }

    fn is(&self, intent: &StatusIntent) -> bool {
        match (self, intent) {
            (Self::Budget(key), StatusIntent::BudgetSpend(spend)) => spend.key() == *key,
            (Self::Spread(key, _), StatusIntent::SpreadRecord(record)) => record.key() == *key,
            _ => false,
        }
    }

    fn key(&self) -> &(String, String) {
        match self {
            Self::Budget(key) | Self::Spread(key, _) => key,
        }
    }

    fn lock(&self, cache: &LiveCache) -> std::sync::Arc<tokio::sync::Mutex<()>> {
        match self {
            Self::Budget(key) => cache.budget_copies().lock(key),
            Self::Spread(key, _) => cache.spread_copies().lock(key),
        }
    }

    fn record_write(&self, metrics: &Metrics, result: &str) {
        match self {
            Self::Budget(_) => metrics.record_budget_write(result),
            Self::Spread(..) => metrics.record_spread_write(result),
        }
    }

    /// The refusal of a request whose record could not be written.
    fn unrecorded(&self, why: &str) -> Verdict {
        let (namespace, name) = self.key();
        match self {
            Self::Budget(_) => Verdict::deny(Denial {
                code: 403,
                reason: Some("Forbidden"),
                message: format!(
                    "the disruption could not be recorded in PodUnavailableBudget {namespace}/{name}, so it is refused: {why}"
                ),
            }),
            Self::Spread(_, code) => Verdict::deny(Denial {
                code: *code,
                reason: None,
                message: format!(
                    "the pod could not be recorded in the status of WorkloadSpread {namespace}/{name}: {why}"
                ),
            }),
        }
    }

    /// The refusal after the last attempt met a conflict: the API server's text, as OpenKruise answers.
    fn conflicted(&self, conflict: String) -> Verdict {
        match self {
            Self::Budget(_) => Verdict::deny(Denial {
                code: 403,
                reason: Some("Forbidden"),
                message: conflict,
            }),
            Self::Spread(_, code) => Verdict::deny(Denial {
                code: *code,
                reason: None,
                message: conflict,
            }),
        }
    }

    /// Writes the intent; the object written is kept as the newest copy.
    async fn write(&self, cache: &LiveCache, intent: &StatusIntent) -> Result<(), kube::Error> {
        match intent {
            StatusIntent::BudgetSpend(spend) => {
                let api = Api::namespaced(cache.client().clone(), &self.key().0);
                let written = write_budget(&api, spend).await?;
                cache.budget_copies().remember(written);
            }
            StatusIntent::SpreadRecord(record) => {
                let api = Api::namespaced(cache.client().clone(), &self.key().0);
                let written = write_spread(&api, record).await?;
                cache.spread_copies().remember(written);
            }
        }
        Ok(())
    }

    /// Reads the object again from the API server into the copies; `false` when it is gone.
    async fn reread(&self, cache: &LiveCache) -> Result<bool, kube::Error> {
        let (namespace, name) = self.key();
        match self {
            Self::Budget(_) => {
                let api: Api<PodUnavailableBudget> =
                    Api::namespaced(cache.client().clone(), namespace);
                Ok(match api.get_opt(name).await? {
                    Some(fresh) => {
                        cache.budget_copies().remember(fresh);
                        true
                    }
                    None => false,
                })
            }
            Self::Spread(..) => {
                let api: Api<WorkloadSpread> = Api::namespaced(cache.client().clone(), namespace);
                Ok(match api.get_opt(name).await? {
                    Some(fresh) => {
                        cache.spread_copies().remember(fresh);
                        true
                    }
                    None => {
                        cache.spread_copies().forget(self.key());
                        false
                    }
                })
            }
        }
    }

    /// The verdict once the object is gone: a PUB that went away protects nothing any more (DECISIONS 7),
    /// its warnings go too; a WorkloadSpread that went away records nothing (spec/workloadspread.md §5.7).
    fn gone(&self, mut verdict: Verdict) -> Verdict {
        verdict.intents.retain(|i| !self.is(i));
        if matches!(self, Self::Budget(_)) {
            verdict.warnings.clear();
        }
        verdict
    }
}

/// The pause after the `attempt`-th write (1-based) met a conflict: 1-2 ms, then 4-8 ms, jittered so that
/// replicas that collided do not collide again. Short: the writes of this object on this replica wait
/// behind it, and the re-read that follows takes a round trip of its own.
fn backoff(attempt: usize) -> Duration {
    let base = 1u64 << (2 * attempt.saturating_sub(1).min(4));
    let jitter = crate::server::admission::random_unit();
    Duration::from_micros((base as f64 * 1000.0 * (1.0 + jitter)) as u64)
}

/// Commits the intents of `verdict`. `decide` runs the pure decision again on the cluster as it is then
/// (this replica's newest copy of each object included); it is called under each object's lock, and after
/// each conflict on the re-read object.
///
/// # Errors
/// What `decide` returns.
pub async fn commit(
    cluster: &Cluster,
    metrics: &Metrics,
    verdict: Verdict,
    decide: impl Fn() -> Result<Verdict, WebhookError>,
) -> Result<Verdict, WebhookError> {
    let Cluster::Live(cache) = cluster else {
        return Ok(verdict);
    };
    let deadline = Instant::now() + COMMIT_TIMEOUT;
    let mut verdict = verdict;
    for _ in 0..MAX_OBJECTS {
        let Some(target) = verdict.intents.first().map(Target::of) else {
            return Ok(verdict);
        };
        let lock = target.lock(cache);
        let committed = tokio::time::timeout_at(deadline, async {
            let _held = lock.lock().await;
            commit_one(cache, metrics, &target, &decide).await
        })
        .await;
        verdict = match committed {
            Ok(result) => result?,
            Err(_) => {
                target.record_write(metrics, "error");
                return Ok(target.unrecorded(&format!(
                    "the API server did not answer within {}s",
                    COMMIT_TIMEOUT.as_secs()
                )));
            }
        };
        if !verdict.is_allowed() {
            return Ok(verdict);
        }
    }
    match verdict.intents.first().map(Target::of) {
        None => Ok(verdict),
        Some(target) => Ok(target.unrecorded("the records kept changing")),
    }
}

/// Commits the intent of one object, under its lock: the verdict without it once written.
async fn commit_one(
    cache: &LiveCache,
    metrics: &Metrics,
    target: &Target,
    decide: &impl Fn() -> Result<Verdict, WebhookError>,
) -> Result<Verdict, WebhookError> {
    // Decided again under the lock: a write of this replica may have moved the object while this one waited.
    let mut verdict = decide()?;
    let mut conflict = String::new();
    for attempt in 1..=ATTEMPTS {
        let Some(at) = verdict.intents.iter().position(|i| target.is(i)) else {
            return Ok(verdict);
        };
        match target.write(cache, &verdict.intents[at]).await {
            Ok(()) => {
                target.record_write(metrics, "written");
                tracing::debug!(object = %format!("{}/{}", target.key().0, target.key().1), attempt, "status recorded");
                verdict.intents.remove(at);
                return Ok(verdict);
            }
            Err(kube::Error::Api(e)) if e.code == 409 => {
                target.record_write(metrics, "conflict");
                conflict = e.message;
            }
            Err(kube::Error::Api(e)) if e.code == 404 => {
                target.record_write(metrics, "not_found");
                return Ok(target.gone(verdict));
            }
            Err(e) => {
                target.record_write(metrics, "error");
                tracing::warn!(object = %format!("{}/{}", target.key().0, target.key().1), error = %e, "status record not written");
                return Ok(target.unrecorded(&e.to_string()));
            }
        }
        tokio::time::sleep(backoff(attempt)).await;
        match target.reread(cache).await {
            Ok(true) => {}
            Ok(false) => return Ok(target.gone(verdict)),
            Err(e) => return Ok(target.unrecorded(&e.to_string())),
        }
        verdict = decide()?;
    }
    // The last decision, on the object read after the last conflict, may need no write (the budget is now
    // spent, the pod recorded, no room left): it stands. Otherwise the record could not be written.
    if !verdict.intents.iter().any(|i| target.is(i)) {
        return Ok(verdict);
    }
    Ok(target.conflicted(conflict))
}

async fn write_budget(
    api: &Api<PodUnavailableBudget>,
    spend: &BudgetSpend,
) -> Result<PodUnavailableBudget, kube::Error> {
    let name = spend.budget.metadata.name.clone().unwrap_or_default();
    if spend.budget.api_version.is_empty() || spend.budget.kind.is_empty() {
        // A PUT names its kind; an object from a typed read always has it, this one is filled in.
        let mut budget = spend.budget.clone();
        budget.api_version = "policy.kruise.io/v1beta1".into();
        budget.kind = "PodUnavailableBudget".into();
        return api
            .replace_status(&name, &PostParams::default(), &budget)
            .await;
    }
    api.replace_status(&name, &PostParams::default(), &spend.budget)
        .await
}

async fn write_spread(
    api: &Api<WorkloadSpread>,
    record: &SpreadRecord,
) -> Result<WorkloadSpread, kube::Error> {
    let name = record.spread.metadata.name.clone().unwrap_or_default();
    // The stored version, whatever the copy read says: the status is written at v1beta1 (the hub).
    let mut spread = record.spread.clone();
    spread.api_version = "apps.kruise.io/v1beta1".into();
    spread.kind = "WorkloadSpread".into();
    api.replace_status(&name, &PostParams::default(), &spread)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_is_tens_of_milliseconds_in_total() {
        for _ in 0..100 {
            let total: Duration = (1..ATTEMPTS).map(backoff).sum();
            assert!(total >= Duration::from_millis(5) && total <= Duration::from_millis(10));
        }
    }
}
