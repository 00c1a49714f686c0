//! `resourcesPolicy` (spec/sidecarset.md §5): at pod creation, a sidecar's `resources` are computed from the
//! resources of the pod's own containers.
//!
//! [`apply`] has the shape of `inject::ResourcesPolicyFn`: it picks the target containers (native-sidecar
//! init containers, then containers, none of them a sidecar of a matched SidecarSet, whose name matches the
//! Go regular expression), aggregates their cpu and memory (`sum` or `max`), evaluates the four expressions
//! with the [`calculator`], and replaces the sidecar's `resources`. The error strings are OpenKruise's; the
//! caller turns them into the HTTP 500 message.
//!
//! [`validate_expression`] and [`compile_regex`] are the checks the SidecarSet validator needs (§8 step 6,
//! §11 scenario 54).

pub mod calculator;
mod re2;

use std::fmt::Write as _;

use serde_json::{Map, Value};

use self::calculator::Value as CalcValue;
use crate::api::sidecarset::SidecarContainer;
use crate::quantity::{Format, Quantity};
use crate::sidecarset::inject::{NameSet, PodContainers};

/// Compiles `targetContainersNameRegex` as Go's `regexp.Compile` does (RE2 syntax, unanchored matching).
///
/// # Errors
/// Go's error text, e.g. ``error parsing regexp: missing closing ]: `[invalid(regex` `` (the validator
/// prefixes it with `invalid regex pattern: `).
pub fn compile_regex(pattern: &str) -> Result<regex::Regex, String> {
    re2::compile(pattern)
}

/// Test-evaluates one non-empty expression the way the SidecarSet validator does (§8): only `variable`
/// (`cpu` for cpu fields, `memory` for memory fields) is defined, bound to the plain number 1. An empty
/// expression is valid.
///
/// # Errors
/// The whole field message, `invalid expression: <calculator error>`, e.g.
/// `invalid expression: undefined variable: memory` for a cpu expression that uses `memory`.
pub fn validate_expression(expr: &str, variable: &str) -> Result<(), String> {
    if expr.is_empty() {
        return Ok(());
    }
    calculator::evaluate(expr, &[(variable, CalcValue::Number(1.0))])
        .map(drop)
        .map_err(|e| format!("invalid expression: {e}"))
}

/// The `resources` the sidecar's `resourcesPolicy` gives the container being injected, which replace its
/// own whole; `None` for a sidecar without a policy, which is left alone. `all_sidecar_names` is every init
/// container and container name of every matched SidecarSet; `pod` holds the pod's containers as received.
///
/// # Errors
/// OpenKruise's messages: `failed to get target containers: invalid regex pattern "<re>": <err>`,
/// `no containers match the regex pattern "<re>"`, and
/// `failed to evaluate CPU limits expression: failed to parse expression "<expr>": <err>` (likewise
/// `memory limits`, `CPU requests`, `memory requests`). A target quantity that is not a quantity (which Go
/// would already have refused while decoding the pod) is reported as
/// `decoding container <name> resources: <quantity error>`.
pub fn apply(
    sidecar: &SidecarContainer,
    all_sidecar_names: &NameSet<'_>,
    pod: PodContainers<'_>,
) -> Result<Option<Value>, String> {
    let Some(policy) = sidecar
        .view
        .resources_policy
        .as_ref()
        .filter(|p| !p.is_null())
    else {
        return Ok(None);
    };
    let policy = Policy::from_json(policy);
    let targets = target_containers(pod, &policy.regex, all_sidecar_names)?;
    let aggregate = match policy.mode.as_str() {
        "sum" => Aggregate::sum(&targets),
        "max" => Aggregate::max(&targets),
        _ => Aggregate::default(),
    };

    let mut resources = Map::new();
    if let Some(exprs) = &policy.limits {
        let mut limits = Map::new();
        // A limit is computed only when every target has one ("unlimited" otherwise).
        for (name, expr, total, what) in [
            ("cpu", &exprs.cpu, &aggregate.cpu_limit, "CPU limits"),
            (
                "memory",
                &exprs.memory,
                &aggregate.memory_limit,
                "memory limits",
            ),
        ] {
            if let (false, Some(total)) = (expr.is_empty(), total) {
                let q = evaluate_resource(expr, total.clone())
                    .map_err(|e| format!("failed to evaluate {what} expression: {e}"))?;
                limits.insert(name.to_owned(), Value::String(q.to_string()));
            }
        }
        if !limits.is_empty() {
            resources.insert("limits".to_owned(), Value::Object(limits));
        }
    }
    if let Some(exprs) = &policy.requests {
        let mut requests = Map::new();
        for (name, expr, total, what) in [
            ("cpu", &exprs.cpu, &aggregate.cpu_request, "CPU requests"),
            (
                "memory",
                &exprs.memory,
                &aggregate.memory_request,
                "memory requests",
            ),
        ] {
            if !expr.is_empty() {
                let total = total
                    .clone()
                    .unwrap_or_else(|| Quantity::from_value(0, Format::DecimalSI));
                let q = evaluate_resource(expr, total)
                    .map_err(|e| format!("failed to evaluate {what} expression: {e}"))?;
                requests.insert(name.to_owned(), Value::String(q.to_string()));
            }
        }
        if !requests.is_empty() {
            resources.insert("requests".to_owned(), Value::Object(requests));
        }
    }
    // Go assigns a fresh ResourceRequirements: other resource names and claims are gone, and an empty one
    // marshals as `{}`.
    Ok(Some(Value::Object(resources)))
}

/// `evaluateResourceExpression`: the variable is `memory` when the whole word occurs, else `cpu`; a plain
/// number becomes millicores (`cpu`) or units (`memory`).
fn evaluate_resource(expr: &str, total: Quantity) -> Result<Quantity, String> {
    let variable = if contains_word(expr, "memory") {
        "memory"
    } else {
        "cpu"
    };
    let value = calculator::evaluate(expr, &[(variable, CalcValue::Quantity(total))])
        .map_err(|e| format!("failed to parse expression {}: {e}", go_quote(expr)))?;
    Ok(match value {
        CalcValue::Quantity(q) => q,
        CalcValue::Number(n) if variable == "cpu" => {
            Quantity::from_milli(calculator::go_f64_to_i64(n * 1000.0), Format::DecimalSI)
        }
        CalcValue::Number(n) => {
            Quantity::from_value(calculator::go_f64_to_i64(n), Format::DecimalSI)
        }
    })
}

/// Go's `\bword\b` (ASCII word boundaries).
fn contains_word(text: &str, word: &str) -> bool {
    let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let b = text.as_bytes();
    text.match_indices(word).any(|(i, _)| {
        let end = i + word.len();
        (i == 0 || !is_word(b[i - 1])) && (end == b.len() || !is_word(b[end]))
    })
}

/// Go's `%q` (`strconv.Quote`). Printability is approximated: control characters, spaces other than U+0020,
/// the common format characters and private-use code points are escaped; unassigned code points are not.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\u{7}' => out.push_str(r"\a"),
            '\u{8}' => out.push_str(r"\b"),
            '\u{c}' => out.push_str(r"\f"),
            '\n' => out.push_str(r"\n"),
            '\r' => out.push_str(r"\r"),
            '\t' => out.push_str(r"\t"),
            '\u{b}' => out.push_str(r"\v"),
            c if c < ' ' || c == '\u{7f}' => {
                let _ = write!(out, r"\x{:02x}", c as u32);
            }
            c if !is_go_printable(c) => {
                if (c as u32) < 0x10000 {
                    let _ = write!(out, r"\u{:04x}", c as u32);
                } else {
                    let _ = write!(out, r"\U{:08x}", c as u32);
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn is_go_printable(c: char) -> bool {
    let u = c as u32;
    let format_char = matches!(u, 0xAD | 0x600..=0x605 | 0x61C | 0x6DD | 0x70F | 0x890 | 0x891 | 0x8E2 | 0x180E
        | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x2064 | 0x2066..=0x206F | 0xFEFF | 0xFFF9..=0xFFFB
        | 0x110BD | 0x110CD | 0x13430..=0x1343F | 0x1BCA0..=0x1BCA3 | 0x1D173..=0x1D17A | 0xE0001 | 0xE0020..=0xE007F);
    let private_or_nonchar =
        matches!(u, 0xE000..=0xF8FF | 0xF0000.. | 0xFDD0..=0xFDEF) || u & 0xFFFE == 0xFFFE;
    !(c.is_control() || (c.is_whitespace() && c != ' ') || format_char || private_or_nonchar)
}

/// The expressions of `resourcesExpr.limits` or `.requests` (empty when unset).
#[derive(Debug, Default)]
struct Exprs {
    cpu: String,
    memory: String,
}

/// `resourcesPolicy`, read leniently from the raw JSON (Kruise's CRD schema has already typed it).
#[derive(Debug)]
struct Policy {
    mode: String,
    regex: String,
    /// `None` when `limits` is absent or null (Go's nil pointer).
    limits: Option<Exprs>,
    requests: Option<Exprs>,
}

impl Policy {
    fn from_json(v: &Value) -> Policy {
        let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_owned();
        let exprs = |v: Option<&Value>| {
            v.filter(|v| !v.is_null()).map(|v| Exprs {
                cpu: text(v.get("cpu")),
                memory: text(v.get("memory")),
            })
        };
        let expr = v.get("resourcesExpr");
        Policy {
            mode: text(v.get("targetContainersMode")),
            regex: text(v.get("targetContainersNameRegex")),
            limits: exprs(expr.and_then(|e| e.get("limits"))),
            requests: exprs(expr.and_then(|e| e.get("requests"))),
        }
    }
}

/// The cpu and memory a target container declares (a key with a `null` value counts as a zero quantity).
#[derive(Debug, Default)]
struct Target {
    cpu_limit: Option<Quantity>,
    memory_limit: Option<Quantity>,
    cpu_request: Option<Quantity>,
    memory_request: Option<Quantity>,
}

impl Target {
    fn from_json(resources: Option<&Value>, name: &str) -> Result<Target, String> {
        let read = |list: &str, resource: &str| -> Result<Option<Quantity>, String> {
            match resources
                .and_then(|r| r.get(list))
                .and_then(|l| l.get(resource))
            {
                None => Ok(None),
                Some(v) => Quantity::from_json(v)
                    .map(Some)
                    .map_err(|e| format!("decoding container {name} resources: {e}")),
            }
        };
        Ok(Target {
            cpu_limit: read("limits", "cpu")?,
            memory_limit: read("limits", "memory")?,
            cpu_request: read("requests", "cpu")?,
            memory_request: read("requests", "memory")?,
        })
    }
}

/// `getTargetContainers`: native-sidecar init containers, then containers; sidecars of matched SidecarSets
/// excluded; kept when the name matches the regex anywhere.
fn target_containers(
    pod: PodContainers<'_>,
    regex: &str,
    sidecars: &NameSet<'_>,
) -> Result<Vec<Target>, String> {
    let pattern = compile_regex(regex).map_err(|e| {
        format!(
            "failed to get target containers: invalid regex pattern {}: {e}",
            go_quote(regex)
        )
    })?;
    let mut targets = Vec::new();
    let init = pod
        .init_containers
        .iter()
        .filter(|c| c.str("restartPolicy") == "Always");
    for c in init.chain(pod.containers.iter()) {
        let name = c.name();
        if !sidecars.contains(name) && pattern.is_match(name) {
            targets.push(Target::from_json(c.get("resources"), name)?);
        }
    }
    if targets.is_empty() {
        return Err(format!(
            "no containers match the regex pattern {}",
            go_quote(regex)
        ));
    }
    Ok(targets)
}

/// The aggregated cpu and memory; a limit is `None` when some target has none ("unlimited").
#[derive(Debug, Default)]
struct Aggregate {
    cpu_limit: Option<Quantity>,
    memory_limit: Option<Quantity>,
    cpu_request: Option<Quantity>,
    memory_request: Option<Quantity>,
}

impl Aggregate {
    /// `aggregateResourcesBySum`: sums start from a DecimalSI zero (so the first non-zero addend's format
    /// wins); a zero request total is left out.
    fn sum(targets: &[Target]) -> Aggregate {
        let total = |pick: fn(&Target) -> &Option<Quantity>, all_required: bool| {
            let mut sum = Quantity::from_value(0, Format::DecimalSI);
            for t in targets {
                match pick(t) {
                    Some(q) => sum.add(q),
                    None if all_required => return None,
                    None => {}
                }
            }
            (all_required || !sum.is_zero()).then_some(sum)
        };
        Aggregate {
            cpu_limit: total(|t| &t.cpu_limit, true),
            memory_limit: total(|t| &t.memory_limit, true),
            cpu_request: total(|t| &t.cpu_request, false),
            memory_request: total(|t| &t.memory_request, false),
        }
    }

    /// `aggregateResourcesByMax`: the first of equal maxima is kept (with its original text).
    fn max(targets: &[Target]) -> Aggregate {
        let largest = |pick: fn(&Target) -> &Option<Quantity>, all_required: bool| {
            let mut best: Option<&Quantity> = None;
            for t in targets {
                match pick(t) {
                    Some(q) if best.is_none_or(|b| q > b) => best = Some(q),
                    Some(_) => {}
                    None if all_required => return None,
                    None => {}
                }
            }
            best.cloned()
        };
        Aggregate {
            cpu_limit: largest(|t| &t.cpu_limit, true),
            memory_limit: largest(|t| &t.memory_limit, true),
            cpu_request: largest(|t| &t.cpu_request, false),
            memory_request: largest(|t| &t.memory_request, false),
        }
    }
}

#[cfg(test)]
mod tests;
