//! The WorkloadSpreads of a namespace, read live for the WorkloadSpread validator's conflict check
//! (spec/workloadspread.md §7.1): a paged LIST at the served version (DECISIONS 25), each page bounded in time. No
//! informer is kept for them: WorkloadSpread writes are rare, and OpenKruise lists too. The PersistentPodState
//! validator lists the same way ([`list`] is of any Kruise kind; docs/persistentpodstate.md §2.3).

use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use kube::api::{Api, ListParams};
use kube::core::{ApiResource, DynamicObject};
use serde::Deserialize;
use serde_json::Value;

use kruise_webhooks::api::workloadspread::WorkloadSpread;
use kruise_webhooks::conversion::convert_object;

/// The version WorkloadSpreads are listed and validated at (the CRD's storage version, the hub).
pub const API_VERSION: &str = "apps.kruise.io/v1beta1";

/// A WorkloadSpread object as the v1beta1 type, converting one of another version first.
///
/// # Errors
/// Why the object does not convert or decode.
pub fn decode(value: &Value) -> Result<Arc<WorkloadSpread>, String> {
    let converted;
    let hub = if value.get("apiVersion").and_then(Value::as_str) == Some(API_VERSION) {
        value
    } else {
        converted = convert_object(value, API_VERSION).map_err(|e| e.to_string())?;
        &converted
    };
    WorkloadSpread::deserialize(hub)
        .map(Arc::new)
        .map_err(|e| e.to_string())
}

/// Every object of a Kruise kind `K` (a WorkloadSpread, a PersistentPodState) in `namespace` at the served
/// `resource` (DECISIONS 25), 500 per page, each page within `timeout`; objects of another version than `K`'s
/// are converted.
///
/// # Errors
/// The API error (or the timeout) as text, or why an item does not decode.
pub async fn list<K>(
    client: &Client,
    resource: &ApiResource,
    namespace: &str,
    timeout: Duration,
) -> Result<Vec<Arc<K>>, String>
where
    K: kube::Resource<DynamicType = ()> + serde::de::DeserializeOwned,
{
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, resource);
    let mut all = Vec::new();
    let mut params = ListParams::default().limit(500);
    loop {
        let page = tokio::time::timeout(timeout, api.list(&params))
            .await
            .map_err(|_| format!("timed out after {}s", timeout.as_secs()))?
            .map_err(|e| e.to_string())?;
        for item in page.items {
            let value = serde_json::to_value(item).map_err(|e| e.to_string())?;
            // Items of a list may come without their own apiVersion and kind: those of the resource listed.
            all.push(Arc::new(super::versions::decode::<K>(value, resource)?));
        }
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(all),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::versions::{KruiseKind, Version};
    use http::{Request, Response, StatusCode};
    use kube::client::Body;
    use serde_json::json;

    type Handle = tower_test::mock::Handle<Request<Body>, Response<Body>>;

    fn beta() -> ApiResource {
        KruiseKind::WorkloadSpread.api_resource(Version::V1beta1)
    }

    async fn answer(handle: &mut Handle, want_query: &str, status: StatusCode, body: Value) {
        answer_at(handle, "v1beta1", want_query, status, body).await;
    }

    async fn answer_at(
        handle: &mut Handle,
        version: &str,
        want_query: &str,
        status: StatusCode,
        body: Value,
    ) {
        let (request, send) = handle.next_request().await.expect("a request");
        assert_eq!(
            request.uri().path(),
            format!("/apis/apps.kruise.io/{version}/namespaces/ns/workloadspreads")
        );
        let query = request.uri().query().unwrap_or("");
        assert!(query.contains(want_query), "{query}");
        send.send_response(
            Response::builder()
                .status(status)
                .body(Body::from(serde_json::to_vec(&body).unwrap()))
                .unwrap(),
        );
    }

    fn item(name: &str, target: &str) -> Value {
        json!({"metadata": {"name": name, "namespace": "ns"},
               "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
                        "subsets": [{"name": "a", "requiredNodeSelector": {}}]}})
    }

    #[tokio::test(flavor = "current_thread")]
    async fn lists_every_page_at_v1beta1() {
        let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
        let client = Client::new(service, "default");
        let resource = beta();
        let server = async {
            answer(
                &mut handle,
                "limit=500",
                StatusCode::OK,
                json!({
                "apiVersion": "apps.kruise.io/v1beta1", "kind": "WorkloadSpreadList",
                "metadata": {"continue": "next"}, "items": [item("ws-a", "web")]}),
            )
            .await;
            answer(
                &mut handle,
                "continue=next",
                StatusCode::OK,
                json!({
                "apiVersion": "apps.kruise.io/v1beta1", "kind": "WorkloadSpreadList",
                "metadata": {}, "items": [item("ws-b", "api")]}),
            )
            .await;
        };
        let (listed, ()) = tokio::join!(
            list::<WorkloadSpread>(&client, &resource, "ns", Duration::from_secs(5)),
            server
        );
        let listed = listed.unwrap();
        let names: Vec<(&str, &str)> = listed
            .iter()
            .map(|w| {
                (
                    w.metadata.name.as_deref().unwrap(),
                    w.spec.target_ref.as_ref().unwrap().name.as_str(),
                )
            })
            .collect();
        assert_eq!(names, [("ws-a", "web"), ("ws-b", "api")]);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_list_error_is_its_text() {
        let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
        let client = Client::new(service, "default");
        let forbidden = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "reason": "Forbidden", "code": 403,
            "message": "workloadspreads.apps.kruise.io is forbidden: User \"x\" cannot list resource"});
        let server = answer(&mut handle, "limit=500", StatusCode::FORBIDDEN, forbidden);
        let resource = beta();
        let (listed, ()) = tokio::join!(
            list::<WorkloadSpread>(&client, &resource, "ns", Duration::from_secs(5)),
            server
        );
        let err = listed.unwrap_err();
        assert!(err.contains("cannot list resource"), "{err}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn lists_at_v1alpha1_where_only_that_is_served() {
        let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
        let client = Client::new(service, "default");
        // Items without apiVersion: they are of the version listed, and converted from it.
        let server = answer_at(
            &mut handle,
            "v1alpha1",
            "limit=500",
            StatusCode::OK,
            json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpreadList",
                "metadata": {}, "items": [{"metadata": {"name": "ws", "namespace": "ns"},
                "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                    "subsets": [{"name": "a", "requiredNodeSelectorTerm":
                        {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}}]}}]}),
        );
        let alpha = KruiseKind::WorkloadSpread.api_resource(Version::V1alpha1);
        let (listed, ()) = tokio::join!(
            list::<WorkloadSpread>(&client, &alpha, "ns", Duration::from_secs(5)),
            server
        );
        let listed = listed.unwrap();
        assert!(listed[0].spec.subsets[0].required_node_selector.is_some());
    }

    #[test]
    fn v1alpha1_objects_are_converted() {
        let alpha = json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
            "metadata": {"name": "ws"},
            "spec": {"subsets": [{"name": "a", "requiredNodeSelectorTerm": {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}}]}});
        let ws = decode(&alpha).unwrap();
        assert!(ws.spec.subsets[0].required_node_selector.is_some());
        assert!(decode(&json!({"apiVersion": "apps.kruise.io/v1beta1", "spec": 3})).is_err());
    }
}
