//! The patch of a [`RawPod`]: for each member a step wrote, what changed from it as received, in the pod's
//! key order, then the changes to the lists.

use serde_json::{Map, Value};

use super::{ANNOTATIONS, Edit, Presence, RawPod, Section, SetAnnotation, is_annotations};
use crate::json::patch::{self, Json, Op, Step};
use crate::json::write::write_string;

impl RawPod<'_> {
    /// The annotations steps set that change the pod, one per key (the last set), in key order.
    fn annotation_changes(&mut self) -> Vec<SetAnnotation> {
        let mut sets = std::mem::take(&mut self.set_annotations);
        // Stable: the last set of a key is the last of its run.
        sets.sort_by(|a, b| a.key.cmp(&b.key));
        let mut changes: Vec<SetAnnotation> = Vec::with_capacity(sets.len());
        for set in sets {
            match changes.last_mut() {
                Some(last) if last.key == set.key => *last = set,
                _ => changes.push(set),
            }
        }
        changes.retain(|s| self.received_annotation(&s.key) != Some(&*s.value));
        changes
    }

    /// The patch from the pod as received (with what was filled in) to this pod: for each member a step
    /// wrote, what changed in it, in the pod's key order (a section absent or null is added whole), then the
    /// changes to the lists.
    pub fn into_patch(mut self) -> Vec<Op> {
        let mut annotations = self.annotation_changes();
        // One operation per edit and annotation, and a few per list: one allocation for most pods.
        let mut ops = Vec::with_capacity(self.edits.len() + annotations.len() + 8);
        let mut edits = std::mem::take(&mut self.edits);
        if !annotations.is_empty() {
            // In its place among the members steps wrote: the annotations' edit, whose operations come
            // from `annotations`.
            edits.push(Edit {
                section: Section::Metadata,
                key: ANNOTATIONS,
                value: None,
            });
        }
        edits.sort_by(|a, b| (a.top_key(), a.key).cmp(&(b.top_key(), b.key)));
        let mut edits = edits.into_iter().peekable();
        // Lists set in a spec that is not there: the spec is added first, in its place among the edits.
        let mut spec_missing = self.spec.presence != Presence::Present && self.lists_set();
        loop {
            if spec_missing && edits.peek().is_none_or(|e| e.top_key() > "spec") {
                self.whole_section(&mut ops, Section::Spec, Vec::new(), &mut annotations);
                spec_missing = false;
            }
            let Some(edit) = edits.next() else { break };
            let section = edit.section;
            if section == Section::Top || self.part(section).presence == Presence::Present {
                if is_annotations(section, edit.key) {
                    self.annotation_ops(&mut ops, std::mem::take(&mut annotations));
                } else {
                    self.member_ops(&mut ops, edit);
                }
                continue;
            }
            let mut group = vec![edit];
            group.extend(std::iter::from_fn(|| {
                edits.next_if(|e| e.section == section)
            }));
            spec_missing &= section != Section::Spec;
            self.whole_section(&mut ops, section, group, &mut annotations);
        }
        self.init_containers.into_ops(&mut ops);
        self.containers.into_ops(&mut ops);
        self.volumes.into_ops(&mut ops);
        ops
    }

    /// The operations of the annotations steps set (`changes`), in metadata as received: one per
    /// annotation, or the annotations whole when they were absent or null.
    fn annotation_ops(&self, ops: &mut Vec<Op>, changes: Vec<SetAnnotation>) {
        let at = [Step::Key("metadata"), Step::Key(ANNOTATIONS)];
        let presence = self.annotations.0;
        if presence != Presence::Present {
            let value = Json::Text(annotations_text(changes));
            ops.push(presence.write_whole(patch::pointer(at), value));
            return;
        }
        for set in changes {
            let path = patch::pointer(at.into_iter().chain([Step::Key(&set.key)]));
            let value = match set.literal {
                Some(literal) => Json::Text(literal),
                None => Json::Value(Value::String(set.value)),
            };
            ops.push(if self.received_annotation(&set.key).is_some() {
                Op::Replace { path, value }
            } else {
                Op::Add { path, value }
            });
        }
    }

    /// Whether a step set one of the lists.
    fn lists_set(&self) -> bool {
        [&self.init_containers, &self.containers, &self.volumes]
            .iter()
            .any(|l| l.result.is_some())
    }

    /// A section absent or null as received, written whole with the members steps wrote `edits` (and the
    /// annotations set, `annotations`, when the annotations' edit is among them); nothing when there is
    /// nothing to write.
    fn whole_section(
        &self,
        ops: &mut Vec<Op>,
        section: Section,
        edits: Vec<Edit>,
        annotations: &mut Vec<SetAnnotation>,
    ) {
        let presence = self.part(section).presence;
        let mut map = Map::new();
        for edit in edits {
            if is_annotations(section, edit.key) {
                let sets = std::mem::take(annotations).into_iter();
                let sets = sets.map(|s| (s.key.into_owned(), Value::String(s.value)));
                map.insert(ANNOTATIONS.to_owned(), Value::Object(sets.collect()));
            } else if let Some(value) = edit.value {
                map.insert(edit.key.to_owned(), value);
            }
        }
        if map.is_empty() && !(section == Section::Spec && self.lists_set()) {
            return;
        }
        let path = patch::pointer([Step::Key(section.key())]);
        ops.push(presence.write_whole(path, Json::Value(Value::Object(map))));
    }

    /// The operations of one member a step wrote, in a section as received.
    fn member_ops(&self, ops: &mut Vec<Op>, edit: Edit) {
        let mut at = Vec::with_capacity(2);
        if edit.section != Section::Top {
            at.push(Step::Key(edit.section.key()));
        }
        at.push(Step::Key(edit.key));
        match (self.received_tree(edit.section, edit.key), edit.value) {
            (None, None) => {}
            (None, Some(value)) => ops.push(Op::Add {
                path: patch::pointer(at),
                value: Json::Value(value),
            }),
            (Some(_), None) => ops.push(Op::Remove {
                path: patch::pointer(at),
            }),
            (Some(from), Some(to)) => patch::diff_at(ops, &at, from, to),
        }
    }
}

/// The annotations `sets` (in key order, one per key) as a JSON map, each value's literal copied when the
/// step wrote one.
fn annotations_text(sets: Vec<SetAnnotation>) -> Box<str> {
    let mut text =
        String::with_capacity(sets.iter().map(|s| s.key.len() + s.value.len() + 8).sum());
    text.push('{');
    for (i, set) in sets.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        write_string(&mut text, &set.key);
        text.push(':');
        match &set.literal {
            Some(literal) => text.push_str(literal),
            None => write_string(&mut text, &set.value),
        }
    }
    text.push('}');
    text.into()
}
