//! The Go regexp translation (`targetContainersNameRegex`, RE2 syntax rewritten for the `regex` crate):
//! pattern and subject are the input's two halves around its first 0xFF byte. A pattern that compiles is
//! matched against the subject and against itself.
#![no_main]

use kruise_webhooks::sidecarset::resources::compile_regex;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (pattern, subject) = match data.iter().position(|&b| b == 0xff) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &b""[..]),
    };
    let Ok(pattern) = std::str::from_utf8(pattern) else {
        return;
    };
    match compile_regex(pattern) {
        Ok(re) => {
            let _ = re.is_match(&String::from_utf8_lossy(subject));
            let _ = re.is_match(pattern);
        }
        Err(message) => assert!(
            message.starts_with("error parsing regexp: "),
            "Go's error text: {message}"
        ),
    }
});
