//! What a failed API call says, as every controller and the runtime ([`super::runtime`]) read it: its
//! HTTP code ([`is_code`]), whether it is an admission webhook's refusal rather than RBAC's
//! ([`is_admission_denial`]), and the text and reason label a failed reconcile is reported with
//! ([`failure_text`], [`failure_reason`]). Below the controllers and the runtime, so that none of them
//! imports the module that starts them.

/// The API server answered `e` with HTTP status `code` (every reconciler tells a conflict or a missing
/// object from a failure with it).
pub(crate) fn is_code(e: &kube::Error, code: u16) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == code)
}

/// Whether `e` is an admission webhook's refusal: the API server's text for one begins `admission webhook
/// "<name>" denied the request`. A 403 is not always one: RBAC answers 403 too (`pods "x" is forbidden: User
/// ... cannot update resource ...`), and that is an error to report, never a refusal to wait out.
pub(crate) fn is_admission_denial(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.message.starts_with("admission webhook \"")
        && s.message.contains("denied the request"))
}

/// The API server's answer in `e`'s chain of causes, when it answered.
pub(crate) fn api_status<'e>(
    e: &'e (dyn std::error::Error + 'static),
) -> Option<&'e kube::core::Status> {
    let mut current = Some(e);
    while let Some(error) = current {
        if let Some(kube::Error::Api(status)) = error.downcast_ref::<kube::Error>() {
            return Some(status);
        }
        current = error.source();
    }
    None
}

/// `e` as a log line or an event says it: its text, with the API server's answer, when there is one, as
/// `<message> (<reason> <code>)` instead of the client's dump of the whole Status.
pub(crate) fn failure_text(e: &(dyn std::error::Error + 'static)) -> String {
    let text = e.to_string();
    let mut current = Some(e);
    while let Some(error) = current {
        if let Some(client @ kube::Error::Api(status)) = error.downcast_ref::<kube::Error>() {
            let concise = format!("{} ({} {})", status.message, status.reason, status.code);
            return text.replace(&client.to_string(), &concise);
        }
        current = error.source();
    }
    text
}

/// The reason label of a failure: the API server's reason (`Forbidden`, `Conflict`, `NotFound`, ...) when it
/// answered, `Unreachable` when the client could not reach it, else `Other`.
pub(crate) fn failure_reason(e: &(dyn std::error::Error + 'static)) -> String {
    if let Some(status) = api_status(e) {
        return if status.reason.is_empty() {
            status.code.to_string()
        } else {
            status.reason.clone()
        };
    }
    let mut current = Some(e);
    while let Some(error) = current {
        if error.downcast_ref::<kube::Error>().is_some() {
            return "Unreachable".to_owned();
        }
        current = error.source();
    }
    "Other".to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(message: &str, reason: &str, code: u16) -> kube::Error {
        kube::Error::Api(Box::new(
            kube::core::Status::failure(message, reason).with_code(code),
        ))
    }

    #[test]
    fn a_403_is_a_webhook_refusal_only_when_the_api_server_says_a_webhook_denied_it() {
        let denied = api(
            "admission webhook \"vpod.kb.io\" denied the request: pub unavailable allowed is 0",
            "Forbidden",
            403,
        );
        assert!(is_admission_denial(&denied));
        let rbac = api(
            "pods \"web-0\" is forbidden: User \"system:serviceaccount:kruise-system:kruise-webhook\" cannot update resource \"pods\" in API group \"\" in the namespace \"shop\"",
            "Forbidden",
            403,
        );
        assert!(is_code(&rbac, 403));
        assert!(!is_admission_denial(&rbac));
    }

    #[derive(Debug, thiserror::Error)]
    #[error("updating pod shop/web-0: {source}")]
    struct Wrapped {
        #[source]
        source: kube::Error,
    }

    #[test]
    fn a_failure_says_the_api_servers_message_reason_and_code_without_the_status_dump() {
        let e = Wrapped {
            source: api("pods \"web-0\" is forbidden", "Forbidden", 403),
        };
        assert_eq!(
            failure_text(&e),
            "updating pod shop/web-0: pods \"web-0\" is forbidden (Forbidden 403)"
        );
        assert_eq!(failure_reason(&e), "Forbidden");
        let conflict = Wrapped {
            source: api("the object has been modified", "", 409),
        };
        assert_eq!(failure_reason(&conflict), "409");
        let other = std::io::Error::other("disk full");
        assert_eq!(failure_text(&other), "disk full");
        assert_eq!(failure_reason(&other), "Other");
    }
}
