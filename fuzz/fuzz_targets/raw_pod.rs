//! The raw pod reader (`json::rawpod`): a pod create's object read in place, its lists kept as text, as the
//! mutating chain reads it; then what steps do with it (read members and container fields, set an
//! annotation and a label, reorder the containers) and the patch it writes, which must turn the pod as
//! received into the pod as the steps left it.
#![no_main]

use kruise_webhooks::json::RawJson;
use kruise_webhooks::json::patch;
use kruise_webhooks::json::rawpod::{RawPod, Section};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // Text that may not be JSON, and a RawJson as a review's object arrives (checked by the scanner).
    if let Ok(pod) = RawPod::parse_str(text) {
        exercise(text, pod);
    }
    if let Ok(raw) = serde_json::from_str::<RawJson>(text)
        && let Ok(pod) = RawPod::parse(&raw)
    {
        exercise(raw.get(), pod);
    }
});

fn exercise(text: &str, mut pod: RawPod<'_>) {
    for list in [&pod.init_containers, &pod.containers, &pod.volumes] {
        for c in list.iter() {
            let _ = c.name();
            let _ = c.get("image");
            let _ = c.get("resources");
            let _ = c.str("image");
            let _ = c.may_contain("env", "POD_NAME");
            for e in c.elements("env") {
                let _ = e.text();
                let _ = e.strs(["name", "value"]);
            }
            let _ = c.list("volumeMounts").count();
        }
        for i in 0..list.len() {
            let _ = list.name(i);
            let _ = list.value(i);
        }
        let _ = list.any_may_contain("env", "x");
    }
    let _ = pod.metadata_str("name");
    let _ = pod.get(Section::Metadata, "labels");
    let _ = pod.get(Section::Spec, "affinity");
    let _ = pod.received(Section::Metadata, "ownerReferences");
    let _ = pod.annotation("kruise.io/sidecarset-hash");

    // The patch of steps' edits applies to the pod as received and gives the pod as they left it. Only for
    // pods with metadata and spec objects (the apiserver sends no other, and steps write into both) that
    // serde_json builds whole (not past its 128 levels, no lone surrogates: members the reader then reads
    // as `null`).
    let received = serde_json::from_str::<Value>(text).ok();
    let shaped = received.as_ref().is_some_and(|r| {
        r.get("metadata").is_some_and(Value::is_object)
            && r.get("spec").is_some_and(Value::is_object)
    });
    pod.set_annotation("fuzz.kruise.io/a", "<&>\u{2028}".to_owned());
    pod.object_mut(Section::Metadata, "labels")
        .insert("fuzz.kruise.io/l".to_owned(), Value::from("1"));
    if pod.containers.len() >= 2 {
        let mut items = pod.containers.items();
        items.reverse();
        pod.containers.set(items);
    }
    let after = pod.to_value();
    let ops = pod.into_patch();
    let _ = patch::to_json(&ops);
    if let Some(received) = received.filter(|_| shaped) {
        let patched =
            patch::apply(&received, &ops).expect("the patch applies to the pod as received");
        assert_eq!(
            patched, after,
            "the patch gives the pod as the steps left it"
        );
    }
}
