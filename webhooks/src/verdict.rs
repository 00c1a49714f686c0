//! What a webhook answers: allow / deny, a patch, warnings and the side effects the server must carry out.

use std::collections::BTreeMap;

use crate::api::podunavailablebudget::PodUnavailableBudget;
use crate::api::workloadspread::WorkloadSpread;
use crate::json::patch::Op;

/// A policy refusal: `allowed: false` with this status code, reason and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// `status.code`; 403 for policy denials (DECISIONS 14).
    pub code: u16,
    /// `status.reason`, when OpenKruise sets one (its `deny(msg)` helper sets `Forbidden`).
    pub reason: Option<&'static str>,
    /// `status.message`, OpenKruise's text.
    pub message: String,
}

impl Denial {
    /// A 403 without `reason`, as OpenKruise's `Errored(403, err)` answers.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self {
            code: 403,
            reason: None,
            message: message.into(),
        }
    }
}

/// Allow or deny.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// `allowed: true`, `status.code: 200`.
    Allow,
    /// `allowed: false` with the denial's status.
    Deny(Denial),
}

/// Something the server must do because of this admission (metrics, audit log, events), outside the pure
/// function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SideEffect {
    /// A deletion was refused by deletion protection (spec/deletion-protection.md §7).
    DeletionProtected(ProtectionRecord),
    /// A disruption was refused by a PodUnavailableBudget (spec/podunavailablebudget.md §7.5).
    BudgetDenied(BudgetDenialRecord),
    /// A pod matched a WorkloadSpread whose subsets were all full or unschedulable, and was admitted without
    /// a subset (DECISIONS 18): counted per WorkloadSpread.
    SpreadFull {
        /// The WorkloadSpread's namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
}

/// One disruption refused by a PodUnavailableBudget: the counter, the audit line and the pod's event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetDenialRecord {
    /// `pod_unavailable_budget{kind_namespace_name}`: `<ownerKind>_<namespace>_<ownerName>`.
    pub kind_namespace_name: String,
    /// `request.userInfo.username`.
    pub username: String,
    /// The pod's controller kind (`unknown` without one).
    pub owner_kind: String,
    /// The controller's name (the pod's name without one).
    pub owner_name: String,
    /// The pod's namespace (`default` when empty).
    pub namespace: String,
    /// The pod's name.
    pub pod: String,
    /// The pod's uid, for the event's object reference.
    pub pod_uid: Option<String>,
    /// The request is a dry run: the event, an API write, is not recorded (`sideEffects: NoneOnDryRun`).
    pub dry_run: bool,
}

impl BudgetDenialRecord {
    /// The Warning event's reason on the pod.
    pub const EVENT_REASON: &'static str = "PubPreventPodDeletion";
    /// The Warning event's message (the same for every operation, as OpenKruise).
    pub const EVENT_MESSAGE: &'static str = "openkruise pub prevents pod deletion";

    /// The audit log line, keys in OpenKruise's order (the key `UserAgent` carries the username).
    pub fn audit_line(&self) -> String {
        audit_line(
            "PodUnavailableBudget",
            &self.owner_kind,
            &self.namespace,
            &self.owner_name,
            &self.username,
        )
    }
}

/// `{"Event":..,"Kind":..,"Namespace":..,"Name":..,"UserAgent":..}`, as OpenKruise's protection log writes.
fn audit_line(event: &str, kind: &str, namespace: &str, name: &str, username: &str) -> String {
    #[derive(serde::Serialize)]
    #[serde(rename_all = "PascalCase")]
    struct Line<'a> {
        event: &'a str,
        kind: &'a str,
        namespace: &'a str,
        name: &'a str,
        user_agent: &'a str,
    }
    let line = Line {
        event,
        kind,
        namespace,
        name,
        user_agent: username,
    };
    serde_json::to_string(&line).unwrap_or_default()
}

/// A status write the server must commit against the API server before the answer stands (STYLE §2).
#[derive(Debug, Clone, PartialEq)]
pub enum StatusIntent {
    /// Spend budget of a PodUnavailableBudget (spec/podunavailablebudget.md §7.3 step 8).
    BudgetSpend(BudgetSpend),
    /// Record a pod's creation or deletion in a WorkloadSpread's versioned status (spec/workloadspread.md
    /// §5.4 (c) 7, §5.9 step 5).
    SpreadRecord(SpreadRecord),
}

impl StatusIntent {
    /// The kind, namespace and name of the object written.
    pub fn object(&self) -> (&'static str, String, String) {
        match self {
            Self::BudgetSpend(spend) => {
                let (ns, name) = spend.key();
                ("PodUnavailableBudget", ns, name)
            }
            Self::SpreadRecord(record) => {
                let (ns, name) = record.key();
                ("WorkloadSpread", ns, name)
            }
        }
    }
}

/// A WorkloadSpread as it must be written: the object the decision read (its resourceVersion is the
/// write's precondition) with the pod's record in its versioned status.
#[derive(Debug, Clone, PartialEq)]
pub struct SpreadRecord {
    /// The WorkloadSpread to write with `PUT .../status`.
    pub spread: WorkloadSpread,
    /// The key of the record: the pod's name, or the UID generated for a pod without one.
    pub pod: String,
    /// `CREATE`, `DELETE` or `EVICT`.
    pub operation: &'static str,
    /// The status code of the answer when the record cannot be written: 500 for a create, 400 for a
    /// deletion (spec/workloadspread.md §5.1, §5.8).
    pub failure_code: u16,
}

impl SpreadRecord {
    /// `<namespace>/<name>` of the WorkloadSpread.
    pub fn key(&self) -> (String, String) {
        (
            self.spread.metadata.namespace.clone().unwrap_or_default(),
            self.spread.metadata.name.clone().unwrap_or_default(),
        )
    }
}

/// A PodUnavailableBudget as it must be written: `budget` is the object the decision read (its
/// resourceVersion is the write's precondition) with the new status in place.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetSpend {
    /// The PUB to write with `PUT .../status`.
    pub budget: PodUnavailableBudget,
    /// The pod whose disruption is recorded.
    pub pod: String,
    /// The operation recorded (`DELETE`, `UPDATE`, `EVICT`, `RESIZE`).
    pub operation: &'static str,
}

impl BudgetSpend {
    /// `<namespace>/<name>` of the PUB.
    pub fn key(&self) -> (String, String) {
        (
            self.budget.metadata.namespace.clone().unwrap_or_default(),
            self.budget.metadata.name.clone().unwrap_or_default(),
        )
    }
}

/// Which deletion-protection counter a refusal increments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProtectionMetric {
    /// `namespace_deletion_protection{name,username}`.
    Namespace,
    /// `crd_deletion_protection{name,username}`.
    Crd,
    /// `workload_deletion_protection{kind_namespace_name,username}`.
    Workload,
}

/// One refused deletion: the metric to count and the audit line to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtectionRecord {
    /// The counter family.
    pub metric: ProtectionMetric,
    /// The counter's object label: `name` (namespace, CRD) or `<Kind>_<ns>_<name>` (workloads).
    pub metric_name: String,
    /// `request.kind.kind`.
    pub kind: String,
    /// The object's namespace (`""` for cluster-scoped objects).
    pub namespace: String,
    /// The object's name.
    pub name: String,
    /// `request.userInfo.username`.
    pub username: String,
}

impl ProtectionRecord {
    /// The audit log line, keys in OpenKruise's order (the key `UserAgent` carries the username).
    pub fn audit_line(&self) -> String {
        audit_line(
            "DeletionProtection",
            &self.kind,
            &self.namespace,
            &self.name,
            &self.username,
        )
    }
}

/// A webhook's answer to one admission request.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// Allow or deny.
    pub decision: Decision,
    /// `status.message` of an allowed answer, where OpenKruise sends one.
    pub allow_message: Option<String>,
    /// RFC 6902 operations against the raw request object (empty: no patch).
    pub patch: Vec<Op>,
    /// Admission warnings shown to the client (DECISIONS 18).
    pub warnings: Vec<String>,
    /// Audit annotations recorded by the apiserver.
    pub audit_annotations: BTreeMap<String, String>,
    /// Work the server does after the decision (metrics, audit log, events).
    pub side_effects: Vec<SideEffect>,
    /// Status writes the answer depends on: the server commits them first, and an allow stands only once
    /// they are written (empty for most webhooks).
    pub intents: Vec<StatusIntent>,
}

impl Verdict {
    /// Allow, nothing else.
    pub fn allow() -> Self {
        Self {
            decision: Decision::Allow,
            allow_message: None,
            patch: Vec::new(),
            warnings: Vec::new(),
            audit_annotations: BTreeMap::new(),
            side_effects: Vec::new(),
            intents: Vec::new(),
        }
    }

    /// Deny with the given denial.
    pub fn deny(denial: Denial) -> Self {
        Self {
            decision: Decision::Deny(denial),
            ..Self::allow()
        }
    }

    /// Adds a side effect.
    pub fn with_side_effect(mut self, effect: SideEffect) -> Self {
        self.side_effects.push(effect);
        self
    }

    /// True when the decision is Allow.
    pub fn is_allowed(&self) -> bool {
        matches!(self.decision, Decision::Allow)
    }

    /// The denial, if any.
    pub fn denial(&self) -> Option<&Denial> {
        match &self.decision {
            Decision::Deny(d) => Some(d),
            Decision::Allow => None,
        }
    }
}
