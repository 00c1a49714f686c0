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
//! Within a replica the records of one object are written in groups. Requests that arrive while a write of
//! the object is in flight decide one after the other on the object as the next write will carry it (the
//! newest copy this replica knows, with the records gathered so far laid over it: [`crate::cache`]), and go
//! out together in one PUT once the write in flight has returned; everyone in the group learns the one
//! outcome. A group gathered on top of the write in flight carries that write's object: when it succeeds
//! the group takes the resourceVersion the API server answered (the object is then exactly what is stored
//! plus the group's records); when it fails the group is not written and its members decide again on what
//! the API server has. A decision that needs no write but was taken on records not yet written (the same
//! pod, sent again by the API server while its first record is in flight) stands only if the object as
//! written agrees; otherwise it waits for those records' outcome and decides again. So a replica never
//! conflicts with itself, conflicts only come from other writers, nothing is allowed on a record that was
//! not written, and a burst of N creates costs a handful of writes instead of N one after the other. The
//! PUT of a
//! group runs on a task of its own, so a request that goes away (its client hung up, its time ran out) never
//! leaves the others waiting; its record may still be written, which only keeps a place or a budget until
//! the status controller clears it, as OpenKruise's records of pods that were never created do.
//!
//! A verdict may carry two intents (a pod deletion recorded in its WorkloadSpread, then spending its PUB):
//! they are committed one object at a time, in order, each after deciding again on that object's group;
//! the record already written is then in the newest copy, so the new decision does not ask for it again.
//!
//! Without an API server (`--objects`, `review`) intents are not performed: the verdict stands as decided.

use crate::cache::versions::KruiseKind;
use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::{Metadata, NamespaceResourceScope};
use kube::api::PostParams;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::watch;
use tokio::time::Instant;

use kruise_webhooks::api::podunavailablebudget::PodUnavailableBudget;
use kruise_webhooks::api::workloadspread::WorkloadSpread;
use kruise_webhooks::verdict::{BudgetSpend, Denial, SpreadRecord, StatusIntent};
use kruise_webhooks::{Verdict, WebhookError};

use crate::cache::budgets::{Copies, deciding_on, revision};
use crate::cache::group::{Batch, Group, Outcome};
use crate::cache::{Cluster, LiveCache};
use crate::metrics::Metrics;

/// Status writes per object: the first and two after conflicts.
pub const ATTEMPTS: usize = 3;
/// The longest a commit may take, reads and writes together: well inside the webhook's 10 s timeout.
pub const COMMIT_TIMEOUT: Duration = Duration::from_secs(6);
/// Groups not written for someone else's write that count as one attempt of their members.
const AGAINS_PER_ATTEMPT: usize = 3;
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

    fn kind(&self) -> &'static str {
        match self {
            Self::Budget(_) => "PodUnavailableBudget",
            Self::Spread(..) => "WorkloadSpread",
        }
    }

    fn key(&self) -> &(String, String) {
        match self {
            Self::Budget(key) | Self::Spread(key, _) => key,
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
    let jitter = crate::random::random_unit();
    Duration::from_micros((base as f64 * 1000.0 * (1.0 + jitter)) as u64)
}

/// The pause of a group's writer after its `failed`-th write in a row that was not written (a conflict, or
/// stale): 1-2 ms, 4-8 ms, then 16-32 ms at most. It backs off from a busy writer, but the writer holds the
/// object's lock meanwhile, so it never grows past that (it once did, to a quarter of a second and more).
fn group_pause(failed: usize) -> Duration {
    backoff(failed.min(2) + 1)
}

/// Commits the intents of `verdict`. `decide` runs the pure decision again on the cluster as it is then
/// (this replica's newest copy of each object included, with the records gathered for its next write); it
/// is called once per object before the record joins a group, and again after each conflict.
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
        let committed = tokio::time::timeout_at(deadline, async {
            match &target {
                Target::Budget(_) => {
                    commit_one::<PodUnavailableBudget>(cache, metrics, &target, &decide).await
                }
                Target::Spread(..) => {
                    commit_one::<WorkloadSpread>(cache, metrics, &target, &decide).await
                }
            }
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

/// An object whose status records are written in groups.
trait Recorded:
    k8s_openapi::Resource<Scope = NamespaceResourceScope>
    + Metadata<Ty = ObjectMeta>
    + Clone
    + Debug
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
    /// This replica's copies and groups of the kind.
    fn copies(cache: &LiveCache) -> &Copies<Self>;
    /// The informer of the kind, if watched.
    fn store(cache: &LiveCache) -> Option<&crate::cache::shared::Shared<Self>>;
    /// The informer's copy of the object, if the kind is watched.
    fn watched(cache: &LiveCache, (namespace, name): &(String, String)) -> Option<Arc<Self>> {
        Self::store(cache)?
            .store()
            .get(&kube::runtime::reflector::ObjectRef::new(name).within(namespace))
    }
    /// The Kruise kind, whose served version is written.
    const KRUISE_KIND: KruiseKind;
    /// The object an intent writes, if the intent is of this kind.
    fn written_by(intent: StatusIntent) -> Option<Self>;
}

impl Recorded for PodUnavailableBudget {
    const KRUISE_KIND: KruiseKind = KruiseKind::PodUnavailableBudget;
    fn copies(cache: &LiveCache) -> &Copies<Self> {
        cache.budget_copies()
    }
    fn store(cache: &LiveCache) -> Option<&crate::cache::shared::Shared<Self>> {
        cache.budget_store()
    }
    fn written_by(intent: StatusIntent) -> Option<Self> {
        match intent {
            StatusIntent::BudgetSpend(BudgetSpend { budget, .. }) => Some(budget),
            StatusIntent::SpreadRecord(_) => None,
        }
    }
}

impl Recorded for WorkloadSpread {
    const KRUISE_KIND: KruiseKind = KruiseKind::WorkloadSpread;
    fn copies(cache: &LiveCache) -> &Copies<Self> {
        cache.spread_copies()
    }
    fn store(cache: &LiveCache) -> Option<&crate::cache::shared::Shared<Self>> {
        cache.spread_store()
    }
    fn written_by(intent: StatusIntent) -> Option<Self> {
        match intent {
            StatusIntent::SpreadRecord(SpreadRecord { spread, .. }) => Some(spread),
            StatusIntent::BudgetSpend(_) => None,
        }
    }
}

/// Commits the record of one object: the verdict without it once written.
async fn commit_one<K: Recorded>(
    cache: &LiveCache,
    metrics: &Metrics,
    target: &Target,
    decide: &impl Fn() -> Result<Verdict, WebhookError>,
) -> Result<Verdict, WebhookError> {
    let group = K::copies(cache).group(target.key());
    let mut conflict = String::new();
    let mut conflicts = 0;
    // A group not written because of someone else's write (the watch showed it first, or the write it was
    // gathered on failed) is not one of this request's attempts, but every few of them count as one: a
    // replica that keeps losing to a busy writer gets its answer (a refusal at worst) in bounded time.
    let mut agains = 0;
    loop {
        let (verdict, mut outcome) = {
            let mut gathering = group.gathering();
            let (laid, laid_outcome) = match (&gathering.open, &gathering.in_flight) {
                (Some(batch), _) => (Some(batch.object.clone()), Some(batch.outcome.subscribe())),
                (None, Some((object, outcome))) => (Some(object.clone()), Some(outcome.clone())),
                (None, None) => (None, None),
            };
            // Decided on the object as the next write will carry it.
            let mut verdict = deciding_on(target.key(), laid, decide)?;
            match verdict.intents.iter().position(|i| target.is(i)) {
                None => {
                    let Some(laid_outcome) = laid_outcome else {
                        return Ok(verdict);
                    };
                    // Nothing to write, on records not written yet (this pod's own, from an earlier try, may
                    // be among them): that stands only once the object as written agrees.
                    let written = decide()?;
                    if !written.intents.iter().any(|i| target.is(i)) {
                        return Ok(written);
                    }
                    (None, laid_outcome)
                }
                Some(_) if conflicts == ATTEMPTS => return Ok(target.conflicted(conflict)),
                Some(at) => {
                    let Some(object) = K::written_by(verdict.intents.remove(at)) else {
                        return Ok(target.unrecorded("the record is not of the object's kind"));
                    };
                    let object = Arc::new(object);
                    let outcome = match &mut gathering.open {
                        Some(batch) => {
                            batch.object = object;
                            batch.outcome.subscribe()
                        }
                        None => {
                            let (tx, rx) = watch::channel(None);
                            gathering.open = Some(Batch {
                                object,
                                on_in_flight: gathering.in_flight.is_some(),
                                outcome: tx,
                            });
                            tokio::spawn(write_group::<K>(
                                cache.clone(),
                                metrics.clone(),
                                target.clone(),
                                group.clone(),
                            ));
                            rx
                        }
                    };
                    (Some(verdict), outcome)
                }
            }
        };
        let outcome = match outcome.wait_for(Option::is_some).await {
            Ok(outcome) => outcome.clone().unwrap_or(Outcome::Again),
            Err(_) => Outcome::Failed("the status writer stopped".into()),
        };
        // Waited for the records it decided on: decide again, whatever became of them.
        let Some(verdict) = verdict else {
            continue;
        };
        match outcome {
            Outcome::Written => return Ok(verdict),
            Outcome::Conflict(text) => {
                conflicts += 1;
                conflict = text;
            }
            Outcome::Again => {
                agains += 1;
                if agains % AGAINS_PER_ATTEMPT == 0 {
                    conflicts += 1;
                    if conflict.is_empty() {
                        conflict = format!(
                            "the status of {} {}/{} kept changing under other writers",
                            target.kind(),
                            target.key().0,
                            target.key().1
                        );
                    }
                }
            }
            Outcome::Gone => return Ok(target.gone(verdict)),
            Outcome::Failed(why) => return Ok(target.unrecorded(&why)),
        }
    }
}

/// How long a conflict waits (after its pause) for the watch to bring the write that beat it, before reading
/// the object.
const WATCH_WAIT: Duration = Duration::from_millis(5);

/// Whether the watch brings, within [`WATCH_WAIT`], a version of the object newer than the one `sent`.
async fn seen_newer<K: Recorded>(
    cache: &LiveCache,
    key: &(String, String),
    sent: Option<&str>,
) -> bool {
    let deadline = Instant::now() + WATCH_WAIT;
    loop {
        match watched_newer::<K>(cache, key, sent) {
            Some(newer) if newer || Instant::now() >= deadline => return newer,
            Some(_) => tokio::time::sleep(Duration::from_millis(1)).await,
            None => return false,
        }
    }
}

/// Whether the watch already shows a version of the object newer than the one `sent` (resourceVersions
/// compared as the numbers the API server makes them); `None` when it cannot tell: `sent` is not such a
/// number, or the kind is not watched, or the object not in the watch.
fn watched_newer<K: Recorded>(
    cache: &LiveCache,
    key: &(String, String),
    sent: Option<&str>,
) -> Option<bool> {
    let sent: u64 = sent?.parse().ok()?;
    let watched = K::watched(cache, key)?;
    Some(revision(&*watched).is_some_and(|rv| rv > sent))
}

/// `PUT .../status` of `object`: the resourceVersion the API server answered. Only that is read of the
/// answer (the object stored is the one sent): the typed decoding of a large status is not paid twice.
async fn put_status<K: Recorded>(
    cache: &LiveCache,
    namespace: &str,
    name: &str,
    object: &K,
) -> Result<Option<String>, kube::Error> {
    #[derive(serde::Deserialize)]
    struct Answer {
        metadata: AnswerMeta,
    }
    #[derive(serde::Deserialize)]
    struct AnswerMeta {
        #[serde(rename = "resourceVersion")]
        resource_version: Option<String>,
    }
    // At the version the cluster serves (DECISIONS 25): a status PUT changes the status alone, whatever
    // else the converted body says.
    let resource = cache.versions().resource_or_newest(K::KRUISE_KIND);
    let body = crate::cache::versions::encode(object, &resource)
        .and_then(|value| serde_json::to_vec(&value).map_err(|e| e.to_string()))
        .map_err(|e| kube::Error::Service(e.into()))?;
    let mut request = kube::core::Request::new(
        <kube::api::DynamicObject as kube::Resource>::url_path(&resource, Some(namespace)),
    )
    .replace_subresource("status", name, &PostParams::default(), body)
    .map_err(kube::Error::BuildRequest)?;
    request.extensions_mut().insert("replace_status");
    let answer: Answer = cache.client().request(request).await?;
    Ok(answer.metadata.resource_version)
}

/// Writes the group gathered for one object, once the write before it has returned, and tells its members.
async fn write_group<K: Recorded>(
    cache: LiveCache,
    metrics: Metrics,
    target: Target,
    group: Arc<Group<K>>,
) {
    let writer = group.writer();
    let _held = writer.lock().await;
    let (object, outcome, conflicts) = {
        let mut gathering = group.gathering();
        let Some(batch) = gathering.open.take() else {
            return;
        };
        let mut object = batch.object;
        let rebased = if batch.on_in_flight {
            // Gathered on the write before: that write's answer is the object this one builds on.
            let sent = object.metadata().resource_version.clone();
            match &gathering.last {
                Some((was, answered)) if *was == sent => Some(answered.clone()),
                _ => {
                    batch.outcome.send_replace(Some(Outcome::Again));
                    return;
                }
            }
        } else {
            None
        };
        // The body names its kind and served version when it is encoded (`put_status`).
        if let Some(answered) = rebased {
            Arc::make_mut(&mut object).metadata_mut().resource_version = answered;
        }
        gathering.in_flight = Some((object.clone(), batch.outcome.subscribe()));
        (object, batch.outcome, gathering.conflicts)
    };
    let sent = object.metadata().resource_version.clone();
    let (namespace, name) = target.key();
    let api = cache.served_api::<K>(K::KRUISE_KIND, Some(namespace));
    let written = if watched_newer::<K>(&cache, target.key(), sent.as_deref()) == Some(true) {
        // The watch already shows a newer version (another replica's write, the controller's): this write
        // can only conflict. Its members decide again on that version at once, without spending a write.
        Err(None)
    } else {
        put_status(&cache, namespace, name, &*object)
            .await
            .map_err(Some)
    };
    let (result, answered) = match written {
        Err(None) => {
            target.record_write(&metrics, "stale");
            // As after a conflict: a pause, so that the members do not decide again in step with the writer
            // that keeps writing.
            tokio::time::sleep(group_pause(conflicts)).await;
            (Outcome::Again, None)
        }
        Err(Some(e)) => match e {
            kube::Error::Api(e) if e.code == 409 => {
                target.record_write(&metrics, "conflict");
                // Someone else wrote it: after a jittered pause (so that replicas that collided do not collide
                // again), the members decide again on the object as written now: the version the watch has
                // brought meanwhile (usually within a millisecond or two), else the object read.
                tokio::time::sleep(group_pause(conflicts)).await;
                let outcome = if seen_newer::<K>(&cache, target.key(), sent.as_deref()).await {
                    Outcome::Conflict(e.message)
                } else {
                    match api.get_opt(name).await {
                        Ok(Some(fresh)) => {
                            K::copies(&cache).remember(fresh);
                            Outcome::Conflict(e.message)
                        }
                        Ok(None) => {
                            K::copies(&cache).forget(target.key());
                            Outcome::Gone
                        }
                        Err(e) => Outcome::Failed(e.to_string()),
                    }
                };
                (outcome, None)
            }
            kube::Error::Api(e) if e.code == 404 => {
                target.record_write(&metrics, "not_found");
                K::copies(&cache).forget(target.key());
                (Outcome::Gone, None)
            }
            e => {
                target.record_write(&metrics, "error");
                tracing::warn!(object = %format!("{namespace}/{name}"), error = %e, "status record not written");
                (Outcome::Failed(e.to_string()), None)
            }
        },
        Ok(answered) => {
            target.record_write(&metrics, "written");
            tracing::debug!(object = %format!("{namespace}/{name}"), "status recorded");
            (Outcome::Written, Some(answered))
        }
    };
    {
        let mut gathering = group.gathering();
        gathering.in_flight = None;
        if let Some(answered) = &answered {
            // What is stored now is what was sent, at the resourceVersion answered (the informer's copy of
            // that version replaces it when the watch brings it). Nobody else holds the object now: the
            // decisions that read it in flight did so under this lock.
            let mut written = Arc::unwrap_or_clone(object);
            written.metadata_mut().resource_version.clone_from(answered);
            K::copies(&cache).remember(written);
        } else {
            // The records gathered on top of this write carry its records, not written: nobody may decide on
            // them any more.
            if let Some(doomed) = gathering.open.take_if(|b| b.on_in_flight) {
                doomed.outcome.send_replace(Some(Outcome::Again));
            }
        }
        gathering.conflicts = if answered.is_some() { 0 } else { conflicts + 1 };
        gathering.last = answered.map(|answered| (sent, answered));
    }
    outcome.send_replace(Some(result));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_pauses_32_milliseconds_at_most_however_many_writes_failed() {
        for failed in [0, 1, 2, 5, 50] {
            let pause = group_pause(failed);
            assert!(
                pause >= Duration::from_millis(1) && pause <= Duration::from_millis(32),
                "{failed}: {pause:?}"
            );
        }
    }

    #[test]
    fn backoff_is_tens_of_milliseconds_in_total() {
        for _ in 0..100 {
            let total: Duration = (1..ATTEMPTS).map(backoff).sum();
            assert!(total >= Duration::from_millis(5) && total <= Duration::from_millis(10));
        }
    }
}
