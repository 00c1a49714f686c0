//! Label selector matching (`metav1.LabelSelector` semantics), for webhook selectors evaluated offline.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// A set of labels a selector reads: a map, or labels with one more ([`WithLabel`]).
pub trait Labels {
    /// The value of the label `key`.
    fn label(&self, key: &str) -> Option<&str>;
}

impl Labels for BTreeMap<String, String> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

impl Labels for crate::api::pod::StrMap {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key)
    }
}

/// Labels with one more set over them (a Namespace's labels and the `kubernetes.io/metadata.name` the
/// apiserver sets on every Namespace), without copying the map.
#[derive(Debug, Clone, Copy)]
pub struct WithLabel<'l> {
    /// The labels (none when the object has none).
    pub labels: Option<&'l BTreeMap<String, String>>,
    /// The added label's key and value, which stand over a label of that key.
    pub added: (&'l str, &'l str),
}

impl Labels for WithLabel<'_> {
    fn label(&self, key: &str) -> Option<&str> {
        if key == self.added.0 {
            return Some(self.added.1);
        }
        self.labels.and_then(|l| l.label(key))
    }
}

/// The first requirement of a selector that `labels` fail: `matchLabels` in key order (operator `In`, one
/// value), then `matchExpressions` in order. `explain` names it; [`matches`] is its absence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Miss<'s, 'l> {
    /// The label key.
    pub key: &'s str,
    /// `In` (a `matchLabels` pair too), `NotIn`, `Exists`, `DoesNotExist`, or an unknown operator.
    pub operator: &'s str,
    /// The wanted values (one for a `matchLabels` pair, none for `Exists` / `DoesNotExist`).
    pub wanted: &'s [String],
    /// The labels' value for the key, `None` when missing.
    pub actual: Option<&'l str>,
}

/// The first requirement `labels` fail ([`Miss`]), `None` when they match. An empty selector matches
/// everything; an unknown operator matches nothing (the apiserver rejects such selectors when stored).
pub fn first_miss<'s, 'l, L: Labels + ?Sized>(
    selector: &'s LabelSelector,
    labels: &'l L,
) -> Option<Miss<'s, 'l>> {
    if let Some(m) = &selector.match_labels {
        for (k, v) in m {
            let actual = labels.label(k);
            if actual != Some(v.as_str()) {
                return Some(Miss {
                    key: k,
                    operator: "In",
                    wanted: std::slice::from_ref(v),
                    actual,
                });
            }
        }
    }
    selector.match_expressions.iter().flatten().find_map(|e| {
        let values = e.values.as_deref().unwrap_or_default();
        let value = labels.label(&e.key);
        let ok = match e.operator.as_str() {
            "In" => value.is_some_and(|v| values.iter().any(|x| x == v)),
            "NotIn" => value.is_none_or(|v| !values.iter().any(|x| x == v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            _ => false,
        };
        (!ok).then_some(Miss {
            key: &e.key,
            operator: &e.operator,
            wanted: values,
            actual: value,
        })
    })
}

impl Miss<'_, '_> {
    /// An owned copy, to keep past the selector and labels it was found in.
    pub fn to_mismatch(&self) -> Mismatch {
        Mismatch {
            key: self.key.to_owned(),
            operator: self.operator.to_owned(),
            wanted: self.wanted.to_vec(),
            actual: self.actual.map(str::to_owned),
        }
    }
}

/// A [`Miss`] that owns its strings (`explain`'s JSON `detail`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Mismatch {
    /// The label key.
    pub key: String,
    /// `In` (a `matchLabels` pair too), `NotIn`, `Exists`, `DoesNotExist`, or an unknown operator.
    pub operator: String,
    /// The wanted values.
    pub wanted: Vec<String>,
    /// The labels' value, `None` when missing.
    pub actual: Option<String>,
}

impl Mismatch {
    /// One line for a human: `app wants "web", pod has "api"`; `whose` names the labels' owner.
    pub fn describe(&self, whose: &str) -> String {
        let has = match &self.actual {
            Some(v) => format!("{whose} has {v:?}"),
            None => format!("{whose} has no such label"),
        };
        let wanted = match (self.operator.as_str(), self.wanted.as_slice()) {
            ("In", [one]) => format!("wants {one:?}"),
            ("In", many) => format!("wants one of {many:?}"),
            ("NotIn", many) => format!("wants none of {many:?}"),
            ("Exists", _) => "wants the label".to_owned(),
            ("DoesNotExist", _) => "wants no such label".to_owned(),
            (other, _) => format!("has an unknown operator {other:?}"),
        };
        format!("{} {wanted}, {has}", self.key)
    }
}

/// Whether `labels` match `selector`: no requirement fails ([`first_miss`]).
pub fn matches(selector: &LabelSelector, labels: &(impl Labels + ?Sized)) -> bool {
    first_miss(selector, labels).is_none()
}

/// A selector Kruise cannot evaluate (`util.ValidatedLabelSelectorAsSelector`): only the operators are checked,
/// so `In` without values matches nothing and `Exists` with values matches on the key, as [`matches`] reads
/// them. SidecarSet injection fails the request with this text (spec/sidecarset.md §4.3 step 3.2, §4.4), a
/// namespaceSelector with it is no match; the PUB gate answers 400 with it for an `ignoredPodSelector`.
pub fn validated_error(sel: &LabelSelector) -> Option<String> {
    sel.match_expressions
        .iter()
        .flatten()
        .find(|e| {
            !matches!(
                e.operator.as_str(),
                "In" | "NotIn" | "Exists" | "DoesNotExist"
            )
        })
        .map(|e| format!("{:?} is not a valid pod selector operator", e.operator))
}

/// Whether the selector of a Kruise object (a PUB's, a PodProbeMarker's) picks `labels`: one that is set,
/// valid in Kruise's sense ([`validated_error`]), not empty and matching. An unset or empty selector picks
/// nothing, not everything (OpenKruise's "a nil or empty selector creeps in, it should match nothing").
pub fn picks(selector: Option<&LabelSelector>, labels: &(impl Labels + ?Sized)) -> bool {
    selector.is_some_and(|s| {
        !crate::validation::meta::is_empty_selector(s)
            && validated_error(s).is_none()
            && matches(s, labels)
    })
}

/// Whether `labels` carries every one of `wanted` (equality-based selection, as a label query string asks).
pub fn has_labels(
    labels: Option<&BTreeMap<String, String>>,
    wanted: &BTreeMap<String, String>,
) -> bool {
    wanted
        .iter()
        .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
}

/// Parses a selector in the text form of `labels.Parse` (a scale subresource's `status.selector`):
/// comma-separated `key`, `!key`, `key=value`, `key==value`, `key!=value`, `key in (a,b)`, `key notin (a,b)`.
/// Keys and values are not validated. An empty text is the empty selector (matches everything).
///
/// # Errors
/// A message naming what does not parse (`>` and `<` have no [`LabelSelector`] form).
pub fn parse(text: &str) -> Result<LabelSelector, String> {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;
    let bad = |what: &str| format!("unable to parse requirement {what:?} of selector {text:?}");
    let requirement = |key: &str, operator: &str, values: Vec<String>| LabelSelectorRequirement {
        key: key.to_owned(),
        operator: operator.to_owned(),
        values: (!values.is_empty()).then_some(values),
    };
    let mut expressions = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        // A requirement ends at the first comma outside parentheses.
        let mut depth = 0usize;
        let end = rest
            .char_indices()
            .find(|&(_, c)| {
                match c {
                    '(' => depth += 1,
                    ')' => depth = depth.saturating_sub(1),
                    _ => {}
                }
                c == ',' && depth == 0
            })
            .map_or(rest.len(), |(i, _)| i);
        let part = rest[..end].trim();
        rest = rest.get(end + 1..).unwrap_or("").trim_start();
        if part.is_empty() {
            return Err(bad(part));
        }
        if let Some(key) = part.strip_prefix('!') {
            let key = key.trim();
            if key.is_empty() || key.contains(char::is_whitespace) {
                return Err(bad(part));
            }
            expressions.push(requirement(key, "DoesNotExist", Vec::new()));
            continue;
        }
        if part.contains(['>', '<']) {
            return Err(bad(part));
        }
        let (key, operator, value) = if let Some((k, v)) = part.split_once("!=") {
            (k, "NotIn", v)
        } else if let Some((k, v)) = part.split_once("==") {
            (k, "In", v)
        } else if let Some((k, v)) = part.split_once('=') {
            (k, "In", v)
        } else {
            let mut words = part.splitn(2, char::is_whitespace);
            let key = words.next().unwrap_or("");
            let set = words.next().map(str::trim_start);
            match set {
                None => {
                    expressions.push(requirement(key, "Exists", Vec::new()));
                    continue;
                }
                Some(set) => {
                    let (operator, list) = if let Some(l) = set.strip_prefix("notin") {
                        ("NotIn", l)
                    } else if let Some(l) = set.strip_prefix("in") {
                        ("In", l)
                    } else {
                        return Err(bad(part));
                    };
                    let list = list
                        .trim()
                        .strip_prefix('(')
                        .and_then(|l| l.strip_suffix(')'))
                        .ok_or_else(|| bad(part))?;
                    let values: Vec<String> = list
                        .split(',')
                        .map(|v| v.trim().to_owned())
                        .filter(|v| !v.is_empty())
                        .collect();
                    if values.is_empty() {
                        return Err(bad(part));
                    }
                    expressions.push(requirement(key, operator, values));
                    continue;
                }
            }
        };
        let (key, value) = (key.trim(), value.trim());
        if key.is_empty()
            || key.contains(char::is_whitespace)
            || value.contains(char::is_whitespace)
        {
            return Err(bad(part));
        }
        expressions.push(requirement(key, operator, vec![value.to_owned()]));
    }
    Ok(LabelSelector {
        match_labels: None,
        match_expressions: (!expressions.is_empty()).then_some(expressions),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    #[test]
    fn selector_text_parses_as_labels_parse_reads_it() {
        let l = labels(&[("app", "web"), ("tier", "fe")]);
        let sel = parse("app=web, tier in (fe, be),!canary,track!=beta,tier").unwrap();
        assert!(matches(&sel, &l));
        assert_eq!(sel.match_expressions.as_ref().map(Vec::len), Some(5));
        assert!(!matches(&parse("app==db").unwrap(), &l));
        assert!(!matches(&parse("tier notin (fe)").unwrap(), &l));
        assert!(matches(&parse("").unwrap(), &l), "empty: everything");
        assert!(matches(
            &parse("empty=").unwrap(),
            &labels(&[("empty", "")])
        ));
        for bad in [
            "a>1",
            "x in ()",
            "x in a",
            "a b c",
            "app=web,,x",
            "!",
            "x y",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn expr(key: &str, op: &str, values: &[&str]) -> LabelSelector {
        LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: key.into(),
                operator: op.into(),
                values: Some(values.iter().map(|s| s.to_string()).collect()),
            }]),
            ..Default::default()
        }
    }

    /// A label set over a map reads first, whatever the map has under its key; the rest read from the map.
    #[test]
    fn an_added_label_stands_over_the_map() {
        let map = labels(&[("kubernetes.io/metadata.name", "other"), ("env", "prod")]);
        let name = ("kubernetes.io/metadata.name", "shop");
        let with = WithLabel {
            labels: Some(&map),
            added: name,
        };
        assert_eq!(with.label("kubernetes.io/metadata.name"), Some("shop"));
        assert_eq!(with.label("env"), Some("prod"));
        assert_eq!(with.label("tier"), None);
        let bare = WithLabel {
            labels: None,
            added: name,
        };
        assert_eq!(bare.label("env"), None);
        let sel = LabelSelector {
            match_labels: Some(labels(&[
                ("kubernetes.io/metadata.name", "shop"),
                ("env", "prod"),
            ])),
            ..Default::default()
        };
        assert!(matches(&sel, &with));
        assert!(!matches(&sel, &bare));
        assert!(
            !matches(&sel, &map),
            "the map alone names another namespace"
        );
    }

    #[test]
    fn operators_follow_metav1_semantics() {
        let l = labels(&[("a", "1")]);
        assert!(matches(&LabelSelector::default(), &l));
        assert!(matches(&expr("a", "In", &["1", "2"]), &l));
        assert!(!matches(&expr("a", "In", &["2"]), &l));
        assert!(
            matches(&expr("b", "NotIn", &["1"]), &l),
            "NotIn matches an absent key"
        );
        assert!(!matches(&expr("a", "NotIn", &["1"]), &l));
        assert!(matches(&expr("a", "Exists", &[]), &l));
        assert!(matches(&expr("b", "DoesNotExist", &[]), &l));
        assert!(!matches(&expr("a", "Bogus", &[]), &l));
        let by_labels = LabelSelector {
            match_labels: Some(labels(&[("a", "2")])),
            ..Default::default()
        };
        assert!(!matches(&by_labels, &l));
    }
}
