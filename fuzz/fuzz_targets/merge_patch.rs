//! `MergePatchJson` (evanphx/json-patch's `MergePatch`), which SidecarSet injection and upgrade run on a
//! pod's annotations: document and patch are the input's two halves around its first 0xFF byte (never in
//! UTF-8). Its output must be JSON; an empty patch leaves an object as it is.
#![no_main]

use kruise_webhooks::json::merge_patch;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (doc, patch) = match data.iter().position(|&b| b == 0xff) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &b"{}"[..]),
    };
    let (Ok(doc), Ok(patch)) = (std::str::from_utf8(doc), std::str::from_utf8(patch)) else {
        return;
    };
    let Ok(merged) = merge_patch(doc, patch) else {
        return;
    };
    // Go's scanner takes `\ud800` (a lone surrogate) and untouched text is copied: serde_json, which
    // refuses it, checks only texts it reads itself.
    let serde_reads = |t: &str| serde_json::from_str::<serde_json::Value>(t).is_ok();
    if !(serde_reads(doc) && serde_reads(patch)) {
        return;
    }
    let value =
        serde_json::from_str::<serde_json::Value>(&merged).expect("the merged document is JSON");
    // An empty patch changes no object (an array or a scalar it replaces, as evanphx does). Merging the
    // same patch again may: evanphx keeps the nulls of an array that replaces an object, and prunes them
    // from one that replaces an array.
    if value.is_object()
        && let Ok(again) = merge_patch(&merged, "{}")
    {
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&again).expect("JSON"),
            value,
            "an empty patch changes nothing"
        );
    }
});
