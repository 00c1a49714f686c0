//! `spec.containers`, `spec.initContainers` and `spec.volumes` of a [`RawPod`](super::RawPod): lists of named
//! objects kept as the request's text, their members parsed on first read, and the operations that turn a
//! list as received into the list a step set.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::ops::Range;

use serde_json::Value;

use super::presence::Presence;
use crate::json::cursor::{Cursor, string_value, valid_tree};
use crate::json::patch::{self, Json, Op};

/// One element of a list a step has rewritten.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// The element at this index of the list as received, unchanged.
    Original(usize),
    /// An element the step wrote.
    New(Json),
    /// The element at this index of the list as received, in its place, with this content instead (an
    /// edit of some members): patched with one `replace` rather than a removal and an insertion.
    Edited(usize, Json),
}

/// `spec.containers`, `spec.initContainers` or `spec.volumes` of the pod: a list of named objects.
#[derive(Debug)]
pub struct RawList<'a> {
    pub(super) key: &'static str,
    pub(super) presence: Presence,
    /// The elements as received.
    pub(super) elements: Vec<Element<'a>>,
    /// Every element's members, in order: an element's are `members[element.members.clone()]`.
    pub(super) members: Vec<Member<'a>>,
    pub(super) result: Option<Vec<Item>>,
}

/// One element of a [`RawList`] as received.
#[derive(Debug)]
pub(super) struct Element<'a> {
    /// Its text.
    pub(super) text: &'a str,
    /// Where its members are in the list's `members`.
    pub(super) members: Range<usize>,
    /// Its `name` member (`None` when absent or `null`).
    pub(super) name: Option<Cow<'a, str>>,
}

/// A member of a container as received: its value's text, parsed on its first read, so a step that reads a
/// container's `env` does not build its probes, ports and image.
#[derive(Debug)]
pub(super) struct Member<'a> {
    pub(super) key: Cow<'a, str>,
    pub(super) text: &'a str,
    pub(super) value: OnceCell<Value>,
}

/// The member `key` of a container's members (the last one when the key is written twice, as decoding
/// does).
fn member<'m, 'a>(members: &'m [Member<'a>], key: &str) -> Option<&'m Member<'a>> {
    members.iter().rev().find(|m| m.key == key)
}

/// One element (a container, a volume) as received (see [`RawList::iter`]).
#[derive(Debug, Clone, Copy)]
pub struct RawContainer<'l> {
    name: &'l str,
    members: &'l [Member<'l>],
}

impl<'l> RawContainer<'l> {
    /// Its name as the list read it (`""` when it has none), without parsing the member again.
    pub fn name(self) -> &'l str {
        self.name
    }

    /// The member `key` (the last one when the key is written twice, as decoding does).
    pub fn get(self, key: &str) -> Option<&'l Value> {
        member(self.members, key).map(|m| m.value.get_or_init(|| valid_tree(m.text)))
    }

    /// Whether the member `key` may mention `word`: its text has it, or has an escape that could spell it.
    /// A test without parsing, so a step can skip members that cannot hold what it looks for.
    pub fn may_contain(self, key: &str, word: &str) -> bool {
        member(self.members, key)
            .is_some_and(|m| crate::json::scan::may_spell(m.text.as_bytes(), word.as_bytes()))
    }

    /// The string member `key`, `""` when absent or not a string.
    pub fn str(self, key: &str) -> &'l str {
        self.get(key).and_then(Value::as_str).unwrap_or("")
    }

    /// The elements of the list member `key` as text (none when absent or not a list): read from the
    /// member's text, which is not parsed into a tree.
    pub fn elements(self, key: &str) -> impl Iterator<Item = RawElement<'l>> + use<'l> {
        elements_of(member(self.members, key).map_or("", |m| m.text))
    }

    /// The elements of the list member `key` (none when absent or not a list).
    pub fn list(self, key: &str) -> impl Iterator<Item = &'l Value> {
        self.get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
    }
}

/// The elements of the list whose text is `text`, valid JSON (none when it is not a list).
pub fn elements_of(text: &str) -> impl Iterator<Item = RawElement<'_>> {
    let mut c = Cursor::new(text, &[]);
    let list = c.peek() == Some(b'[');
    c.i += 1;
    std::iter::from_fn(move || {
        if !list || c.peek().is_none_or(|b| b == b']') {
            return None;
        }
        let text = c.value();
        c.separator();
        Some(RawElement { text })
    })
}

/// An element of a container's list member as received (an env var, a mount, a device): its text, whose
/// string members are read from it on demand, without building a tree ([`RawContainer::elements`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawElement<'l> {
    text: &'l str,
}

impl<'l> RawElement<'l> {
    /// Its text, as received.
    pub fn text(self) -> &'l str {
        self.text
    }

    /// Its string member `key` (the last one when the key is written twice, as decoding does), `""` when
    /// absent, not a string, or when the element is not an object: as `Value::get` then `as_str` reads it.
    pub fn str(self, key: &str) -> Cow<'l, str> {
        let [value] = self.strs([key]);
        value
    }

    /// Its string members `keys`, each as [`RawElement::str`] reads it, in one pass over the text.
    pub fn strs<const N: usize>(self, keys: [&str; N]) -> [Cow<'l, str>; N] {
        self.members(keys)
            .map(|value| value.and_then(string_value).unwrap_or_default())
    }

    /// The texts of its members `keys` (the last one when a key is written twice), in one pass: `None` for
    /// one that is absent, and for all when the element is not an object.
    pub fn members<const N: usize>(self, keys: [&str; N]) -> [Option<&'l str>; N] {
        let mut found = [None; N];
        let _ = Cursor::new(self.text, &[]).object(|c, k| {
            let value = c.value();
            if let Some(i) = keys.iter().position(|key| *key == k) {
                found[i] = Some(value);
            }
            Ok(())
        });
        found
    }
}

/// A container's name from the text of its `name` member: a string, or `null` for none.
fn name_of(text: &str) -> Result<Option<Cow<'_, str>>, ()> {
    match text.as_bytes().first() {
        Some(b'"') => string_value(text).map(Some).ok_or(()),
        Some(b'n') => Ok(None),
        _ => Err(()),
    }
}

impl<'a> RawList<'a> {
    pub(super) fn new(key: &'static str, presence: Presence) -> Self {
        Self {
            key,
            presence,
            elements: Vec::new(),
            members: Vec::new(),
            result: None,
        }
    }

    /// Reads the list at the cursor in one pass: each element's text, members and name.
    pub(super) fn read(key: &'static str, c: &mut Cursor<'a>) -> Result<Self, String> {
        if c.null() {
            return Ok(Self::new(key, Presence::Null));
        }
        if c.peek() != Some(b'[') {
            return Err(format!("spec.{key}: expected a list of objects"));
        }
        c.i += 1;
        let mut list = Self::new(key, Presence::Present);
        // Room for a few containers of a dozen members each: no regrowth on a usual pod.
        list.elements.reserve(4);
        list.members.reserve(32);
        while c.peek().is_some_and(|b| b != b']') {
            let index = list.elements.len();
            let (start, first) = (c.i, list.members.len());
            let members = &mut list.members;
            c.object(|c, key| {
                let text = c.value();
                members.push(Member {
                    key,
                    text,
                    value: OnceCell::new(),
                });
                Ok(())
            })
            .ok_or_else(|| format!("spec.{key}[{index}]: expected an object"))??;
            let span = first..list.members.len();
            let name = match member(&list.members[span.clone()], "name") {
                Some(m) => name_of(m.text)
                    .map_err(|()| format!("spec.{key}[{index}].name: expected a string"))?,
                None => None,
            };
            list.elements.push(Element {
                text: &c.text[start..c.i],
                members: span,
                name,
            });
            c.separator();
        }
        c.i += 1; // the `]`
        Ok(list)
    }

    /// Number of elements as received.
    pub fn len(&self) -> usize {
        self.elements.len()
    }

    /// Whether the list as received is empty (or absent).
    pub fn is_empty(&self) -> bool {
        self.elements.is_empty()
    }

    /// The name of the element at `index` as received (`""` when it has none).
    pub fn name(&self, index: usize) -> &str {
        self.elements
            .get(index)
            .and_then(|e| e.name.as_deref())
            .unwrap_or("")
    }

    /// Number of elements as the steps so far left the list.
    pub fn current_len(&self) -> usize {
        self.result.as_ref().map_or(self.elements.len(), Vec::len)
    }

    /// Whether some element as the steps so far left the list may mention `word` in its member `key`
    /// ([`RawContainer::may_contain`]; a new element's whole text is searched). A test without parsing.
    pub fn any_may_contain(&self, key: &str, word: &str) -> bool {
        let original = |i: usize| {
            self.elements.get(i).is_some_and(|e| {
                RawContainer {
                    name: "",
                    members: &self.members[e.members.clone()],
                }
                .may_contain(key, word)
            })
        };
        match &self.result {
            None => (0..self.elements.len()).any(original),
            Some(items) => items.iter().any(|item| match item {
                Item::Original(i) => original(*i),
                Item::New(json) | Item::Edited(_, json) => match json {
                    Json::Text(t) => crate::json::scan::may_spell(t.as_bytes(), word.as_bytes()),
                    Json::Shared(t) => crate::json::scan::may_spell(t.as_bytes(), word.as_bytes()),
                    Json::Value(v) => {
                        crate::json::scan::may_spell(v.to_string().as_bytes(), word.as_bytes())
                    }
                },
            }),
        }
    }

    /// The element at `index` as received.
    pub fn element(&self, index: usize) -> Option<RawContainer<'_>> {
        self.elements.get(index).map(|e| RawContainer {
            name: e.name.as_deref().unwrap_or(""),
            members: &self.members[e.members.clone()],
        })
    }

    /// The elements as received, in order.
    pub fn iter(&self) -> impl Iterator<Item = RawContainer<'_>> + '_ {
        self.elements.iter().map(|e| RawContainer {
            name: e.name.as_deref().unwrap_or(""),
            members: &self.members[e.members.clone()],
        })
    }

    /// The element at `index` as received, parsed whole (`null` past the end).
    pub fn value(&self, index: usize) -> Value {
        self.elements
            .get(index)
            .map_or(Value::Null, |e| valid_tree(e.text))
    }

    /// Replaces the list: `items` refer to elements as received by index, or are new.
    pub fn set(&mut self, items: Vec<Item>) {
        self.result = Some(items);
    }

    /// The elements as the steps so far left the list (as received when none set it).
    pub fn items(&self) -> Vec<Item> {
        match &self.result {
            Some(items) => items.clone(),
            None => (0..self.elements.len()).map(Item::Original).collect(),
        }
    }

    /// An element of [`RawList::items`] as a tree.
    pub fn value_of(&self, item: &Item) -> Value {
        match item {
            Item::Original(i) => self.value(*i),
            Item::New(v) | Item::Edited(_, v) => v.to_value(),
        }
    }

    fn pointer(&self, index: Option<usize>) -> String {
        // The list keys are ours (`containers`, ...): nothing in them to encode.
        let mut out = String::with_capacity(32);
        out.push_str("/spec/");
        out.push_str(self.key);
        if let Some(i) = index {
            out.push('/');
            patch::push_index(&mut out, i);
        }
        out
    }

    /// Operations turning the list as received into the result (none when it was not set or is the same).
    pub(super) fn into_ops(mut self, ops: &mut Vec<Op>) {
        let Some(items) = self.result.take() else {
            return;
        };
        let n = self.elements.len();
        let mut kept = vec![false; n];
        let mut last = None;
        let mut in_order = self.presence == Presence::Present;
        for item in &items {
            if let Item::Original(i) | Item::Edited(i, _) = *item {
                in_order &= i < n && last.is_none_or(|l| l < i);
                last = Some(i);
                if i < n {
                    kept[i] = true;
                }
            }
        }
        if !in_order {
            // The whole list as text: original elements byte for byte as received, new ones as written.
            let mut text = String::with_capacity(1024);
            text.push('[');
            for (j, item) in items.iter().enumerate() {
                if j > 0 {
                    text.push(',');
                }
                match item {
                    Item::Original(i) => {
                        text.push_str(self.elements.get(*i).map_or("null", |e| e.text));
                    }
                    Item::New(v) | Item::Edited(_, v) => v.write(&mut text),
                }
            }
            text.push(']');
            let value = Json::Text(text.into());
            ops.push(self.presence.write_whole(self.pointer(None), value));
            return;
        }
        // Removed originals from the back, then new elements at their final index in ascending order: each
        // add lands after every element before it is already in place.
        for i in (0..n).rev().filter(|&i| !kept[i]) {
            ops.push(Op::Remove {
                path: self.pointer(Some(i)),
            });
        }
        let mut edited = Vec::new();
        for (p, item) in items.into_iter().enumerate() {
            match item {
                Item::New(value) => ops.push(Op::Add {
                    path: self.pointer(Some(p)),
                    value,
                }),
                Item::Edited(_, value) => edited.push((p, value)),
                Item::Original(_) => {}
            }
        }
        // Edited elements last, at their final index: the list is in its final order by then.
        for (p, value) in edited {
            ops.push(Op::Replace {
                path: self.pointer(Some(p)),
                value,
            });
        }
    }

    /// The element at `index` as received with `item` appended to its list member `key` (the member added
    /// when absent, or replaced when `null`), as text: the rest of the element is copied byte for byte,
    /// unknown fields included, and nothing is parsed. `None` past the end, or when the member is there but
    /// not a list.
    pub fn append_to_member(&self, index: usize, key: &str, item: &str) -> Option<Json> {
        let element = self.elements.get(index)?;
        let text = element.text;
        let members = &self.members[element.members.clone()];
        let mut out = String::with_capacity(text.len() + item.len() + key.len() + 8);
        match member(members, key) {
            Some(m) => {
                let start = m.text.as_ptr() as usize - text.as_ptr() as usize;
                let end = start + m.text.len();
                let value = m.text.trim();
                out.push_str(&text[..start]);
                if value == "null" {
                    out.push('[');
                    out.push_str(item);
                    out.push(']');
                } else {
                    let inner = value.strip_prefix('[')?.strip_suffix(']')?;
                    out.push('[');
                    out.push_str(inner);
                    if !inner.trim().is_empty() {
                        out.push(',');
                    }
                    out.push_str(item);
                    out.push(']');
                }
                out.push_str(&text[end..]);
            }
            None => {
                let body = text.trim_end();
                let body = body.strip_suffix('}')?;
                out.push_str(body);
                if !body.trim_end().ends_with('{') {
                    out.push(',');
                }
                crate::json::write_string(&mut out, key);
                out.push(':');
                out.push('[');
                out.push_str(item);
                out.push(']');
                out.push('}');
            }
        }
        Some(Json::Text(out.into()))
    }

    /// The list as the steps so far left it (as received when none set it); `None` when absent.
    pub(super) fn current(&self) -> Option<Value> {
        match (&self.result, self.presence) {
            (Some(items), _) => Some(Value::Array(
                items.iter().map(|i| self.value_of(i)).collect(),
            )),
            (None, Presence::Absent) => None,
            (None, Presence::Null) => Some(Value::Null),
            (None, Presence::Present) => Some(Value::Array(
                self.elements.iter().map(|e| valid_tree(e.text)).collect(),
            )),
        }
    }
}
