//! The stand-in API server's RBAC (tests/common/apiserver.rs, `rbac`): requests resolve as the API server's
//! RequestInfo does, and the shipped rules (deploy/base/rbac.yaml) grant the calls the server makes, with the
//! API server's refusal text for those they do not.

mod common;

use common::apiserver::rbac::{RequestInfo, Rules};
use http::{Method, Uri};

fn info(method: Method, uri: &str) -> RequestInfo {
    RequestInfo::of(&method, &uri.parse::<Uri>().unwrap()).expect("a resource request")
}

fn allowed(rules: &Rules, method: Method, uri: &str) -> Result<(), String> {
    rules.authorize(&method, &uri.parse::<Uri>().unwrap())
}

#[test]
fn requests_resolve_as_the_api_servers_request_info() {
    let pod_status = info(Method::PATCH, "/api/v1/namespaces/shop/pods/web-0/status");
    assert_eq!(
        (
            pod_status.verb.as_str(),
            pod_status.group.as_str(),
            pod_status.resource.as_str(),
            pod_status.subresource.as_deref(),
            pod_status.namespace.as_deref(),
            pod_status.name.as_deref()
        ),
        (
            "patch",
            "",
            "pods",
            Some("status"),
            Some("shop"),
            Some("web-0")
        )
    );
    let watch = info(
        Method::GET,
        "/apis/apps.kruise.io/v1beta1/sidecarsets?watch=true&resourceVersion=5",
    );
    assert_eq!(
        (watch.verb.as_str(), watch.group.as_str()),
        ("watch", "apps.kruise.io")
    );
    assert_eq!(watch.namespace, None);
    let list = info(Method::GET, "/api/v1/pods?limit=500");
    assert_eq!(list.verb, "list");
    let named = info(
        Method::GET,
        "/api/v1/namespaces/kruise-system/secrets?fieldSelector=metadata.name%3Dkruise-webhook-certs&watch=true",
    );
    assert_eq!(named.name.as_deref(), Some("kruise-webhook-certs"));
    let namespace = info(Method::GET, "/api/v1/namespaces/shop");
    assert_eq!(
        (namespace.resource.as_str(), namespace.name.as_deref()),
        ("namespaces", Some("shop"))
    );
    assert!(RequestInfo::of(&Method::GET, &"/apis/apps/v1".parse().unwrap()).is_none());
    assert_eq!(
        info(Method::DELETE, "/api/v1/namespaces/shop/pods").verb,
        "deletecollection"
    );
}

#[test]
fn the_shipped_rules_grant_the_servers_calls() {
    let rules = Rules::shipped();
    for (method, uri) in [
        (Method::GET, "/api/v1/pods?limit=500"),
        (Method::GET, "/api/v1/pods?watch=true"),
        (Method::PATCH, "/api/v1/namespaces/shop/pods/web-0"),
        (Method::PUT, "/api/v1/namespaces/shop/pods/web-0"),
        (Method::PATCH, "/api/v1/namespaces/shop/pods/web-0/status"),
        (
            Method::PUT,
            "/apis/policy.kruise.io/v1beta1/namespaces/shop/podunavailablebudgets/pub/status",
        ),
        (
            Method::GET,
            "/apis/coordination.k8s.io/v1/namespaces/kruise-system/leases/kruise-manager",
        ),
        (
            Method::PUT,
            "/apis/coordination.k8s.io/v1/namespaces/kruise-system/leases/kruise-manager",
        ),
        (
            Method::POST,
            "/apis/coordination.k8s.io/v1/namespaces/kruise-system/leases",
        ),
        (
            Method::GET,
            "/api/v1/namespaces/kruise-system/secrets?fieldSelector=metadata.name%3Dkruise-webhook-certs",
        ),
        (Method::POST, "/api/v1/namespaces/shop/events"),
        (
            Method::GET,
            "/apis/apps/v1/namespaces/shop/deployments/web/scale",
        ),
    ] {
        assert_eq!(
            allowed(&rules, method.clone(), uri),
            Ok(()),
            "{method} {uri}"
        );
    }
}

#[test]
fn what_the_shipped_rules_do_not_grant_is_refused_with_the_api_servers_text() {
    let rules = Rules::shipped();
    // Any Secret but ours, and ours listed without naming it.
    assert_eq!(
        allowed(&rules, Method::GET, "/api/v1/namespaces/kruise-system/secrets/other"),
        Err("secrets \"other\" is forbidden: User \"system:serviceaccount:kruise-system:kruise-webhook\" cannot get resource \"secrets\" in API group \"\" in the namespace \"kruise-system\"".into())
    );
    assert!(
        allowed(
            &rules,
            Method::GET,
            "/api/v1/namespaces/kruise-system/secrets"
        )
        .is_err()
    );
    // Secrets outside kruise-system (the Role is bound there only).
    assert!(
        allowed(
            &rules,
            Method::GET,
            "/api/v1/namespaces/shop/secrets/kruise-webhook-certs"
        )
        .is_err()
    );
    assert_eq!(
        allowed(&rules, Method::DELETE, "/api/v1/nodes/node-1"),
        Err("nodes \"node-1\" is forbidden: User \"system:serviceaccount:kruise-system:kruise-webhook\" cannot delete resource \"nodes\" in API group \"\" at the cluster scope".into())
    );
    // A verb taken out of a rule is refused, and only that verb.
    let less = Rules::shipped().without("pods", "update");
    assert!(allowed(&less, Method::PUT, "/api/v1/namespaces/shop/pods/web-0").is_err());
    assert_eq!(
        allowed(&less, Method::PATCH, "/api/v1/namespaces/shop/pods/web-0"),
        Ok(())
    );
    assert_eq!(
        allowed(
            &less,
            Method::GET,
            "/api/v1/namespaces/shop/persistentvolumeclaims"
        ),
        Ok(())
    );
}
