//! Kubernetes Events as OpenKruise's controllers record them: client-go's recorder writes core/v1 Events
//! (`source.component` = the recorder's name, `reportingComponent` the same), named
//! `<object>.<nanoseconds in hex>`, in the object's namespace. Recording never fails the caller: an event
//! that cannot be written is logged and dropped, as client-go does. Repeats are not aggregated into a count
//! (client-go's correlator does that); each is its own Event.

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, PostParams};

/// `Normal` or `Warning`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// Information.
    Normal,
    /// Something to look at.
    Warning,
}

impl EventType {
    fn as_str(self) -> &'static str {
        match self {
            Self::Normal => "Normal",
            Self::Warning => "Warning",
        }
    }
}

/// Records events as one component.
#[derive(Clone)]
pub struct Recorder {
    client: Client,
    component: &'static str,
}

impl Recorder {
    /// A recorder for `component` (OpenKruise's recorder name, e.g. `podunavailablebudget-controller`).
    pub fn new(client: Client, component: &'static str) -> Self {
        Self { client, component }
    }

    /// Records an event about `regarding` (logged and dropped when it cannot be written).
    pub async fn record(
        &self,
        regarding: ObjectReference,
        type_: EventType,
        reason: &str,
        message: &str,
    ) {
        let now = Timestamp::now();
        let name = format!(
            "{}.{:x}",
            regarding.name.as_deref().unwrap_or(""),
            now.as_nanosecond()
        );
        let (api, event) = self.event(name, now, regarding, type_, reason, message);
        if let Err(error) = api.create(&PostParams::default(), &event).await {
            tracing::warn!(%error, reason, component = self.component, "recording an event failed");
        }
    }

    /// Records an event named `name`, once: `Ok(true)` when written, `Ok(false)` when an event of that name
    /// exists already (recorded before, by this replica or another), so that a report made again after a
    /// restart or by a new leader records nothing.
    ///
    /// # Errors
    /// The API server's error, other than AlreadyExists.
    pub async fn record_once(
        &self,
        name: String,
        regarding: ObjectReference,
        type_: EventType,
        reason: &str,
        message: &str,
    ) -> Result<bool, kube::Error> {
        let (api, event) = self.event(name, Timestamp::now(), regarding, type_, reason, message);
        match api.create(&PostParams::default(), &event).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The event and the API of its namespace (the object's, `default` for a cluster-scoped one).
    fn event(
        &self,
        name: String,
        now: Timestamp,
        regarding: ObjectReference,
        type_: EventType,
        reason: &str,
        message: &str,
    ) -> (Api<Event>, Event) {
        let namespace = regarding
            .namespace
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "default".into());
        let event = Event {
            metadata: ObjectMeta {
                name: Some(name),
                namespace: Some(namespace.clone()),
                ..ObjectMeta::default()
            },
            involved_object: regarding,
            reason: Some(reason.to_owned()),
            message: Some(message.to_owned()),
            source: Some(EventSource {
                component: Some(self.component.to_owned()),
                host: None,
            }),
            first_timestamp: Some(Time(now)),
            last_timestamp: Some(Time(now)),
            count: Some(1),
            type_: Some(type_.as_str().to_owned()),
            reporting_component: Some(self.component.to_owned()),
            reporting_instance: Some(String::new()),
            ..Event::default()
        };
        (Api::namespaced(self.client.clone(), &namespace), event)
    }
}
