//! Container launch priority (spec/container-launch-priority.md): step 4 of the pod mutating chain gives
//! every container a `KRUISE_CONTAINER_BARRIER` env read from a key of the pod's barrier ConfigMap
//! ([`mutate`], §3), and the barrier controller adds those keys one priority level at a time, highest first,
//! as the containers of the level before become Ready ([`barrier`], §4).
//!
//! The webhook step reads the containers as the chain has them at this point (SidecarSet sidecars merged in,
//! §3.3) and writes them back whole with the env appended: unknown fields of every container survive, since
//! each is the request's own JSON tree.

pub mod barrier;
#[cfg(test)]
mod tests;

use serde_json::{Value, json};

use crate::json::go::go_quote;

/// The env that sets a container's priority.
pub const PRIORITY_ENV: &str = "KRUISE_CONTAINER_PRIORITY";
/// The env the webhook appends, read from the barrier ConfigMap.
pub const BARRIER_ENV: &str = "KRUISE_CONTAINER_BARRIER";
/// The pod annotation asking for the containers' own order.
pub const PRIORITY_ANNOTATION: &str = "apps.kruise.io/container-launch-priority";
/// Its only meaningful value (exact).
pub const ORDERED: &str = "Ordered";
/// The pod annotation the controller sets when every level is released.
pub const COMPLETED_ANNOTATION: &str = "apps.kruise.io/container-launch-priority-completed";
/// The characters of a generated name suffix (Kubernetes' `utilrand.String`).
pub const NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
/// A generated name keeps at most this much of `generateName`.
pub const MAX_GENERATE_NAME_BASE: usize = 58;

/// The barrier ConfigMap of pod `pod_name`.
pub fn barrier_name(pod_name: &str) -> String {
    format!("{pod_name}-barrier")
}

/// The barrier key of priority `p`.
pub fn barrier_key(p: i64) -> String {
    format!("p_{p}")
}

/// Go's `strconv.Atoi` on a 64-bit platform: an optional sign and decimal digits, nothing else; the error
/// text is Go's.
///
/// # Errors
/// `strconv.Atoi: parsing "<v>": invalid syntax` or `… value out of range`.
pub fn atoi(value: &str) -> Result<i64, String> {
    let digits = value.strip_prefix(['+', '-']).unwrap_or(value);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "strconv.Atoi: parsing {}: invalid syntax",
            go_quote(value)
        ));
    }
    // Rust's parser accepts a leading `+` as Go's does.
    value.parse::<i64>().map_err(|_| {
        format!(
            "strconv.Atoi: parsing {}: value out of range",
            go_quote(value)
        )
    })
}

/// A container's priority from its env entries, each read as (`name`, literal `value`) (`getPriority`):
/// every `KRUISE_CONTAINER_PRIORITY` is parsed (`valueFrom` alone reads as `""`), the last one stands; 0
/// without any.
///
/// # Errors
/// The first value that does not parse, in Go's words.
pub fn priority_of<'v>(
    entries: impl IntoIterator<Item = (&'v str, &'v str)>,
) -> Result<i64, String> {
    let mut priority = 0;
    for (name, value) in entries {
        if name == PRIORITY_ENV {
            priority = atoi(value)?;
        }
    }
    Ok(priority)
}

/// [`priority_of`] the env entries of a tree.
///
/// # Errors
/// As [`priority_of`].
pub fn env_priority(env: &[Value]) -> Result<i64, String> {
    priority_of(env.iter().map(|e| {
        (
            e.get("name").and_then(Value::as_str).unwrap_or(""),
            e.get("value").and_then(Value::as_str).unwrap_or(""),
        )
    }))
}

/// The priorities to give `count` containers (§3.2 steps 1-4), `None` when the pod is left alone;
/// `priority_of(i)` reads container `i`'s (not called under `Ordered`).
///
/// # Errors
/// A `KRUISE_CONTAINER_PRIORITY` that does not parse (the pod is refused with 500).
pub fn priorities(
    count: usize,
    annotation: Option<&str>,
    priority_of: impl FnMut(usize) -> Result<i64, String>,
) -> Result<Option<Vec<i64>>, String> {
    if count == 1 {
        return Ok(None);
    }
    if annotation == Some(ORDERED) {
        return Ok(Some((0..count).map(|i| -(i as i64)).collect()));
    }
    let found = (0..count).map(priority_of).collect::<Result<Vec<_>, _>>()?;
    if found.windows(2).all(|w| w[0] == w[1]) {
        return Ok(None);
    }
    Ok(Some(found))
}

/// The name of a `generateName` pod fixed now (§3.2 step 5): the base cut to 58 bytes (on a character
/// boundary) and 5 characters of [`NAME_ALPHABET`] drawn from `draw` (a uniform value in [0, 1)).
pub fn generated_name(generate_name: &str, draw: f64) -> String {
    let mut end = generate_name.len().min(MAX_GENERATE_NAME_BASE);
    while !generate_name.is_char_boundary(end) {
        end -= 1;
    }
    // 27^5 < 2^53: one draw carries the five characters, mixed so that nearby draws differ everywhere.
    let mut x = (draw.clamp(0.0, 1.0) * 9_007_199_254_740_992.0) as u64;
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    let mut name = String::with_capacity(end + 5);
    name.push_str(&generate_name[..end]);
    for _ in 0..5 {
        name.push(char::from(NAME_ALPHABET[(x % 27) as usize]));
        x /= 27;
    }
    name
}

/// The env entry appended to a container of priority `p` of pod `pod_name`.
pub fn barrier_env(pod_name: &str, p: i64) -> Value {
    json!({"name": BARRIER_ENV, "valueFrom": {"configMapKeyRef": {
        "name": barrier_name(pod_name), "key": barrier_key(p)}}})
}

/// [`barrier_env`] as JSON text, written as serde_json writes it.
pub fn barrier_env_text(pod_name: &str, p: i64) -> String {
    let mut out = String::with_capacity(96 + pod_name.len());
    out.push_str(r#"{"name":"KRUISE_CONTAINER_BARRIER","valueFrom":{"configMapKeyRef":{"key":"p_"#);
    out.push_str(&p.to_string());
    out.push_str(r#"","name":"#);
    crate::json::write_string(&mut out, &barrier_name(pod_name));
    out.push_str("}}}");
    out
}

/// What step 4 does to a pod (§3.2 steps 5-6).
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The pod name to set (`generateName` pods), `None` to keep it.
    pub name: Option<String>,
    /// The name the barrier ConfigMap is named after.
    pub pod_name: String,
    /// Each container's priority, in order.
    pub priorities: Vec<i64>,
}

impl Plan {
    /// The env entry of container `i` (`null` past the end).
    pub fn barrier_env(&self, i: usize) -> Value {
        self.priorities
            .get(i)
            .map_or(Value::Null, |p| barrier_env(&self.pod_name, *p))
    }

    /// [`Plan::barrier_env`] as JSON text (`null` past the end).
    pub fn barrier_env_text(&self, i: usize) -> String {
        self.priorities.get(i).map_or_else(
            || "null".to_owned(),
            |p| barrier_env_text(&self.pod_name, *p),
        )
    }
}

/// Step 4 (§3.2) for `count` containers whose priorities `priority_of` reads, given the pod's name,
/// `generateName` and `apps.kruise.io/container-launch-priority` annotation; `draw` picks a generated name.
/// `None`: the pod is left alone.
///
/// # Errors
/// A priority that does not parse, in Go's words (the chain answers 500).
pub fn plan(
    count: usize,
    priority_of: impl FnMut(usize) -> Result<i64, String>,
    name: &str,
    generate_name: &str,
    annotation: Option<&str>,
    draw: f64,
) -> Result<Option<Plan>, String> {
    let Some(priorities) = priorities(count, annotation, priority_of)? else {
        return Ok(None);
    };
    let fixed =
        (name.is_empty() && !generate_name.is_empty()).then(|| generated_name(generate_name, draw));
    let pod_name = fixed.clone().unwrap_or_else(|| name.to_owned());
    Ok(Some(Plan {
        name: fixed,
        pod_name,
        priorities,
    }))
}

/// Appends `entry` to a container tree's `env` (made a list when absent or not one).
pub fn append_env(container: &mut Value, entry: Value) {
    match container.get_mut("env") {
        Some(Value::Array(env)) => env.push(entry),
        _ => {
            if let Some(obj) = container.as_object_mut() {
                obj.insert("env".into(), Value::Array(vec![entry]));
            }
        }
    }
}
