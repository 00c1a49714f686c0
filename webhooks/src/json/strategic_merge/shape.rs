//! The shape check after the merge (see the documentation of [`super`]): objects and lists where the
//! schema knows them, so that what a typed decode into `v1.Pod` would refuse is told apart from what the
//! merge refuses.

use serde_json::Value;

use super::error::SmpError;
use super::schema::Field;
use super::value::kind;

/// Checks the shape of the patched object where `fields` knows it; a path names the first violation.
pub(super) fn check_shape(
    value: &Value,
    fields: &'static [(&'static str, Field)],
) -> Result<(), SmpError> {
    // Explicit stack: (value, its fields, its path). The schema's depth bounds it anyway.
    let mut stack = vec![(value, fields, String::new())];
    while let Some((value, fields, path)) = stack.pop() {
        let Value::Object(map) = value else { continue };
        for (name, field) in fields {
            let Some(child) = map.get(*name) else {
                continue;
            };
            if child.is_null() {
                continue;
            }
            let child_path = if path.is_empty() {
                (*name).to_owned()
            } else {
                format!("{path}.{name}")
            };
            let shape = |expected: &'static str, ok: bool| {
                if ok {
                    Ok(())
                } else {
                    Err(SmpError::Shape {
                        path: child_path.clone(),
                        expected,
                        found: kind(child),
                    })
                }
            };
            match field {
                Field::Object(below) => {
                    shape("an object", child.is_object())?;
                    stack.push((child, below, child_path.clone()));
                }
                Field::Map => shape("an object", child.is_object())?,
                Field::MergeScalars | Field::Atomic => shape("a list", child.is_array())?,
                Field::MergeByKey(_, below) => {
                    shape("a list", child.is_array())?;
                    for (i, element) in child.as_array().into_iter().flatten().enumerate() {
                        if !element.is_object() && !element.is_null() {
                            return Err(SmpError::Shape {
                                path: format!("{child_path}[{i}]"),
                                expected: "an object",
                                found: kind(element),
                            });
                        }
                        stack.push((element, below, format!("{child_path}[{i}]")));
                    }
                }
            }
        }
    }
    Ok(())
}
