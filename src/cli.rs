//! Command-line flags (clap derive). Env names are OpenKruise's where it has them (spec/webhook-server.md §2).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// OpenKruise's MutatingWebhookConfiguration: the default of `--mutating-webhook-configuration-name`.
pub const MUTATING_CONFIGURATION: &str = "kruise-mutating-webhook-configuration";
/// OpenKruise's ValidatingWebhookConfiguration: the default of `--validating-webhook-configuration-name`.
pub const VALIDATING_CONFIGURATION: &str = "kruise-validating-webhook-configuration";

/// kruise-webhook: OpenKruise's admission webhooks, in Rust.
#[derive(Parser, Debug)]
#[command(name = "kruise-webhook", version, about)]
pub struct Cli {
    /// Log format.
    #[arg(long, global = true, env = "KRUISE_WEBHOOK_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// What to run.
    #[command(subcommand)]
    pub command: Command,
}

/// Log line format.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the HTTPS admission server (in a cluster, or standalone on YAML files with --objects).
    Serve(Box<ServeArgs>),
    /// Run the admission chain offline on an AdmissionReview and print the answer.
    Review(ReviewArgs),
    /// Say why the webhooks would (not) act on a pod or a workload's pod template (docs/explain.md).
    Explain(ExplainArgs),
}

/// Where certificates come from.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum CertMode {
    /// standalone with --objects, external with the EnableExternalCerts gate, else self-managed.
    Auto,
    /// CA and serving certificate in the Secret, caBundle patched into our configurations (DECISIONS 15).
    SelfManaged,
    /// tls.crt / tls.key / ca.crt from --cert-dir (cert-manager), reloaded on change.
    External,
    /// Generated in memory; the CA is written to <cert-dir>/ca.crt so clients can trust it.
    Standalone,
}

/// `kruise-webhook serve`.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// HTTPS port the apiserver calls.
    #[arg(long, env = "WEBHOOK_PORT", default_value_t = 9876)]
    pub port: u16,
    /// Address the HTTPS listener binds.
    #[arg(long, env = "KRUISE_WEBHOOK_BIND_ADDRESS", default_value = "::")]
    pub bind_address: String,
    /// Plain-HTTP address of /metrics (`:8080` means all interfaces).
    #[arg(long, default_value = ":8080")]
    pub metrics_addr: String,
    /// Plain-HTTP address of /healthz and /readyz.
    #[arg(long, default_value = ":8000")]
    pub health_probe_addr: String,
    /// Directory of the serving certificate files.
    #[arg(
        long,
        env = "WEBHOOK_CERT_DIR",
        default_value = "/tmp/kruise-webhook-certs"
    )]
    pub cert_dir: PathBuf,
    /// Where certificates come from.
    #[arg(long, env = "KRUISE_WEBHOOK_CERT_MODE", value_enum, default_value_t = CertMode::Auto)]
    pub cert_mode: CertMode,
    /// Namespace of the Secret, the Service and the leader Lease.
    #[arg(long, env = "POD_NAMESPACE", default_value = "kruise-system")]
    pub namespace: String,
    /// Secret holding the CA and serving certificate.
    #[arg(long, env = "SECRET_NAME", default_value = "kruise-webhook-certs")]
    pub secret_name: String,
    /// Service the webhook configurations point at; part of the certificate's DNS names.
    #[arg(long, env = "SERVICE_NAME", default_value = "kruise-webhook-service")]
    pub service_name: String,
    /// Service the Kruise CRDs' conversion webhooks point at (self-managed, Service mode); part of the
    /// certificate's DNS names. Unset: `--service-name`. `deploy/base` names a Service of its own that lists
    /// replicas before they are ready, as conversion must not wait for readiness (docs/startup-order.md).
    #[arg(long, env = "CONVERSION_SERVICE_NAME")]
    pub conversion_service_name: Option<String>,
    /// The MutatingWebhookConfiguration whose webhooks and caBundle this server keeps, and that readiness
    /// judges. Beside OpenKruise, one of its own (deploy/overlays/beside-openkruise).
    #[arg(long, default_value = MUTATING_CONFIGURATION)]
    pub mutating_webhook_configuration_name: String,
    /// The ValidatingWebhookConfiguration, as --mutating-webhook-configuration-name.
    #[arg(long, default_value = VALIDATING_CONFIGURATION)]
    pub validating_webhook_configuration_name: String,
    /// Run beside OpenKruise's kruise-manager (DECISIONS 27): never write CustomResourceDefinitions, and
    /// refuse OpenKruise's names for the webhook configurations, Service, Secret and Lease.
    #[arg(long, env = "BESIDE_OPENKRUISE", default_value_t = false, action = clap::ArgAction::Set,
          num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub beside_openkruise: bool,
    /// URL mode: the API server calls `https://<host>:<port><path>` instead of the Service (a DNS name or IP
    /// address it can reach); the serving certificate also names it.
    #[arg(long, env = "WEBHOOK_HOST")]
    pub webhook_host: Option<String>,
    /// Standalone: serve on the cluster state in these YAML/JSON files or directories (repeatable).
    #[arg(long = "objects", value_name = "PATH")]
    pub objects: Vec<PathBuf>,
    /// Feature gates, OpenKruise's names: `Name=true,Other=false`.
    #[arg(long, env = "KRUISE_WEBHOOK_FEATURE_GATES", default_value = "")]
    pub feature_gates: String,
    /// Directory of the deletion-protection audit log (protection.log). Default /log in a cluster, none standalone.
    #[arg(long)]
    pub protection_log_path: Option<PathBuf>,
    /// How long in-flight requests may take to finish after SIGTERM, in seconds.
    #[arg(long, default_value_t = 20)]
    pub shutdown_grace_period: u64,
    /// How long a client may take to send a request body, in seconds.
    #[arg(long, default_value_t = 5)]
    pub request_body_timeout: u64,
    /// Admission requests served at once; one more is answered HTTP 429 at once instead of queued (the
    /// API server then applies the webhook's failurePolicy). Default: 64 per CPU core.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_in_flight: Option<u32>,
    /// How long to wait for the first certificate sync before giving up, in seconds.
    #[arg(long, default_value_t = 60)]
    pub webhook_initialize_timeout: u64,
    /// How often certificates are re-checked (Secret or files), in seconds.
    #[arg(long, default_value_t = 60)]
    pub cert_sync_interval: u64,
    /// Run the controllers only on the replica holding the leader Lease (`--enable-leader-election=false`
    /// runs them on every replica).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1,
          require_equals = true, default_missing_value = "true")]
    pub enable_leader_election: bool,
    /// Namespace of the leader Lease; default: --namespace (POD_NAMESPACE).
    #[arg(long)]
    pub leader_election_namespace: Option<String>,
    /// Name of the leader Lease (OpenKruise's lock, spec/webhook-server.md §9).
    #[arg(long, default_value = "kruise-manager")]
    pub leader_election_id: String,
    /// How long a leader Lease holds without renewal (Go duration: `15s`, `1m30s`).
    #[arg(long, default_value = "15s", value_parser = parse_go_duration)]
    pub leader_election_lease_duration: Duration,
    /// How long the leader keeps retrying a failed renewal before giving up leadership.
    #[arg(long, default_value = "10s", value_parser = parse_go_duration)]
    pub leader_election_renew_deadline: Duration,
    /// How often the Lease is tried (candidates) and renewed (the leader).
    #[arg(long, default_value = "2s", value_parser = parse_go_duration)]
    pub leader_election_retry_period: Duration,
}

/// Parses a Go `time.Duration` flag value: decimal numbers with units `ns`, `us`, `µs`, `ms`, `s`, `m`, `h`
/// (`1m30s`, `1.5s`), or `0`.
///
/// # Errors
/// A value Go's `time.ParseDuration` would refuse (negative durations too).
pub fn parse_go_duration(value: &str) -> Result<Duration, String> {
    let bad = || format!("invalid duration {value:?} (want e.g. 15s, 1m30s, 500ms)");
    if value == "0" {
        return Ok(Duration::ZERO);
    }
    let mut rest = value.strip_prefix('+').unwrap_or(value);
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let number: f64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(bad()),
        };
        total += number * seconds;
        rest = &rest[unit_len..];
    }
    Duration::try_from_secs_f64(total).map_err(|_| bad())
}

/// `kruise-webhook review`.
#[derive(Args, Debug)]
pub struct ReviewArgs {
    /// Cluster state: YAML/JSON files (multi-document or List) or directories of them (repeatable).
    #[arg(long = "objects", value_name = "PATH")]
    pub objects: Vec<PathBuf>,
    /// One admission.k8s.io/v1 AdmissionReview; `-` or absent reads stdin.
    #[arg(long)]
    pub request: Option<PathBuf>,
    /// Feature gates, as for serve.
    #[arg(long, default_value = "")]
    pub feature_gates: String,
}

/// Output of `explain`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExplainOutput {
    /// One line a decision, the reason first.
    Text,
    /// One JSON object (docs/explain.md §2.2).
    Json,
}

/// `kruise-webhook explain`.
#[derive(Args, Debug)]
pub struct ExplainArgs {
    /// Live mode: `<namespace>/<pod>`, or `<kind>/<name>` (pod, deployment, replicaset, statefulset, job,
    /// cloneset, statefulset.apps.kruise.io or asts), read from the cluster with GET and LIST only.
    #[arg(value_name = "TARGET", conflicts_with_all = ["pod", "objects"])]
    pub target: Option<String>,
    /// Live: the kubeconfig file; default as kubectl (KUBECONFIG, ~/.kube/config, then in-cluster).
    #[arg(long, requires = "target", conflicts_with_all = ["pod", "objects"])]
    pub kubeconfig: Option<PathBuf>,
    /// Live: the kubeconfig context; default its current context.
    #[arg(long, requires = "target", conflicts_with_all = ["pod", "objects"])]
    pub context: Option<String>,
    /// Live: the namespace of `<kind>/<name>`; default the context's namespace, else `default`.
    #[arg(short = 'n', long, requires = "target", conflicts_with_all = ["pod", "objects"])]
    pub namespace: Option<String>,
    /// Live: the Kruise namespace, where the SidecarSets' ControllerRevisions live.
    #[arg(long, default_value = "kruise-system")]
    pub kruise_namespace: String,
    /// Live: the MutatingWebhookConfiguration read as installed (as serve's flag).
    #[arg(long, default_value = MUTATING_CONFIGURATION)]
    pub mutating_webhook_configuration_name: String,
    /// Live: the ValidatingWebhookConfiguration read as installed (as serve's flag).
    #[arg(long, default_value = VALIDATING_CONFIGURATION)]
    pub validating_webhook_configuration_name: String,
    /// Cluster state: YAML/JSON files (multi-document or List) or directories of them (repeatable).
    #[arg(long = "objects", value_name = "PATH")]
    pub objects: Vec<PathBuf>,
    /// A Pod, or a Deployment, ReplicaSet, StatefulSet, Job, CloneSet or Advanced StatefulSet (YAML or JSON);
    /// `-` or absent reads stdin.
    #[arg(long)]
    pub pod: Option<PathBuf>,
    /// Feature gates, as for serve.
    #[arg(long, default_value = "")]
    pub feature_gates: String,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = ExplainOutput::Text)]
    pub output: ExplainOutput,
}
