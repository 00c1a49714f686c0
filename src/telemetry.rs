//! tracing-subscriber set-up: text or JSON lines, level from `RUST_LOG` (default `info`).
//!
//! Text lines carry ANSI colour only when stderr is a terminal: a file, a pipe or `kubectl logs` gets plain
//! text (tracing-subscriber colours by default, wherever the output goes). `deploy/` runs with
//! `--log-format json`, the form log pipelines read.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

use crate::cli::LogFormat;

/// Installs the global subscriber (logs go to stderr; `review` prints its answer on stdout).
///
/// # Errors
/// When a subscriber was installed already.
pub fn init(format: LogFormat, default_level: &str) -> anyhow::Result<()> {
    let colour = std::io::stderr().is_terminal();
    tracing::subscriber::set_global_default(subscriber(
        format,
        default_level,
        std::io::stderr,
        colour,
    ))
    .map_err(|e| anyhow::anyhow!("installing the log subscriber: {e}"))
}

/// The subscriber writing to `writer`, with ANSI colour in text lines only when `colour` is set.
fn subscriber<W>(
    format: LogFormat,
    default_level: &str,
    writer: W,
    colour: bool,
) -> Box<dyn tracing::Subscriber + Send + Sync>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer);
    match format {
        LogFormat::Text => Box::new(builder.with_ansi(colour).finish()),
        LogFormat::Json => Box::new(
            builder
                .json()
                .flatten_event(true)
                .with_current_span(false)
                .with_ansi(false)
                .finish(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A writer the test reads back.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn logged(format: LogFormat, colour: bool) -> String {
        let out = Captured::default();
        let sink = out.clone();
        let subscriber = subscriber(format, "info", move || sink.clone(), colour);
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!(sidecar_set = "mesh", "skipped: paused");
        });
        let bytes = out.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn text_lines_have_no_escape_codes_off_a_terminal() {
        let line = logged(LogFormat::Text, false);
        assert!(line.contains("skipped: paused"), "{line}");
        assert!(line.contains("sidecar_set=\"mesh\""), "{line}");
        assert!(!line.contains('\u{1b}'), "{line:?}");
    }

    #[test]
    fn text_lines_are_coloured_on_a_terminal() {
        assert!(logged(LogFormat::Text, true).contains('\u{1b}'));
    }

    #[test]
    fn json_lines_are_plain_json() {
        let line = logged(LogFormat::Json, true);
        let v: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
        assert_eq!(v["message"], "skipped: paused");
        assert_eq!(v["sidecar_set"], "mesh");
    }
}
