//! The patch metadata the merge follows ([`Schema`], [`Field`]): the Pod's ([`POD`], the table in the
//! documentation of [`super`]), and how a field's is looked up as Go's `LookupPatchMetadataForStruct` and
//! `LookupPatchMetadataForSlice` do.

use super::error::{SmpError, merge_error};

/// A field's patch metadata, and for objects the fields below that have some.
#[derive(Clone, Copy, Debug)]
pub enum Field {
    /// A Go struct; its fields not listed carry no strategy.
    Object(&'static [(&'static str, Field)]),
    /// A Go map (`map[string]string`, `ResourceList`): merged key by key, holding no objects or lists.
    Map,
    /// A list of objects with `patchStrategy:"merge" patchMergeKey:"<key>"`; its elements' fields.
    MergeByKey(&'static str, &'static [(&'static str, Field)]),
    /// A list of scalars with `patchStrategy:"merge"`.
    MergeScalars,
    /// A list without a patch strategy: replaced whole.
    Atomic,
}

/// The schema of one object level: where a lookup of a field name happens.
#[derive(Clone, Copy, Debug)]
pub enum Schema {
    /// A Go struct with these notable fields.
    Struct(&'static [(&'static str, Field)]),
    /// A Go type that is not a struct (its `reflect.Kind` name): objects or lists under it are an error,
    /// as Go's `LookupPatchMetadataForStruct` says.
    NotStruct(&'static str),
    /// No schema: objects merge, lists are replaced.
    Plain,
}

/// The Pod's patch metadata: see the table in the documentation of [`super`].
pub const POD: Schema = Schema::Struct(POD_FIELDS);

const POD_FIELDS: &[(&str, Field)] = &[
    ("metadata", Field::Object(OBJECT_META)),
    ("spec", Field::Object(POD_SPEC)),
    ("status", Field::Object(POD_STATUS)),
];

const OBJECT_META: &[(&str, Field)] = &[
    ("annotations", Field::Map),
    ("finalizers", Field::MergeScalars),
    ("labels", Field::Map),
    ("managedFields", Field::Atomic),
    ("ownerReferences", Field::MergeByKey("uid", &[])),
];

const POD_SPEC: &[(&str, Field)] = &[
    ("affinity", Field::Object(AFFINITY)),
    ("containers", Field::MergeByKey("name", CONTAINER)),
    ("dnsConfig", Field::Object(DNS_CONFIG)),
    ("ephemeralContainers", Field::MergeByKey("name", CONTAINER)),
    ("hostAliases", Field::MergeByKey("ip", &[])),
    ("imagePullSecrets", Field::MergeByKey("name", &[])),
    ("initContainers", Field::MergeByKey("name", CONTAINER)),
    ("nodeSelector", Field::Map),
    ("overhead", Field::Map),
    ("readinessGates", Field::Atomic),
    ("resourceClaims", Field::MergeByKey("name", &[])),
    ("schedulingGates", Field::MergeByKey("name", &[])),
    ("securityContext", Field::Object(POD_SECURITY_CONTEXT)),
    ("tolerations", Field::Atomic),
    (
        "topologySpreadConstraints",
        Field::MergeByKey("topologyKey", &[]),
    ),
    ("volumes", Field::MergeByKey("name", &[])),
];

const CONTAINER: &[(&str, Field)] = &[
    ("args", Field::Atomic),
    ("command", Field::Atomic),
    ("env", Field::MergeByKey("name", &[])),
    ("envFrom", Field::Atomic),
    ("ports", Field::MergeByKey("containerPort", &[])),
    ("resizePolicy", Field::Atomic),
    ("resources", Field::Object(RESOURCES)),
    ("volumeDevices", Field::MergeByKey("devicePath", &[])),
    ("volumeMounts", Field::MergeByKey("mountPath", &[])),
];

const RESOURCES: &[(&str, Field)] = &[
    ("claims", Field::Atomic),
    ("limits", Field::Map),
    ("requests", Field::Map),
];

const AFFINITY: &[(&str, Field)] = &[
    ("nodeAffinity", Field::Object(NODE_AFFINITY)),
    ("podAffinity", Field::Object(POD_AFFINITY)),
    ("podAntiAffinity", Field::Object(POD_AFFINITY)),
];

const NODE_AFFINITY: &[(&str, Field)] = &[
    (
        "preferredDuringSchedulingIgnoredDuringExecution",
        Field::Atomic,
    ),
    (
        "requiredDuringSchedulingIgnoredDuringExecution",
        Field::Object(&[("nodeSelectorTerms", Field::Atomic)]),
    ),
];

const POD_AFFINITY: &[(&str, Field)] = &[
    (
        "preferredDuringSchedulingIgnoredDuringExecution",
        Field::Atomic,
    ),
    (
        "requiredDuringSchedulingIgnoredDuringExecution",
        Field::Atomic,
    ),
];

const POD_SECURITY_CONTEXT: &[(&str, Field)] = &[
    ("supplementalGroups", Field::Atomic),
    ("sysctls", Field::Atomic),
];

const DNS_CONFIG: &[(&str, Field)] = &[
    ("nameservers", Field::Atomic),
    ("options", Field::Atomic),
    ("searches", Field::Atomic),
];

const POD_STATUS: &[(&str, Field)] = &[
    ("conditions", Field::MergeByKey("type", &[])),
    ("containerStatuses", Field::Atomic),
    ("ephemeralContainerStatuses", Field::Atomic),
    ("hostIPs", Field::MergeByKey("ip", &[])),
    ("initContainerStatuses", Field::Atomic),
    ("podIPs", Field::MergeByKey("ip", &[])),
    ("resourceClaimStatuses", Field::MergeByKey("name", &[])),
];

/// A list field's patch metadata as `mergeSliceHandler` uses it.
pub(super) struct ListMeta {
    /// The elements' schema.
    pub(super) elements: Schema,
    /// `patchStrategy` is `merge`.
    pub(super) merge: bool,
    /// `patchMergeKey`, empty when none.
    pub(super) key: &'static str,
}

impl Schema {
    fn field(fields: &'static [(&'static str, Field)], name: &str) -> Option<Field> {
        fields.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
    }

    fn not_struct(kind: &str) -> SmpError {
        merge_error(format!(
            "merging an object in json but data type is not struct, instead is: {kind}"
        ))
    }

    /// `LookupPatchMetadataForStruct`: the schema below an object field both sides hold as objects.
    pub(super) fn object(self, name: &str) -> Result<Schema, SmpError> {
        match self {
            Schema::Struct(fields) => Ok(match Schema::field(fields, name) {
                Some(Field::Object(fields)) => Schema::Struct(fields),
                Some(Field::Map) => Schema::NotStruct("map"),
                Some(Field::MergeByKey(..) | Field::MergeScalars | Field::Atomic) => {
                    Schema::NotStruct("slice")
                }
                None => Schema::Plain,
            }),
            Schema::NotStruct(kind) => Err(Schema::not_struct(kind)),
            Schema::Plain => Ok(Schema::Plain),
        }
    }

    /// `LookupPatchMetadataForSlice`: the metadata of a list field both sides hold as lists.
    pub(super) fn list(self, name: &str) -> Result<ListMeta, SmpError> {
        let plain = ListMeta {
            elements: Schema::Plain,
            merge: false,
            key: "",
        };
        match self {
            Schema::Struct(fields) => match Schema::field(fields, name) {
                Some(Field::MergeByKey(key, fields)) => Ok(ListMeta {
                    elements: Schema::Struct(fields),
                    merge: true,
                    key,
                }),
                Some(Field::MergeScalars) => Ok(ListMeta {
                    elements: Schema::NotStruct("string"),
                    merge: true,
                    key: "",
                }),
                Some(Field::Atomic) | None => Ok(plain),
                Some(Field::Object(_) | Field::Map) => {
                    Err(merge_error("expected slice or array type, but got: struct"))
                }
            },
            Schema::NotStruct(kind) => Err(Schema::not_struct(kind)),
            Schema::Plain => Ok(plain),
        }
    }
}
