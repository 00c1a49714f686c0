//! What a webhook answers: allow / deny, a patch, warnings and the side effects the server must carry out.

use std::collections::BTreeMap;

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

/// Something the server must do because of this admission (metrics, audit log), outside the pure function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SideEffect {
    /// A deletion was refused by deletion protection (spec/deletion-protection.md §7).
    DeletionProtected(ProtectionRecord),
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
            event: "DeletionProtection",
            kind: &self.kind,
            namespace: &self.namespace,
            name: &self.name,
            user_agent: &self.username,
        };
        serde_json::to_string(&line).unwrap_or_default()
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
    /// Work the server does after the decision (metrics, audit log).
    pub side_effects: Vec<SideEffect>,
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
