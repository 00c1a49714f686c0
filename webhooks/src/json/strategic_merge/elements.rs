//! The elements of two lists being merged: found by Go's `==` ([`position`]), deleted
//! ([`delete_from_list`]), deduplicated ([`deduplicate_scalars`]), and put in the order Go's
//! `normalizeElementOrder` and `mergeSortedSlice` give ([`partition`], [`normalize_order`]).

use serde_json::Value;

use super::error::SmpError;
use super::value::go_equal;

/// Go's `index`: where `value` first is in `order`.
pub(super) fn position(order: &[Value], value: &Value) -> Result<Option<usize>, SmpError> {
    for (i, v) in order.iter().enumerate() {
        if go_equal(value, v)? {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// `deleteFromSlice`: the original without every scalar the deletion list names.
pub(super) fn delete_from_list(
    original: Vec<Value>,
    delete: &[Value],
) -> Result<Vec<Value>, SmpError> {
    let mut kept = Vec::with_capacity(original.len());
    for value in original {
        if position(delete, &value)?.is_none() {
            kept.push(value);
        }
    }
    Ok(kept)
}

/// `deduplicateScalars`, Go's algorithm (a later duplicate is overwritten by the last element), whose
/// order the ordering step then fixes.
pub(super) fn deduplicate_scalars(mut s: Vec<Value>) -> Result<Vec<Value>, SmpError> {
    if s.is_empty() {
        return Ok(s);
    }
    let mut length = s.len() - 1;
    let mut i = 0;
    while i < length {
        let mut j = i + 1;
        while j <= length {
            if go_equal(&s[i], &s[j])? {
                s[j] = s[length].clone();
                s.truncate(length);
                length -= 1;
            } else {
                j += 1;
            }
        }
        i += 1;
    }
    Ok(s)
}

/// `partitionMapsByPresentInList`/`partitionPrimitivesByPresentInList`: the merged elements the patch
/// names, and the others, each in merged order.
pub(super) fn partition(
    merged: Vec<Value>,
    mut in_patch: impl FnMut(&Value) -> Result<Option<usize>, SmpError>,
) -> Result<(Vec<Value>, Vec<Value>), SmpError> {
    let (mut ours, mut server_only) = (Vec::new(), Vec::new());
    for element in merged {
        if in_patch(&element)?.is_some() {
            ours.push(element);
        } else {
            server_only.push(element);
        }
    }
    Ok((ours, server_only))
}

/// `normalizeElementOrder`: the patch's elements in patch order, the others in the original's order, then
/// interleaved by `mergeSortedSlice`. `index(order, element)` finds an element in an order (patch or
/// original) by merge-key value, or by value for scalars.
pub(super) fn normalize_order(
    ours: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    index: impl Fn(&[Value], &Value) -> Result<Option<usize>, SmpError>,
) -> Result<Vec<Value>, SmpError> {
    // Every element is found in its order (it came from there), so Go's `sort.SliceStable` with its
    // "less when both are found and come first" is a plain stable sort on the position.
    let sort = |list: Vec<Value>, order: &[Value]| -> Result<Vec<Value>, SmpError> {
        let mut keyed = list
            .into_iter()
            .map(|e| Ok((index(order, &e)?.unwrap_or(usize::MAX), e)))
            .collect::<Result<Vec<_>, SmpError>>()?;
        keyed.sort_by_key(|(i, _)| *i);
        Ok(keyed.into_iter().map(|(_, e)| e).collect())
    };
    let right = sort(ours, patch_order)?;
    let left = sort(server_only, server_order)?;
    // mergeSortedSlice(left = server-only, right = patch elements, serverOrder).
    let mut left_positions = Vec::with_capacity(left.len());
    for e in &left {
        left_positions.push(index(server_order, e)?);
    }
    let mut right_positions = Vec::with_capacity(right.len());
    for e in &right {
        right_positions.push(index(server_order, e)?);
    }
    let mut out = Vec::with_capacity(left.len() + right.len());
    let (mut left, mut right) = (left.into_iter().peekable(), right.into_iter().peekable());
    let (mut i, mut j) = (0, 0);
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(_), Some(_)) => matches!(
                (left_positions[i], right_positions[j]),
                (Some(l), Some(r)) if l < r
            ),
        };
        if take_left {
            out.extend(left.next());
            i += 1;
        } else {
            out.extend(right.next());
            j += 1;
        }
    }
    Ok(out)
}
