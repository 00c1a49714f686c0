//! tracing-subscriber set-up: text or JSON lines, level from `RUST_LOG` (default `info`).

use tracing_subscriber::EnvFilter;

use crate::cli::LogFormat;

/// Installs the global subscriber (logs go to stderr; `review` prints its answer on stdout).
///
/// # Errors
/// When a subscriber was installed already.
pub fn init(format: LogFormat, default_level: &str) -> anyhow::Result<()> {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let result = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .try_init(),
    };
    result.map_err(|e| anyhow::anyhow!("installing the log subscriber: {e}"))
}
