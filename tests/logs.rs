//! Log output of the real binary when stderr is not a terminal (a file, a pipe, `kubectl logs`): plain text
//! lines without ANSI escape codes, or one JSON object per line with `--log-format json`.

use std::process::Command;

/// Runs `review` on the example pod create with info logs, stderr piped; returns stderr.
fn review_logs(extra: &[&str]) -> String {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new(env!("CARGO_BIN_EXE_kruise-webhook"))
        .current_dir(root)
        .env("RUST_LOG", "info")
        .args(extra)
        .args([
            "review",
            "--objects",
            "examples/cluster.yaml",
            "--request",
            "examples/requests/create-pod.json",
        ])
        .output()
        .expect("running kruise-webhook");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stderr).expect("logs are UTF-8")
}

#[test]
fn text_logs_to_a_pipe_carry_no_colour_codes() {
    let logs = review_logs(&[]);
    assert!(logs.contains("webhook ran"), "{logs}");
    assert!(logs.contains("webhook=\"mpod.kb.io\""), "{logs}");
    assert!(!logs.contains('\u{1b}'), "{logs:?}");
}

#[test]
fn json_logs_are_one_object_per_line() {
    let logs = review_logs(&["--log-format", "json"]);
    let lines: Vec<serde_json::Value> = logs
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect();
    assert!(
        lines
            .iter()
            .any(|l| l["message"] == "webhook ran" && l["webhook"] == "mpod.kb.io"),
        "{logs}"
    );
}
