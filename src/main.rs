//! The `kruise-webhook` binary: provider, flags, logs, dispatch. Wiring lives in the library.

use std::process::ExitCode;

use clap::Parser;
use kruise_webhook::cli::Cli;
use kruise_webhook::config::{Config, Mode};

// Admission decisions build and drop many small JSON nodes; mimalloc serves them markedly faster than the
// system allocator (benches/sidecarset_injection.rs: mean 110 µs -> 68 µs per pod create).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    kruise_webhook::install_crypto_provider();
    let config = match Config::try_from(Cli::parse()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("invalid configuration: {e}");
            return ExitCode::from(64); // EX_USAGE
        }
    };
    match config.command {
        Mode::Review(review) => {
            let _ = kruise_webhook::telemetry::init(config.log_format, "warn");
            match kruise_webhook::review::run(&review, std::io::stdin().lock()) {
                Ok(out) => {
                    use std::io::Write;
                    let _ = std::io::stdout().write_all(&out);
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("kruise-webhook review: {e}");
                    ExitCode::from(2)
                }
            }
        }
        Mode::Explain(explain) => {
            // A failed read is explain's one line on stderr (docs/explain.md §3): kube's own logs of it stay off.
            let _ = kruise_webhook::telemetry::init(config.log_format, "warn,kube_client=off");
            match kruise_webhook::explain::run(&explain, std::io::stdin().lock()) {
                Ok(out) => {
                    use std::io::Write;
                    let _ = std::io::stdout().write_all(&out);
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("kruise-webhook explain: {e}");
                    ExitCode::from(2)
                }
            }
        }
        Mode::Serve(serve) => {
            if let Err(e) = kruise_webhook::telemetry::init(config.log_format, "info") {
                eprintln!("{e}");
                return ExitCode::FAILURE;
            }
            let runtime = match tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
            {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("starting the runtime: {e}");
                    return ExitCode::FAILURE;
                }
            };
            match runtime.block_on(kruise_webhook::serve(*serve, shutdown_signal())) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    tracing::error!(error = %format!("{e:#}"), "exiting");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

/// SIGTERM (kubelet) or SIGINT (a terminal).
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => tracing::info!("SIGINT received"),
        _ = term => tracing::info!("SIGTERM received"),
    }
}
