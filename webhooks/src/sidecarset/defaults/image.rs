//! The default `imagePullPolicy` (spec/sidecarset.md §7.1): Kubernetes' `SetDefaults_Container` parses the
//! image with `parsers.ParseImageName` (distribution/reference `ParseNormalizedNamed`) and picks `Always` when
//! the tag is `latest`, or when there is neither tag nor digest; otherwise, including when the reference does
//! not parse, `IfNotPresent`.

/// `Always`.
pub const PULL_ALWAYS: &str = "Always";
/// `IfNotPresent`.
pub const PULL_IF_NOT_PRESENT: &str = "IfNotPresent";

/// The `imagePullPolicy` Kubernetes defaults an empty one to, for `image`.
pub fn default_pull_policy(image: &str) -> &'static str {
    if parse_normalized(image, |r| {
        r.tag == Some("latest") || (r.tag.is_none() && r.digest.is_none())
    }) == Some(true)
    {
        PULL_ALWAYS
    } else {
        PULL_IF_NOT_PRESENT
    }
}

/// The tag and digest of a valid reference.
#[derive(Debug, PartialEq, Eq)]
struct Reference<'a> {
    tag: Option<&'a str>,
    digest: Option<&'a str>,
}

/// `reference.ParseNormalizedNamed`, then `judge` on the parsed tag and digest; `None` where Go errors.
fn parse_normalized<T>(image: &str, judge: impl FnOnce(&Reference<'_>) -> T) -> Option<T> {
    // anchoredIdentifierRegexp: a bare 64-hex image ID is refused.
    if image.len() == 64
        && image
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return None;
    }
    // splitDockerDomain.
    let (domain, mut remainder) = match image.split_once('/') {
        Some((first, rest))
            if first.contains(['.', ':'])
                || first == "localhost"
                || first.to_lowercase() != first =>
        {
            (first, rest.to_owned())
        }
        _ => ("docker.io", image.to_owned()),
    };
    let domain = if domain == "index.docker.io" {
        "docker.io"
    } else {
        domain
    };
    if domain == "docker.io" && !remainder.contains('/') {
        remainder = format!("library/{remainder}");
    }
    let remote_name = remainder.split(':').next().unwrap_or("");
    if remote_name.to_lowercase() != remote_name {
        return None;
    }
    let full = format!("{domain}/{remainder}");
    parse(&full).map(|r| judge(&r))
}

/// `reference.Parse`: `name[:tag][@digest]`, validated as ReferenceRegexp and digest.Parse do.
fn parse(s: &str) -> Option<Reference<'_>> {
    let (rest, digest) = match s.split_once('@') {
        Some((rest, digest)) => (rest, Some(digest)),
        None => (s, None),
    };
    // A ':' after the last '/' can only separate a tag: name components never contain ':'.
    let (name, tag) = match rest.rfind(':') {
        Some(i) if !rest[i + 1..].contains('/') => (&rest[..i], Some(&rest[i + 1..])),
        _ => (rest, None),
    };
    if name.is_empty() || name.len() > 255 || !is_name(name) {
        return None;
    }
    if tag.is_some_and(|t| !is_tag(t)) || digest.is_some_and(|d| !is_digest(d)) {
        return None;
    }
    Some(Reference { tag, digest })
}

/// `(domainAndPort '/')? pathComponent ('/' pathComponent)*`.
fn is_name(name: &str) -> bool {
    let mut parts = name.split('/');
    let first = parts.next().unwrap_or("");
    let rest: Vec<&str> = parts.collect();
    if rest.is_empty() {
        return is_path_component(first);
    }
    (is_path_component(first) || is_domain_and_port(first))
        && rest.iter().all(|p| is_path_component(p))
}

/// `[a-z0-9]+ ((?:[._]|__|[-]+) [a-z0-9]+)*`.
fn is_path_component(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let mut i = 0;
    loop {
        let start = i;
        while i < b.len() && alnum(b[i]) {
            i += 1;
        }
        if i == start {
            return false;
        }
        if i == b.len() {
            return true;
        }
        match b[i] {
            b'.' => i += 1,
            b'_' if b.get(i + 1) == Some(&b'_') => i += 2,
            b'_' => i += 1,
            b'-' => {
                while i < b.len() && b[i] == b'-' {
                    i += 1;
                }
            }
            _ => return false,
        }
    }
}

/// `host (':' [0-9]+)?` with host a domain name or a bracketed IPv6 address.
fn is_domain_and_port(s: &str) -> bool {
    let (host, port) = if let Some(inner) = s.strip_prefix('[') {
        let Some(close) = inner.find(']') else {
            return false;
        };
        let addr = &inner[..close];
        if addr.is_empty() || !addr.bytes().all(|c| c.is_ascii_hexdigit() || c == b':') {
            return false;
        }
        match &inner[close + 1..] {
            "" => return true,
            after => (None, after.strip_prefix(':')),
        }
    } else {
        match s.split_once(':') {
            Some((host, port)) => (Some(host), Some(port)),
            None => (Some(s), None),
        }
    };
    if let Some(host) = host {
        let component_ok = |c: &str| {
            let b = c.as_bytes();
            !b.is_empty()
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter().all(|&x| x.is_ascii_alphanumeric() || x == b'-')
        };
        if !host.split('.').all(component_ok) {
            return false;
        }
    }
    match port {
        None => host.is_some(),
        Some(p) => !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit()),
    }
}

/// `[\w][\w.-]{0,127}`.
fn is_tag(t: &str) -> bool {
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let b = t.as_bytes();
    !b.is_empty()
        && b.len() <= 128
        && word(b[0])
        && b[1..].iter().all(|&c| word(c) || c == b'.' || c == b'-')
}

/// A digest `digest.Parse` accepts: a registered algorithm and its lowercase hex encoding.
fn is_digest(d: &str) -> bool {
    let Some((algorithm, encoded)) = d.split_once(':') else {
        return false;
    };
    let len = match algorithm {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        _ => return false,
    };
    encoded.len() == len
        && encoded
            .bytes()
            .all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    #[test]
    fn latest_or_no_tag_pulls_always() {
        for image in [
            "nginx",
            "nginx:latest",
            "library/nginx",
            "docker.io/library/nginx:latest",
            "index.docker.io/nginx",
            "host:5000/img",
            "registry.example.com:5000/team/img",
            "localhost/img",
            "localhost:5000/img:latest",
            "[::1]:5000/img",
            "my-registry/a__b/c--d/e.f",
            &format!("img:latest@{SHA}"),
        ] {
            assert_eq!(default_pull_policy(image), PULL_ALWAYS, "{image}");
        }
    }

    #[test]
    fn a_tag_or_a_digest_pulls_if_not_present() {
        for image in [
            "dns:1.0",
            "nginx:1.25-alpine",
            "host:5000/img:v1",
            "[::1]:5000/img:V_1.0",
            &format!("img@{SHA}"),
            &format!("host:5000/img@{SHA}"),
        ] {
            assert_eq!(default_pull_policy(image), PULL_IF_NOT_PRESENT, "{image}");
        }
    }

    #[test]
    fn references_go_cannot_parse_pull_if_not_present() {
        for image in [
            "",
            "Nginx",
            "host:5000/Img",
            "img:",
            "img:-bad",
            "img@sha256:abc",
            "img@md5:d41d8cd98f00b204e9800998ecf8427e",
            "a..b",
            "a___b",
            "-img",
            "img/",
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        ] {
            assert_eq!(default_pull_policy(image), PULL_IF_NOT_PRESENT, "{image:?}");
        }
        assert_eq!(
            default_pull_policy(&format!("a{}", "/b".repeat(130))),
            PULL_IF_NOT_PRESENT
        );
    }
}
