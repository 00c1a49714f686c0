//! Writes `cases.rs`: the table of cases.txt with every file included (`include_str!`), so the targets carry
//! their inputs and run from any directory.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = fuzz.parent().expect("fuzz/ is inside the repository");
    println!("cargo::rerun-if-changed=cases.txt");
    let list = std::fs::read_to_string(fuzz.join("cases.txt")).expect("cases.txt");
    let mut out = String::from("&[\n");
    for line in list.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (review, cluster, expected) = match line.strip_prefix("examples/") {
            Some(name) => (
                root.join("examples/requests").join(format!("{name}.json")),
                Some(root.join("examples/cluster.yaml")),
                None,
            ),
            None => {
                let dir = root.join("tests/fixtures").join(line);
                let cluster = dir.join("cluster.yaml");
                (
                    dir.join("review.json"),
                    cluster.exists().then_some(cluster),
                    Some(dir.join("expected.json")),
                )
            }
        };
        let include = |p: Option<&Path>| match p {
            Some(p) => {
                assert!(p.exists(), "{line}: {} is missing", p.display());
                println!("cargo::rerun-if-changed={}", p.display());
                format!("include_str!({:?})", p.display().to_string())
            }
            None => "\"\"".to_owned(),
        };
        writeln!(
            out,
            "    Case {{ name: {line:?}, review: {}, cluster: {}, expected: {} }},",
            include(Some(&review)),
            include(cluster.as_deref()),
            include(expected.as_deref()),
        )
        .expect("writing to a String");
    }
    out.push_str("]\n");
    let dest = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("cases.rs");
    std::fs::write(dest, out).expect("writing cases.rs");
}
