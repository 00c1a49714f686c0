//! Commits the status intents of a verdict against the API server before the answer stands (STYLE §2,
//! DECISIONS 10): today the PodUnavailableBudget spends of the pod gate.
//!
//! A spend is the PUB as the decision read it with one more disruption recorded. It is written with
//! `PUT .../status` carrying that object's resourceVersion, so the API server refuses it (409) when anyone
//! wrote the PUB since: another replica's spend, the status controller. Then the PUB is read again and the
//! pure decision runs again on the fresh object (it may now refuse, or find the pod already recorded), at
//! most [`ATTEMPTS`] writes in all, a jittered 1-8 ms apart. A spend is allowed only once written: a write
//! that fails otherwise, or a conflict on the last attempt, refuses the disruption with a message that says
//! so. Therefore no replica ever allows more disruptions than the budget it read from the API server.
//!
//! Within a replica the spends of one PUB are serialised by a lock per PUB, and each decision reads the
//! newest PUB this replica knows ([`crate::cache`] keeps the object each write returned until the informer
//! catches up), so a replica never conflicts with itself: conflicts only come from other writers.
//!
//! Without an API server (`--objects`, `review`) intents are not performed: the verdict stands as decided.

use std::time::Duration;

use kube::api::{Api, PostParams};

use kruise_webhooks::api::podunavailablebudget::PodUnavailableBudget;
use kruise_webhooks::verdict::{BudgetSpend, Denial, StatusIntent};
use kruise_webhooks::{Verdict, WebhookError};

use crate::cache::{Cluster, LiveCache};
use crate::metrics::Metrics;

/// Status writes per spend: the first and two after conflicts.
pub const ATTEMPTS: usize = 3;
/// The longest a commit may take, reads and writes together: well inside the webhook's 10 s timeout.
pub const COMMIT_TIMEOUT: Duration = Duration::from_secs(6);

/// The refusal of a disruption whose spend could not be recorded.
fn unrecorded(key: &(String, String), why: &str) -> Verdict {
    Verdict::deny(Denial {
        code: 403,
        reason: Some("Forbidden"),
        message: format!(
            "the disruption could not be recorded in PodUnavailableBudget {}/{}, so it is refused: {why}",
            key.0, key.1
        ),
    })
}

/// The pause after the `attempt`-th write (1-based) met a conflict: 1-2 ms, then 4-8 ms, jittered so that
/// replicas that collided do not collide again. Short: the spends of this PUB on this replica wait behind
/// it, and the re-read that follows takes a round trip of its own.
fn backoff(attempt: usize) -> Duration {
    let base = 1u64 << (2 * attempt.saturating_sub(1).min(4));
    let jitter = crate::server::admission::random_unit();
    Duration::from_micros((base as f64 * 1000.0 * (1.0 + jitter)) as u64)
}

/// Commits the intents of `verdict`. `decide` runs the pure decision again on the cluster as it is then
/// (this replica's newest copy of each PUB included); it is called under the PUB's lock, and after each
/// conflict on the re-read object.
///
/// # Errors
/// What `decide` returns.
pub async fn commit(
    cluster: &Cluster,
    metrics: &Metrics,
    verdict: Verdict,
    decide: impl Fn() -> Result<Verdict, WebhookError>,
) -> Result<Verdict, WebhookError> {
    let (Cluster::Live(cache), Some(StatusIntent::BudgetSpend(spend))) =
        (cluster, verdict.intents.first())
    else {
        return Ok(verdict);
    };
    let key = spend.key();
    let lock = cache.budget_copies().lock(&key);
    let _held = lock.lock().await;
    match tokio::time::timeout(COMMIT_TIMEOUT, spend_budget(cache, metrics, &key, decide)).await {
        Ok(result) => result,
        Err(_) => {
            metrics.record_budget_write("error");
            Ok(unrecorded(
                &key,
                &format!(
                    "the API server did not answer within {}s",
                    COMMIT_TIMEOUT.as_secs()
                ),
            ))
        }
    }
}

async fn spend_budget(
    cache: &LiveCache,
    metrics: &Metrics,
    key: &(String, String),
    decide: impl Fn() -> Result<Verdict, WebhookError>,
) -> Result<Verdict, WebhookError> {
    let api: Api<PodUnavailableBudget> = Api::namespaced(cache.client().clone(), &key.0);
    // Decided again under the lock: a spend of this replica may have moved the PUB while this one waited.
    let mut verdict = decide()?;
    let mut conflict = String::new();
    for attempt in 1..=ATTEMPTS {
        let Some(StatusIntent::BudgetSpend(spend)) = verdict.intents.first() else {
            return Ok(verdict);
        };
        match write(&api, spend).await {
            Ok(written) => {
                metrics.record_budget_write("written");
                tracing::debug!(budget = %format!("{}/{}", key.0, key.1), pod = %spend.pod, operation = spend.operation, attempt, "budget spent");
                cache.budget_copies().remember(written);
                verdict.intents.clear();
                return Ok(verdict);
            }
            Err(kube::Error::Api(e)) if e.code == 409 => {
                metrics.record_budget_write("conflict");
                conflict = e.message;
            }
            Err(kube::Error::Api(e)) if e.code == 404 => {
                metrics.record_budget_write("not_found");
                // The PUB is gone: nothing protects the pod any more (DECISIONS 7).
                return Ok(without_spend(verdict));
            }
            Err(e) => {
                metrics.record_budget_write("error");
                tracing::warn!(budget = %format!("{}/{}", key.0, key.1), error = %e, "budget spend not written");
                return Ok(unrecorded(key, &e.to_string()));
            }
        }
        tokio::time::sleep(backoff(attempt)).await;
        match api.get_opt(&key.1).await {
            Ok(Some(fresh)) => cache.budget_copies().remember(fresh),
            Ok(None) => return Ok(without_spend(verdict)),
            Err(e) => return Ok(unrecorded(key, &e.to_string())),
        }
        verdict = decide()?;
    }
    // The last decision, on the object read after the last conflict, may need no write (the budget is now
    // spent, or the pod recorded): it stands. Otherwise the spend could not be written.
    if verdict.intents.is_empty() {
        return Ok(verdict);
    }
    Ok(Verdict::deny(Denial {
        code: 403,
        reason: Some("Forbidden"),
        message: conflict,
    }))
}

/// The verdict without its spend (the PUB went away): allowed as decided.
fn without_spend(mut verdict: Verdict) -> Verdict {
    verdict.intents.clear();
    verdict.warnings.clear();
    verdict
}

async fn write(
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
