//! `Config`: the validated form of the flags. No I/O here.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use kruise_webhooks::FeatureGates;
use kruise_webhooks::features::{ENABLE_EXTERNAL_CERTS, Gate};

use crate::cli::{
    CertMode, Cli, Command, ExplainArgs, ExplainOutput, LogFormat, MUTATING_CONFIGURATION,
    ReviewArgs, ServeArgs, VALIDATING_CONFIGURATION,
};
use crate::explain::live::{LiveOptions, LiveTarget};

/// A flag value that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Bad `--feature-gates`.
    #[error("--feature-gates: {0}")]
    FeatureGates(#[from] kruise_webhooks::features::FeatureGateError),
    /// An address that does not parse.
    #[error("{flag}: {value:?} is not an address (want host:port or :port)")]
    Address {
        /// The flag.
        flag: &'static str,
        /// Its value.
        value: String,
    },
    /// Flags that contradict each other.
    #[error("{0}")]
    Conflict(String),
    /// A name that cannot be an object's name.
    #[error(
        "{flag}: {value:?} is not a valid object name (lower-case letters, digits, '-' and '.')"
    )]
    Name {
        /// The flag.
        flag: &'static str,
        /// Its value.
        value: String,
    },
    /// Beside OpenKruise, a name of one of kruise-manager's objects (DECISIONS 27).
    #[error(
        "--beside-openkruise: {flag} is {value:?}, OpenKruise's own; kruise-manager keeps that object, so give ours another name (deploy/overlays/beside-openkruise)"
    )]
    OpenKruiseName {
        /// The flag (and its env, where it has one).
        flag: &'static str,
        /// Its value.
        value: String,
    },
    /// A `WEBHOOK_HOST` that cannot be the host of a URL.
    #[error(
        "--webhook-host (WEBHOOK_HOST): {0:?} is not a DNS name or IP address (give the host alone: no scheme, port or path)"
    )]
    WebhookHost(String),
}

/// Validated configuration.
#[derive(Debug)]
pub struct Config {
    /// Log format.
    pub log_format: LogFormat,
    /// What to run.
    pub command: Mode,
}

/// The validated subcommand.
#[derive(Debug)]
pub enum Mode {
    /// `serve`.
    Serve(Box<ServeConfig>),
    /// `review`.
    Review(ReviewConfig),
    /// `explain`.
    Explain(ExplainConfig),
}

/// Where the serving certificate comes from (after `auto` is resolved).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CertSource {
    /// Secret + caBundle patching in the cluster.
    SelfManaged,
    /// Files written by someone else.
    External,
    /// Generated in memory.
    Standalone,
}

/// `serve`, validated.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// HTTPS listener.
    pub tls_addr: SocketAddr,
    /// /metrics listener.
    pub metrics_addr: SocketAddr,
    /// /healthz, /readyz listener.
    pub probe_addr: SocketAddr,
    /// Certificate files.
    pub cert_dir: PathBuf,
    /// Certificate source.
    pub cert_source: CertSource,
    /// Our namespace.
    pub namespace: String,
    /// The certificate Secret.
    pub secret_name: String,
    /// Our Service.
    pub service_name: String,
    /// The Service of the Kruise CRDs' conversion webhooks (`--conversion-service-name`, else
    /// [`ServeConfig::service_name`]).
    pub conversion_service_name: String,
    /// Our MutatingWebhookConfiguration (`--mutating-webhook-configuration-name`): the only one whose webhooks
    /// and caBundle we keep, and one of the two readiness judges (DECISIONS 22).
    pub mutating_configuration: String,
    /// Our ValidatingWebhookConfiguration (`--validating-webhook-configuration-name`), as the mutating one.
    pub validating_configuration: String,
    /// Beside OpenKruise's kruise-manager (`--beside-openkruise`, env `BESIDE_OPENKRUISE`; DECISIONS 27). Its
    /// effects: OpenKruise's names for our webhook configurations, Service, Secret and Lease are refused here;
    /// the certificate loop never writes a CustomResourceDefinition (kruise-manager owns the Kruise CRDs and
    /// points their conversion at its own Service every minute). Which controllers run beside it (not our
    /// SidecarSet controller: kruise-manager's cannot be switched off) is the controllers' to key on this.
    pub beside_openkruise: bool,
    /// The gates `--feature-gates` names that this version accepts but does not implement, with what they
    /// switch in OpenKruise ([`kruise_webhooks::features::NOT_IMPLEMENTED`]): warned about once at start-up.
    pub unimplemented_gates: Vec<(Gate, &'static str)>,
    /// URL mode (DECISIONS 21): the API server calls `https://<host>:<port><path>`; an IPv6 address without
    /// brackets.
    pub webhook_host: Option<String>,
    /// Standalone object files; empty in a cluster.
    pub objects: Vec<PathBuf>,
    /// Feature gates.
    pub gates: FeatureGates,
    /// Audit log directory.
    pub protection_log_dir: Option<PathBuf>,
    /// Drain time after SIGTERM.
    pub shutdown_grace: Duration,
    /// Body read limit in time.
    pub body_timeout: Duration,
    /// Admission requests served at once (`--max-in-flight`); the excess is shed with HTTP 429.
    pub max_in_flight: usize,
    /// First certificate sync deadline.
    pub init_timeout: Duration,
    /// Certificate re-check period.
    pub cert_sync_interval: Duration,
    /// Leader election of the controllers.
    pub leader_election: LeaderElectionConfig,
}

/// Leader election of the controllers (spec/webhook-server.md §9): the Lease `<namespace>/<name>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderElectionConfig {
    /// Off: every replica runs the controllers.
    pub enabled: bool,
    /// Namespace of the Lease.
    pub namespace: String,
    /// Name of the Lease.
    pub name: String,
    /// How long the Lease holds without renewal.
    pub lease_duration: Duration,
    /// How long the leader retries a failed renewal before giving up.
    pub renew_deadline: Duration,
    /// How often the Lease is tried and renewed.
    pub retry_period: Duration,
}

impl LeaderElectionConfig {
    /// OpenKruise's defaults: enabled, `<namespace>/kruise-manager`, 15 s / 10 s / 2 s.
    pub fn new(namespace: &str) -> Self {
        Self {
            enabled: true,
            namespace: namespace.to_owned(),
            name: "kruise-manager".to_owned(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

impl ServeConfig {
    /// True when serving YAML files instead of a cluster.
    pub fn standalone(&self) -> bool {
        !self.objects.is_empty() || self.cert_source == CertSource::Standalone
    }

    /// A standalone configuration on loopback with ephemeral ports (tests, benches, quick start).
    pub fn for_loopback(objects: Vec<PathBuf>, cert_dir: PathBuf) -> Self {
        let lo = |port| SocketAddr::new(IpAddr::from([127, 0, 0, 1]), port);
        Self {
            tls_addr: lo(0),
            metrics_addr: lo(0),
            probe_addr: lo(0),
            cert_dir,
            cert_source: CertSource::Standalone,
            namespace: "kruise-system".into(),
            secret_name: "kruise-webhook-certs".into(),
            service_name: "kruise-webhook-service".into(),
            conversion_service_name: "kruise-webhook-service".into(),
            mutating_configuration: MUTATING_CONFIGURATION.into(),
            validating_configuration: VALIDATING_CONFIGURATION.into(),
            beside_openkruise: false,
            unimplemented_gates: Vec::new(),
            webhook_host: None,
            objects,
            gates: FeatureGates::default(),
            protection_log_dir: None,
            shutdown_grace: Duration::from_secs(5),
            body_timeout: Duration::from_secs(5),
            max_in_flight: default_max_in_flight(),
            init_timeout: Duration::from_secs(60),
            cert_sync_interval: Duration::from_secs(60),
            leader_election: LeaderElectionConfig::new("kruise-system"),
        }
    }
}

/// `review`, validated.
#[derive(Debug, Clone)]
pub struct ReviewConfig {
    /// Cluster state files.
    pub objects: Vec<PathBuf>,
    /// The AdmissionReview; `None` is stdin.
    pub request: Option<PathBuf>,
    /// Feature gates.
    pub gates: FeatureGates,
}

/// `explain`, validated.
#[derive(Debug, Clone)]
pub struct ExplainConfig {
    /// Cluster state files.
    pub objects: Vec<PathBuf>,
    /// The pod or workload; `None` is stdin.
    pub pod: Option<PathBuf>,
    /// Feature gates.
    pub gates: FeatureGates,
    /// Text or JSON.
    pub output: ExplainOutput,
    /// Live mode: a target given instead of `--pod`.
    pub live: Option<Box<ExplainLiveConfig>>,
}

/// `explain <namespace>/<pod> | <kind>/<name>`, validated.
#[derive(Debug, Clone)]
pub struct ExplainLiveConfig {
    /// What to explain.
    pub target: LiveTarget,
    /// `--kubeconfig`; `None`: `kube::Config::infer` (KUBECONFIG, ~/.kube/config, in-cluster).
    pub kubeconfig: Option<PathBuf>,
    /// `--context`.
    pub context: Option<String>,
    /// The Kruise namespace and the configuration names.
    pub options: LiveOptions,
}

/// `:8080` → [::]:8080 (every address, both families, as Go's `:8080`); `host:port` as given.
pub fn parse_addr(flag: &'static str, value: &str) -> Result<SocketAddr, ConfigError> {
    let full = if value.starts_with(':') {
        format!("[::]{value}")
    } else {
        value.to_owned()
    };
    full.parse().map_err(|_| ConfigError::Address {
        flag,
        value: value.to_owned(),
    })
}

impl TryFrom<Cli> for Config {
    type Error = ConfigError;
    fn try_from(cli: Cli) -> Result<Self, ConfigError> {
        let command = match cli.command {
            Command::Serve(s) => Mode::Serve(Box::new(serve_config(*s)?)),
            Command::Review(r) => Mode::Review(review_config(r)?),
            Command::Explain(e) => Mode::Explain(explain_config(e)?),
        };
        Ok(Self {
            log_format: cli.log_format,
            command,
        })
    }
}

fn review_config(r: ReviewArgs) -> Result<ReviewConfig, ConfigError> {
    let request = r.request.filter(|p| p.as_os_str() != "-");
    Ok(ReviewConfig {
        objects: r.objects,
        request,
        gates: FeatureGates::parse(&r.feature_gates)?,
    })
}

fn explain_config(e: ExplainArgs) -> Result<ExplainConfig, ConfigError> {
    let live = match &e.target {
        Some(target) => Some(Box::new(ExplainLiveConfig {
            target: LiveTarget::parse(target, e.namespace.as_deref())
                .map_err(ConfigError::Conflict)?,
            kubeconfig: e.kubeconfig.clone(),
            context: e.context.clone(),
            options: LiveOptions {
                kruise_namespace: e.kruise_namespace.clone(),
                mutating_configuration: object_name(
                    "--mutating-webhook-configuration-name",
                    e.mutating_webhook_configuration_name.clone(),
                )?,
                validating_configuration: object_name(
                    "--validating-webhook-configuration-name",
                    e.validating_webhook_configuration_name.clone(),
                )?,
            },
        })),
        None => None,
    };
    Ok(ExplainConfig {
        objects: e.objects,
        pod: e.pod.filter(|p| p.as_os_str() != "-"),
        gates: FeatureGates::parse(&e.feature_gates)?,
        output: e.output,
        live,
    })
}

/// OpenKruise's names of the objects both would otherwise share (its chart's and kruise-manager's defaults).
const OPENKRUISE_SECRET: &str = "kruise-webhook-certs";
const OPENKRUISE_SERVICE: &str = "kruise-webhook-service";
const OPENKRUISE_LEASE: &str = "kruise-manager";

/// An object name the API server accepts (a DNS-1123 subdomain).
fn object_name(flag: &'static str, value: String) -> Result<String, ConfigError> {
    let label = |l: &str| {
        !l.is_empty()
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    };
    if value.len() <= 253 && value.split('.').all(label) {
        Ok(value)
    } else {
        Err(ConfigError::Name { flag, value })
    }
}

/// Beside OpenKruise (DECISIONS 27), none of our names may be one of kruise-manager's objects: both would
/// rewrite its webhooks and caBundle, serve its Service, rotate its Secret or contend for its Lease.
fn refuse_openkruise_names(config: &ServeConfig) -> Result<(), ConfigError> {
    let ours = [
        (
            "--mutating-webhook-configuration-name",
            &config.mutating_configuration,
            MUTATING_CONFIGURATION,
        ),
        (
            "--validating-webhook-configuration-name",
            &config.validating_configuration,
            VALIDATING_CONFIGURATION,
        ),
        (
            "--service-name (SERVICE_NAME)",
            &config.service_name,
            OPENKRUISE_SERVICE,
        ),
        (
            "--secret-name (SECRET_NAME)",
            &config.secret_name,
            OPENKRUISE_SECRET,
        ),
    ];
    for (flag, value, openkruise) in ours {
        if value == openkruise {
            return Err(ConfigError::OpenKruiseName {
                flag,
                value: value.clone(),
            });
        }
    }
    // The Lease only where kruise-manager takes it: in its namespace, the one we share.
    let lease = &config.leader_election;
    if lease.enabled && lease.name == OPENKRUISE_LEASE && lease.namespace == config.namespace {
        return Err(ConfigError::OpenKruiseName {
            flag: "--leader-election-id",
            value: lease.name.clone(),
        });
    }
    Ok(())
}

fn serve_config(s: ServeArgs) -> Result<ServeConfig, ConfigError> {
    let gates = FeatureGates::parse(&s.feature_gates)?;
    let unimplemented_gates = kruise_webhooks::features::not_implemented_in(&s.feature_gates);
    let bind: IpAddr = s.bind_address.parse().map_err(|_| ConfigError::Address {
        flag: "--bind-address",
        value: s.bind_address.clone(),
    })?;
    let cert_source = match s.cert_mode {
        CertMode::Auto if !s.objects.is_empty() => CertSource::Standalone,
        CertMode::Auto if gates.enabled(ENABLE_EXTERNAL_CERTS) => CertSource::External,
        CertMode::Auto | CertMode::SelfManaged => CertSource::SelfManaged,
        CertMode::External => CertSource::External,
        CertMode::Standalone => CertSource::Standalone,
    };
    if cert_source == CertSource::SelfManaged && !s.objects.is_empty() {
        return Err(ConfigError::Conflict(
            "--cert-mode=self-managed needs a cluster; --objects runs standalone (use --cert-mode=standalone or external)".into(),
        ));
    }
    let standalone = !s.objects.is_empty() || cert_source == CertSource::Standalone;
    let protection_log_dir = match s.protection_log_path {
        Some(p) if p.as_os_str().is_empty() => None,
        Some(p) => Some(p),
        None if standalone => None,
        None => Some(PathBuf::from("/log")),
    };
    let leader_election = LeaderElectionConfig {
        enabled: s.enable_leader_election,
        namespace: s
            .leader_election_namespace
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| s.namespace.clone()),
        name: s.leader_election_id,
        lease_duration: s.leader_election_lease_duration,
        renew_deadline: s.leader_election_renew_deadline,
        retry_period: s.leader_election_retry_period,
    };
    // client-go's checks: leaseDuration > renewDeadline > retryPeriod * 1.2 (the jitter factor).
    if leader_election.enabled
        && (leader_election.lease_duration <= leader_election.renew_deadline
            || leader_election.renew_deadline <= leader_election.retry_period.mul_f64(1.2))
    {
        return Err(ConfigError::Conflict(
            "--leader-election-lease-duration must exceed --leader-election-renew-deadline, which must exceed 1.2 x --leader-election-retry-period".into(),
        ));
    }
    let config = ServeConfig {
        tls_addr: SocketAddr::new(bind, s.port),
        metrics_addr: parse_addr("--metrics-addr", &s.metrics_addr)?,
        probe_addr: parse_addr("--health-probe-addr", &s.health_probe_addr)?,
        cert_dir: s.cert_dir,
        cert_source,
        namespace: s.namespace,
        secret_name: s.secret_name,
        conversion_service_name: match s.conversion_service_name {
            Some(name) => object_name("--conversion-service-name", name)?,
            None => s.service_name.clone(),
        },
        service_name: s.service_name,
        mutating_configuration: object_name(
            "--mutating-webhook-configuration-name",
            s.mutating_webhook_configuration_name,
        )?,
        validating_configuration: object_name(
            "--validating-webhook-configuration-name",
            s.validating_webhook_configuration_name,
        )?,
        beside_openkruise: s.beside_openkruise,
        unimplemented_gates,
        webhook_host: webhook_host(s.webhook_host)?,
        objects: s.objects,
        gates,
        protection_log_dir,
        shutdown_grace: Duration::from_secs(s.shutdown_grace_period),
        body_timeout: Duration::from_secs(s.request_body_timeout.max(1)),
        max_in_flight: s
            .max_in_flight
            .map_or_else(default_max_in_flight, |n| n as usize),
        init_timeout: Duration::from_secs(s.webhook_initialize_timeout),
        cert_sync_interval: Duration::from_secs(s.cert_sync_interval.max(1)),
        leader_election,
    };
    if config.beside_openkruise {
        refuse_openkruise_names(&config)?;
    }
    Ok(config)
}

/// Admission requests in flight per CPU core by default. A decision takes about 0.1 ms of CPU, so a full
/// core's share waits a few milliseconds behind the others; requests waiting on a status write hold their
/// place without using the CPU.
pub const IN_FLIGHT_PER_CORE: usize = 64;

/// `--max-in-flight` when not given: [`IN_FLIGHT_PER_CORE`] per core the process may use.
pub fn default_max_in_flight() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    IN_FLIGHT_PER_CORE * cores
}

/// URL mode's host: a DNS name or an IP address (an IPv6 address may come in brackets, and is kept without);
/// empty means Service mode.
fn webhook_host(value: Option<String>) -> Result<Option<String>, ConfigError> {
    let Some(value) = value.filter(|h| !h.is_empty()) else {
        return Ok(None);
    };
    let bare = value
        .strip_prefix('[')
        .and_then(|v| v.strip_suffix(']'))
        .unwrap_or(&value);
    if bare.parse::<IpAddr>().is_ok() {
        return Ok(Some(bare.to_owned()));
    }
    let label = |l: &str| {
        (1..=63).contains(&l.len())
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    };
    if value.len() <= 253 && value.split('.').all(label) {
        Ok(Some(value))
    } else {
        Err(ConfigError::WebhookHost(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn parse(args: &[&str]) -> Result<Config, ConfigError> {
        Config::try_from(Cli::try_parse_from(args).unwrap())
    }

    #[test]
    fn max_in_flight_defaults_to_a_share_per_core_and_refuses_zero() {
        let serve = |args: &[&str]| match parse(args).unwrap().command {
            Mode::Serve(s) => s.max_in_flight,
            Mode::Review(_) | Mode::Explain(_) => panic!("serve"),
        };
        let cores = std::thread::available_parallelism().unwrap().get();
        assert_eq!(serve(&["kw", "serve"]), IN_FLIGHT_PER_CORE * cores);
        assert_eq!(serve(&["kw", "serve", "--max-in-flight", "7"]), 7);
        assert!(Cli::try_parse_from(["kw", "serve", "--max-in-flight", "0"]).is_err());
    }

    #[test]
    fn objects_mean_standalone_certificates_and_no_audit_log() {
        let Mode::Serve(s) = parse(&["kw", "serve", "--objects", "x.yaml"])
            .unwrap()
            .command
        else {
            panic!()
        };
        assert_eq!(s.cert_source, CertSource::Standalone);
        assert!(s.protection_log_dir.is_none());
        assert_eq!(s.metrics_addr, "[::]:8080".parse().unwrap());
        assert_eq!(s.tls_addr.port(), 9876);
    }

    #[test]
    fn external_certs_gate_selects_external_mode() {
        let Mode::Serve(s) = parse(&["kw", "serve", "--feature-gates", "EnableExternalCerts=true"])
            .unwrap()
            .command
        else {
            panic!()
        };
        assert_eq!(s.cert_source, CertSource::External);
        assert_eq!(s.protection_log_dir, Some(PathBuf::from("/log")));
    }

    #[test]
    fn leader_election_defaults_follow_openkruise() {
        let Mode::Serve(s) = parse(&["kw", "serve", "--namespace", "ops"])
            .unwrap()
            .command
        else {
            panic!()
        };
        assert_eq!(s.leader_election, LeaderElectionConfig::new("ops"));
        let Mode::Serve(s) = parse(&[
            "kw",
            "serve",
            "--enable-leader-election=false",
            "--leader-election-namespace=elsewhere",
            "--leader-election-lease-duration=1m30s",
        ])
        .unwrap()
        .command
        else {
            panic!()
        };
        assert!(!s.leader_election.enabled);
        assert_eq!(s.leader_election.namespace, "elsewhere");
        assert_eq!(s.leader_election.lease_duration, Duration::from_secs(90));
        assert!(parse(&["kw", "serve", "--leader-election-renew-deadline=20s"]).is_err());
        assert!(Cli::try_parse_from(["kw", "serve", "--leader-election-retry-period=2"]).is_err());
        assert_eq!(
            crate::cli::parse_go_duration("1.5s").unwrap(),
            Duration::from_millis(1500)
        );
    }

    #[test]
    fn webhook_host_is_a_name_or_an_address() {
        let host = |value: &str| {
            let flag = format!("--webhook-host={value}");
            parse(&["kw", "serve", &flag]).map(|c| match c.command {
                Mode::Serve(s) => s.webhook_host,
                Mode::Review(_) | Mode::Explain(_) => unreachable!(),
            })
        };
        assert_eq!(
            webhook_host(Some(String::new())).unwrap(),
            None,
            "empty: Service mode"
        );
        assert_eq!(host("10.0.0.5").unwrap().as_deref(), Some("10.0.0.5"));
        assert_eq!(host("[fd00::5]").unwrap().as_deref(), Some("fd00::5"));
        assert_eq!(host("fd00::5").unwrap().as_deref(), Some("fd00::5"));
        assert_eq!(
            host("Webhook.example.com").unwrap().as_deref(),
            Some("Webhook.example.com")
        );
        for bad in [
            "https://10.0.0.5",
            "10.0.0.5:9876",
            "host/path",
            "-host",
            "a..b",
        ] {
            let e = host(bad).unwrap_err();
            assert!(e.to_string().contains("WEBHOOK_HOST"), "{bad}: {e}");
        }
    }

    fn serve(args: &[&str]) -> Result<ServeConfig, ConfigError> {
        parse(args).map(|c| match c.command {
            Mode::Serve(s) => *s,
            Mode::Review(_) | Mode::Explain(_) => unreachable!("serve"),
        })
    }

    #[test]
    fn webhook_configuration_names_default_to_openkruises_and_follow_the_flags() {
        let s = serve(&["kw", "serve"]).unwrap();
        assert_eq!(s.mutating_configuration, MUTATING_CONFIGURATION);
        assert_eq!(s.validating_configuration, VALIDATING_CONFIGURATION);
        assert!(!s.beside_openkruise);
        let s = serve(&[
            "kw",
            "serve",
            "--mutating-webhook-configuration-name=kruise-mutating-webhook-configuration-pod",
            "--validating-webhook-configuration-name",
            "kruise-validating-webhook-configuration-pod",
        ])
        .unwrap();
        assert_eq!(
            s.mutating_configuration,
            "kruise-mutating-webhook-configuration-pod"
        );
        assert_eq!(
            s.validating_configuration,
            "kruise-validating-webhook-configuration-pod"
        );
        for bad in ["", "Kruise", "a_b", "-a", "a..b"] {
            let flag = format!("--mutating-webhook-configuration-name={bad}");
            let e = serve(&["kw", "serve", &flag]).unwrap_err();
            assert!(
                e.to_string()
                    .contains("--mutating-webhook-configuration-name"),
                "{bad:?}: {e}"
            );
        }
    }

    /// The names of deploy/overlays/beside-openkruise.
    const BESIDE: &[&str] = &[
        "kw",
        "serve",
        "--beside-openkruise",
        "--mutating-webhook-configuration-name=kruise-mutating-webhook-configuration-pod",
        "--validating-webhook-configuration-name=kruise-validating-webhook-configuration-pod",
        "--service-name=kruise-pod-webhook-service",
        "--secret-name=kruise-pod-webhook-certs",
        "--leader-election-id=kruise-pod-webhook",
    ];

    #[test]
    fn beside_openkruise_is_a_flag_and_an_env() {
        let s = serve(BESIDE).unwrap();
        assert!(s.beside_openkruise);
        assert_eq!(s.leader_election.name, "kruise-pod-webhook");
        let mut off = BESIDE.to_vec();
        off[2] = "--beside-openkruise=false";
        assert!(!serve(&off).unwrap().beside_openkruise);
        assert!(
            Cli::try_parse_from(["kw", "serve", "--beside-openkruise=maybe"]).is_err(),
            "a boolean"
        );
        let env = |long: &str| {
            use clap::CommandFactory;
            let cli = Cli::command();
            let serve = cli.find_subcommand("serve").unwrap();
            serve
                .get_arguments()
                .find(|a| a.get_long() == Some(long))
                .and_then(|a| a.get_env())
                .map(|e| e.to_string_lossy().into_owned())
        };
        assert_eq!(
            env("beside-openkruise").as_deref(),
            Some("BESIDE_OPENKRUISE")
        );
        assert_eq!(env("mutating-webhook-configuration-name"), None);
    }

    #[test]
    fn beside_openkruise_refuses_openkruises_names() {
        // Each of our names in turn set back to OpenKruise's: refused, naming the flag.
        for (i, flag) in [
            (3, "--mutating-webhook-configuration-name"),
            (4, "--validating-webhook-configuration-name"),
            (5, "--service-name"),
            (6, "--secret-name"),
            (7, "--leader-election-id"),
        ] {
            let mut args = BESIDE.to_vec();
            args.remove(i);
            let e = serve(&args).unwrap_err();
            assert!(
                matches!(e, ConfigError::OpenKruiseName { .. }) && e.to_string().contains(flag),
                "{flag}: {e}"
            );
        }
        // The Lease is kruise-manager's only in its namespace, and only if we take one.
        let mut args = BESIDE.to_vec();
        args[7] = "--leader-election-namespace=elsewhere";
        assert_eq!(serve(&args).unwrap().leader_election.name, "kruise-manager");
        args[7] = "--enable-leader-election=false";
        assert!(serve(&args).is_ok());
        // Outside the mode OpenKruise's names are the defaults.
        assert!(serve(&["kw", "serve"]).is_ok());
    }

    #[test]
    fn feature_gates_this_version_does_not_implement_are_collected_for_a_warning() {
        let s = serve(&[
            "kw",
            "serve",
            "--feature-gates=PodWebhook=true,CloneSetShortHash=true,ImagePullJobGate=true,CloneSetShortHash=false",
        ])
        .unwrap();
        let gates: Vec<&str> = s.unimplemented_gates.iter().map(|(g, _)| *g).collect();
        assert_eq!(gates, ["CloneSetShortHash", "ImagePullJobGate"]);
        assert!(
            serve(&["kw", "serve"])
                .unwrap()
                .unimplemented_gates
                .is_empty()
        );
    }

    #[test]
    fn bad_values_are_errors_that_name_them() {
        let e = parse(&["kw", "serve", "--feature-gates", "Bogus=true"]).unwrap_err();
        assert!(e.to_string().contains("Bogus"));
        let e = parse(&["kw", "serve", "--metrics-addr", "nope"]).unwrap_err();
        assert!(e.to_string().contains("--metrics-addr"));
        assert!(
            parse(&[
                "kw",
                "serve",
                "--objects",
                "a",
                "--cert-mode",
                "self-managed"
            ])
            .is_err()
        );
    }
}
