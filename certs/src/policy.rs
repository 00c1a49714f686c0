//! What the certificates must look like and when they are renewed (DECISIONS 15).

use std::net::IpAddr;

use time::Duration;

/// How far every generated certificate is back-dated (`not_before = now - CLOCK_SKEW`), so that an
/// apiserver or replica whose clock is a little behind already accepts it. The rotation stages are
/// measured from `not_before + CLOCK_SKEW`, i.e. from the moment of issue.
pub const CLOCK_SKEW: Duration = Duration::minutes(1);

/// The names, lifetimes and timings the plan enforces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Subject CN of the serving certificate, e.g. `kruise-webhook-service.kruise-system.svc`.
    pub common_name: String,
    /// Names the serving certificate must cover; an entry that parses as an IP becomes an IP SAN.
    /// [`Policy::new`] always includes `localhost` (the readiness probe dials it) and the common name.
    pub dns_names: Vec<String>,
    /// Lifetime of a new CA (3650 days).
    pub ca_validity: Duration,
    /// Lifetime of a new serving certificate (365 days), capped at the CA's end.
    pub serving_validity: Duration,
    /// Renew a serving certificate this long before it expires (30 days). A CA is rotated once it has
    /// less than `serving_validity + renew_before` left, so it can always sign a full-length certificate;
    /// keep that sum well below `ca_validity`, or every new CA is due for rotation at once.
    pub renew_before: Duration,
    /// How long a change to the Secret takes to reach every replica and the apiserver's caBundle
    /// (5 minutes): a new CA sits in the bundle this long before a certificate it signed is served, and a
    /// new serving certificate exists this long before the previous CA leaves the bundle.
    pub propagation: Duration,
}

impl Policy {
    /// The defaults of DECISIONS 15 for `common_name`; SANs are `localhost`, `common_name` and
    /// `extra_dns_names`, first occurrence kept.
    pub fn new<S: Into<String>>(
        common_name: impl Into<String>,
        extra_dns_names: impl IntoIterator<Item = S>,
    ) -> Self {
        let common_name = common_name.into();
        let mut dns_names: Vec<String> = Vec::new();
        let candidates = ["localhost".to_owned(), common_name.clone()]
            .into_iter()
            .chain(extra_dns_names.into_iter().map(Into::into));
        for name in candidates {
            if !name.is_empty() && !dns_names.iter().any(|n| n.eq_ignore_ascii_case(&name)) {
                dns_names.push(name);
            }
        }
        Self {
            common_name,
            dns_names,
            ca_validity: Duration::days(3650),
            serving_validity: Duration::days(365),
            renew_before: Duration::days(30),
            propagation: Duration::minutes(5),
        }
    }

    /// The policy names that `dns_names` and `ip_addresses` (a certificate's SANs) do not cover.
    pub(crate) fn uncovered_names(
        &self,
        dns_names: &[String],
        ip_addresses: &[IpAddr],
    ) -> Vec<&str> {
        self.dns_names
            .iter()
            .filter(|name| match name.parse::<IpAddr>() {
                Ok(ip) => !ip_addresses.contains(&ip),
                Err(_) => !dns_names.iter().any(|d| d.eq_ignore_ascii_case(name)),
            })
            .map(String::as_str)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_policy_has_localhost_the_common_name_and_extras_once() {
        let policy = Policy::new(
            "svc.ns.svc",
            ["svc", "svc.ns", "LOCALHOST", "svc.ns.svc", "10.0.0.5"],
        );
        assert_eq!(
            policy.dns_names,
            ["localhost", "svc.ns.svc", "svc", "svc.ns", "10.0.0.5"]
        );
        assert_eq!(policy.ca_validity, Duration::days(3650));
        assert_eq!(policy.serving_validity, Duration::days(365));
        assert_eq!(policy.renew_before, Duration::days(30));
        assert_eq!(policy.propagation, Duration::minutes(5));
    }

    #[test]
    fn ip_names_are_covered_only_by_ip_sans() {
        let policy = Policy::new("10.0.0.5", Vec::<String>::new());
        let dns_only = ["localhost".to_owned(), "10.0.0.5".to_owned()];
        assert_eq!(policy.uncovered_names(&dns_only, &[]), ["10.0.0.5"]);
        let ip: IpAddr = "10.0.0.5".parse().unwrap();
        assert!(policy.uncovered_names(&dns_only[..1], &[ip]).is_empty());
    }
}
