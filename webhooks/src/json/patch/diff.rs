//! The RFC 6902 diff between two JSON trees: deterministic, and minimal where it matters for admission.

use serde_json::{Map, Value};

use super::op::{Json, Op, Step, pointer};

struct Differ<'a> {
    path: Vec<Step<'a>>,
    ops: Vec<Op>,
}

impl<'a> Differ<'a> {
    fn pointer(&self, last: Option<Step<'_>>) -> String {
        pointer(self.path.iter().copied().chain(last))
    }

    fn add(&mut self, at: Step<'_>, value: Value) {
        let path = self.pointer(Some(at));
        self.ops.push(Op::Add {
            path,
            value: Json::Value(value),
        });
    }

    fn remove(&mut self, at: Step<'_>) {
        let path = self.pointer(Some(at));
        self.ops.push(Op::Remove { path });
    }

    fn replace(&mut self, value: Value) {
        let path = self.pointer(None);
        self.ops.push(Op::Replace {
            path,
            value: Json::Value(value),
        });
    }

    /// Compares a child; equal children (the common case) cost one comparison and no path work.
    fn child(&mut self, at: Step<'a>, from: &'a Value, to: Value) {
        if *from != to {
            self.path.push(at);
            self.value(from, to);
            self.path.pop();
        }
    }

    /// `from` and `to` differ (callers compare first).
    fn value(&mut self, from: &'a Value, to: Value) {
        match (from, to) {
            (Value::Object(a), Value::Object(b)) => self.object(a, b),
            (Value::Array(a), Value::Array(b)) => self.array(a, b),
            (_, to) => self.replace(to),
        }
    }

    fn object(&mut self, from: &'a Map<String, Value>, to: Map<String, Value>) {
        for key in from.keys() {
            if !to.contains_key(key) {
                self.remove(Step::Key(key));
            }
        }
        for (key, b) in to {
            match from.get_key_value(&key) {
                Some((key, a)) => self.child(Step::Key(key), a, b),
                None => self.add(Step::Key(&key), b),
            }
        }
    }

    /// Same length: element by element. Elements only inserted (or only removed) with the rest in order: adds
    /// (removes) at their indexes, so untouched elements are not rewritten. Anything else: the whole list.
    fn array(&mut self, from: &'a [Value], to: Vec<Value>) {
        if from.len() == to.len() {
            for (i, (a, b)) in from.iter().zip(to).enumerate() {
                self.child(Step::Index(i), a, b);
            }
            return;
        }
        let (short, long) = if from.len() < to.len() {
            (from, &to[..])
        } else {
            (&to[..], from)
        };
        let mut extra = Vec::with_capacity(long.len() - short.len());
        let mut matched = 0;
        for (j, v) in long.iter().enumerate() {
            if short.get(matched) == Some(v) {
                matched += 1;
            } else {
                extra.push(j);
            }
        }
        if matched < short.len() {
            self.replace(Value::Array(to));
        } else if from.len() < to.len() {
            // Ascending: each add lands after every element before it is in place.
            let mut extra = extra.into_iter().peekable();
            for (j, v) in to.into_iter().enumerate() {
                if extra.next_if_eq(&j).is_some() {
                    self.add(Step::Index(j), v);
                }
            }
        } else {
            for j in extra.into_iter().rev() {
                self.remove(Step::Index(j));
            }
        }
    }
}

/// The operations that turn `from` into `to`: deterministic for the same inputs, and minimal where it
/// matters for admission (a changed field is replaced, not its parent; appended or inserted list elements
/// are added without rewriting their neighbours).
pub fn diff(from: &Value, to: &Value) -> Vec<Op> {
    diff_owned(from, to.clone())
}

/// [`diff`] that moves what it adds out of `to` instead of copying it.
pub fn diff_owned(from: &Value, to: Value) -> Vec<Op> {
    let mut ops = Vec::new();
    diff_at(&mut ops, &[], from, to);
    ops
}

/// Appends to `ops` the operations of [`diff_owned`] between two values at `at` in a document.
pub(crate) fn diff_at<'a>(ops: &mut Vec<Op>, at: &[Step<'a>], from: &'a Value, to: Value) {
    if *from != to {
        let mut differ = Differ {
            path: at.to_vec(),
            ops: std::mem::take(ops),
        };
        differ.value(from, to);
        *ops = differ.ops;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::patch::apply;
    use serde_json::json;

    fn ops(from: &Value, to: &Value) -> Vec<String> {
        diff(from, to)
            .iter()
            .map(|op| format!("{} {}", op.name(), op.path()))
            .collect()
    }

    #[test]
    fn operations_are_minimal_and_apply() {
        let cases = [
            (json!({"a": 1}), json!({"a": 1}), vec![]),
            (
                json!({"a": 1, "b": 2}),
                json!({"a": 1, "b": 3, "c/~": 4}),
                vec!["replace /b", "add /c~1~0"],
            ),
            (
                json!({"a": {"x": 1}, "b": [1]}),
                json!({"b": [1]}),
                vec!["remove /a"],
            ),
            (
                json!({"l": [1, 2, 3]}),
                json!({"l": [0, 1, 2, 9, 3, 4]}),
                vec!["add /l/0", "add /l/3", "add /l/5"],
            ),
            (
                json!({"l": [0, 1, 2, 3]}),
                json!({"l": [1, 3]}),
                vec!["remove /l/2", "remove /l/0"],
            ),
            (
                json!({"l": [1, 2]}),
                json!({"l": [2, 1, 0]}),
                vec!["replace /l"],
            ),
            (
                json!({"l": [{"n": 1}, {"n": 2}]}),
                json!({"l": [{"n": 1}, {"n": 5}]}),
                vec!["replace /l/1/n"],
            ),
            (
                json!({"a": null}),
                json!({"a": {"b": 1}}),
                vec!["replace /a"],
            ),
            (json!([1]), json!({"a": 1}), vec!["replace "]),
        ];
        for (from, to, wanted) in cases {
            assert_eq!(ops(&from, &to), wanted, "{from} -> {to}");
            assert_eq!(
                apply(&from, &diff(&from, &to)).unwrap(),
                to,
                "{from} -> {to}"
            );
        }
    }

    #[test]
    fn diff_then_apply_round_trips_and_keeps_unknown_fields() {
        let from = json!({"metadata": {"name": "p", "creationTimestamp": null, "x-unknown": 1}, "spec": {"a": [1, 2]}});
        let to = json!({"metadata": {"name": "p", "creationTimestamp": null, "x-unknown": 1, "labels": {"k": "v"}}, "spec": {"a": [1, 2, 3]}});
        let ops = diff(&from, &to);
        assert_eq!(apply(&from, &ops).unwrap(), to);
        assert_eq!(diff(&from, &to), ops, "same input, same operations");
    }
}
