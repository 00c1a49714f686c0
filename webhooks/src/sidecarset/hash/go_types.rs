//! The Go types behind `[]SidecarContainer`, as tables the encoder walks (spec/sidecarset.md §7.2).
//!
//! Sources, read field by field: k8s.io/api `core/v1/types.go` as of v0.32 (`Container` and every type it
//! reaches) and openkruise/kruise `apis/apps/v1beta1/sidecarset_types.go` (`SidecarContainer` and its
//! types). Fields are listed in Go declaration order; embedded structs (`LocalObjectReference`,
//! `ProbeHandler`, `corev1.Container` in `SidecarContainer`) are flattened where Go promotes them.
//!
//! Fields newer than k8s.io/api v0.32 are deliberately absent, so Go v0.32 would not encode them and neither
//! do we: `Container.restartPolicyRules` (1.34), `Lifecycle.stopSignal` (1.33), `EnvVarSource.fileKeyRef`
//! (1.34).

/// A Go field type, as far as JSON encoding cares.
#[derive(Debug)]
pub(super) enum Ty {
    /// `string` and string-based types (`PullPolicy`, `Protocol`, …).
    Str,
    /// `int32`.
    I32,
    /// `int64`.
    I64,
    /// `bool`.
    Bool,
    /// `resource.Quantity` (a struct with its own `MarshalJSON`: never omitted).
    Quantity,
    /// `intstr.IntOrString` (a struct with its own `MarshalJSON`: never omitted).
    IntOrString,
    /// `[]string` and slices of string-based types.
    StrSlice,
    /// `ResourceList` (`map[ResourceName]resource.Quantity`).
    ResourceList,
    /// `[]T`.
    Slice(&'static Ty),
    /// A struct.
    Struct(&'static Struct),
}

/// A Go struct: its type name (for decode errors) and its JSON fields in declaration order.
#[derive(Debug)]
pub(super) struct Struct {
    pub(super) go_name: &'static str,
    pub(super) fields: &'static [Field],
}

/// How the `json` tag and the Go kind decide whether a field is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum How {
    /// A value without `omitempty`: always written, its zero value when absent.
    Value,
    /// A value with `omitempty`: omitted when `""`, `0`, `false` or an empty slice or map. Structs (and
    /// `Quantity`, `IntOrString`) are never empty for Go, so they are always written.
    OmitEmpty,
    /// A pointer with `omitempty`: omitted only when nil (absent or `null`); `false`, `0`, `""` are written.
    Ptr,
    /// A pointer without `omitempty`: `null` when nil.
    PtrAlways,
}

/// One JSON field.
#[derive(Debug)]
pub(super) struct Field {
    pub(super) json: &'static str,
    pub(super) ty: Ty,
    pub(super) how: How,
}

const fn f(json: &'static str, ty: Ty, how: How) -> Field {
    Field { json, ty, how }
}

use How::{OmitEmpty, Ptr, PtrAlways, Value};
use Ty::{Bool, I32, I64, IntOrString, Quantity, ResourceList, Slice, Str, StrSlice};

const fn st(s: &'static Struct) -> Ty {
    Ty::Struct(s)
}

pub(super) static OBJECT_FIELD_SELECTOR: Struct = Struct {
    go_name: "ObjectFieldSelector",
    fields: &[f("apiVersion", Str, OmitEmpty), f("fieldPath", Str, Value)],
};

static RESOURCE_FIELD_SELECTOR: Struct = Struct {
    go_name: "ResourceFieldSelector",
    fields: &[
        f("containerName", Str, OmitEmpty),
        f("resource", Str, Value),
        // `omitempty` on a struct does nothing: an unset divisor is written as "0".
        f("divisor", Quantity, OmitEmpty),
    ],
};

static CONFIG_MAP_KEY_SELECTOR: Struct = Struct {
    go_name: "ConfigMapKeySelector",
    fields: &[
        f("name", Str, OmitEmpty), // LocalObjectReference, inline
        f("key", Str, Value),
        f("optional", Bool, Ptr),
    ],
};

static SECRET_KEY_SELECTOR: Struct = Struct {
    go_name: "SecretKeySelector",
    fields: &[
        f("name", Str, OmitEmpty), // LocalObjectReference, inline
        f("key", Str, Value),
        f("optional", Bool, Ptr),
    ],
};

static ENV_VAR_SOURCE: Struct = Struct {
    go_name: "EnvVarSource",
    fields: &[
        f("fieldRef", st(&OBJECT_FIELD_SELECTOR), Ptr),
        f("resourceFieldRef", st(&RESOURCE_FIELD_SELECTOR), Ptr),
        f("configMapKeyRef", st(&CONFIG_MAP_KEY_SELECTOR), Ptr),
        f("secretKeyRef", st(&SECRET_KEY_SELECTOR), Ptr),
    ],
};

static ENV_VAR: Struct = Struct {
    go_name: "EnvVar",
    fields: &[
        f("name", Str, Value),
        f("value", Str, OmitEmpty),
        f("valueFrom", st(&ENV_VAR_SOURCE), Ptr),
    ],
};

static CONFIG_MAP_ENV_SOURCE: Struct = Struct {
    go_name: "ConfigMapEnvSource",
    fields: &[f("name", Str, OmitEmpty), f("optional", Bool, Ptr)],
};

static SECRET_ENV_SOURCE: Struct = Struct {
    go_name: "SecretEnvSource",
    fields: &[f("name", Str, OmitEmpty), f("optional", Bool, Ptr)],
};

static ENV_FROM_SOURCE: Struct = Struct {
    go_name: "EnvFromSource",
    fields: &[
        f("prefix", Str, OmitEmpty),
        f("configMapRef", st(&CONFIG_MAP_ENV_SOURCE), Ptr),
        f("secretRef", st(&SECRET_ENV_SOURCE), Ptr),
    ],
};

static CONTAINER_PORT: Struct = Struct {
    go_name: "ContainerPort",
    fields: &[
        f("name", Str, OmitEmpty),
        f("hostPort", I32, OmitEmpty),
        f("containerPort", I32, Value),
        f("protocol", Str, OmitEmpty),
        f("hostIP", Str, OmitEmpty),
    ],
};

static RESOURCE_CLAIM: Struct = Struct {
    go_name: "ResourceClaim",
    fields: &[f("name", Str, Value), f("request", Str, OmitEmpty)],
};

static RESOURCE_REQUIREMENTS: Struct = Struct {
    go_name: "ResourceRequirements",
    fields: &[
        f("limits", ResourceList, OmitEmpty),
        f("requests", ResourceList, OmitEmpty),
        f("claims", Slice(&st(&RESOURCE_CLAIM)), OmitEmpty),
    ],
};

static CONTAINER_RESIZE_POLICY: Struct = Struct {
    go_name: "ContainerResizePolicy",
    fields: &[
        f("resourceName", Str, Value),
        f("restartPolicy", Str, Value),
    ],
};

static VOLUME_MOUNT: Struct = Struct {
    go_name: "VolumeMount",
    fields: &[
        f("name", Str, Value),
        f("readOnly", Bool, OmitEmpty),
        f("recursiveReadOnly", Str, Ptr),
        f("mountPath", Str, Value),
        f("subPath", Str, OmitEmpty),
        f("mountPropagation", Str, Ptr),
        f("subPathExpr", Str, OmitEmpty),
    ],
};

static VOLUME_DEVICE: Struct = Struct {
    go_name: "VolumeDevice",
    fields: &[f("name", Str, Value), f("devicePath", Str, Value)],
};

static EXEC_ACTION: Struct = Struct {
    go_name: "ExecAction",
    fields: &[f("command", StrSlice, OmitEmpty)],
};

static HTTP_HEADER: Struct = Struct {
    go_name: "HTTPHeader",
    fields: &[f("name", Str, Value), f("value", Str, Value)],
};

static HTTP_GET_ACTION: Struct = Struct {
    go_name: "HTTPGetAction",
    fields: &[
        f("path", Str, OmitEmpty),
        f("port", IntOrString, Value),
        f("host", Str, OmitEmpty),
        f("scheme", Str, OmitEmpty),
        f("httpHeaders", Slice(&st(&HTTP_HEADER)), OmitEmpty),
    ],
};

static TCP_SOCKET_ACTION: Struct = Struct {
    go_name: "TCPSocketAction",
    fields: &[f("port", IntOrString, Value), f("host", Str, OmitEmpty)],
};

static GRPC_ACTION: Struct = Struct {
    go_name: "GRPCAction",
    fields: &[
        f("port", I32, Value),
        // `Service *string json:"service"`: no omitempty, so a nil service is written as null.
        f("service", Str, PtrAlways),
    ],
};

static SLEEP_ACTION: Struct = Struct {
    go_name: "SleepAction",
    fields: &[f("seconds", I64, Value)],
};

static PROBE: Struct = Struct {
    go_name: "Probe",
    fields: &[
        // ProbeHandler, inline
        f("exec", st(&EXEC_ACTION), Ptr),
        f("httpGet", st(&HTTP_GET_ACTION), Ptr),
        f("tcpSocket", st(&TCP_SOCKET_ACTION), Ptr),
        f("grpc", st(&GRPC_ACTION), Ptr),
        f("initialDelaySeconds", I32, OmitEmpty),
        f("timeoutSeconds", I32, OmitEmpty),
        f("periodSeconds", I32, OmitEmpty),
        f("successThreshold", I32, OmitEmpty),
        f("failureThreshold", I32, OmitEmpty),
        f("terminationGracePeriodSeconds", I64, Ptr),
    ],
};

static LIFECYCLE_HANDLER: Struct = Struct {
    go_name: "LifecycleHandler",
    fields: &[
        f("exec", st(&EXEC_ACTION), Ptr),
        f("httpGet", st(&HTTP_GET_ACTION), Ptr),
        f("tcpSocket", st(&TCP_SOCKET_ACTION), Ptr),
        f("sleep", st(&SLEEP_ACTION), Ptr),
    ],
};

static LIFECYCLE: Struct = Struct {
    go_name: "Lifecycle",
    fields: &[
        f("postStart", st(&LIFECYCLE_HANDLER), Ptr),
        f("preStop", st(&LIFECYCLE_HANDLER), Ptr),
    ],
};

static CAPABILITIES: Struct = Struct {
    go_name: "Capabilities",
    fields: &[
        f("add", StrSlice, OmitEmpty),
        f("drop", StrSlice, OmitEmpty),
    ],
};

static SE_LINUX_OPTIONS: Struct = Struct {
    go_name: "SELinuxOptions",
    fields: &[
        f("user", Str, OmitEmpty),
        f("role", Str, OmitEmpty),
        f("type", Str, OmitEmpty),
        f("level", Str, OmitEmpty),
    ],
};

static WINDOWS_SECURITY_CONTEXT_OPTIONS: Struct = Struct {
    go_name: "WindowsSecurityContextOptions",
    fields: &[
        f("gmsaCredentialSpecName", Str, Ptr),
        f("gmsaCredentialSpec", Str, Ptr),
        f("runAsUserName", Str, Ptr),
        f("hostProcess", Bool, Ptr),
    ],
};

static SECCOMP_PROFILE: Struct = Struct {
    go_name: "SeccompProfile",
    fields: &[f("type", Str, Value), f("localhostProfile", Str, Ptr)],
};

static APP_ARMOR_PROFILE: Struct = Struct {
    go_name: "AppArmorProfile",
    fields: &[f("type", Str, Value), f("localhostProfile", Str, Ptr)],
};

static SECURITY_CONTEXT: Struct = Struct {
    go_name: "SecurityContext",
    fields: &[
        f("capabilities", st(&CAPABILITIES), Ptr),
        f("privileged", Bool, Ptr),
        f("seLinuxOptions", st(&SE_LINUX_OPTIONS), Ptr),
        f("windowsOptions", st(&WINDOWS_SECURITY_CONTEXT_OPTIONS), Ptr),
        f("runAsUser", I64, Ptr),
        f("runAsGroup", I64, Ptr),
        f("runAsNonRoot", Bool, Ptr),
        f("readOnlyRootFilesystem", Bool, Ptr),
        f("allowPrivilegeEscalation", Bool, Ptr),
        f("procMount", Str, Ptr),
        f("seccompProfile", st(&SECCOMP_PROFILE), Ptr),
        f("appArmorProfile", st(&APP_ARMOR_PROFILE), Ptr),
    ],
};

static UPGRADE_STRATEGY: Struct = Struct {
    go_name: "SidecarContainerUpgradeStrategy",
    fields: &[
        f("upgradeType", Str, OmitEmpty),
        f("hotUpgradeEmptyImage", Str, OmitEmpty),
    ],
};

static SHARE_VOLUME_POLICY: Struct = Struct {
    go_name: "ShareVolumePolicy",
    fields: &[f("type", Str, OmitEmpty)],
};

static SOURCE_CONTAINER_NAME_SOURCE: Struct = Struct {
    go_name: "SourceContainerNameSource",
    fields: &[f("fieldRef", st(&OBJECT_FIELD_SELECTOR), Ptr)],
};

static TRANSFER_ENV_VAR: Struct = Struct {
    go_name: "TransferEnvVar",
    fields: &[
        f("sourceContainerName", Str, OmitEmpty),
        f(
            "sourceContainerNameFrom",
            st(&SOURCE_CONTAINER_NAME_SOURCE),
            Ptr,
        ),
        f("envName", Str, OmitEmpty),
        f("envNames", StrSlice, OmitEmpty),
    ],
};

static RESOURCE_EXPR_LIMITS: Struct = Struct {
    go_name: "ResourceExprLimits",
    fields: &[f("cpu", Str, OmitEmpty), f("memory", Str, OmitEmpty)],
};

static RESOURCE_EXPR_REQUESTS: Struct = Struct {
    go_name: "ResourceExprRequests",
    fields: &[f("cpu", Str, OmitEmpty), f("memory", Str, OmitEmpty)],
};

static RESOURCES_EXPR: Struct = Struct {
    go_name: "ResourcesExpr",
    fields: &[
        f("limits", st(&RESOURCE_EXPR_LIMITS), Ptr),
        f("requests", st(&RESOURCE_EXPR_REQUESTS), Ptr),
    ],
};

// Not confirmed from the Go source (the stored snapshots predate the field). Order from spec §2; the CRD
// marks `targetContainersMode` and `resourcesExpr` required (no omitempty) and defaults the regex.
static RESOURCES_POLICY: Struct = Struct {
    go_name: "ResourcesPolicy",
    fields: &[
        f("targetContainersMode", Str, Value),
        f("targetContainersNameRegex", Str, OmitEmpty),
        f("resourcesExpr", st(&RESOURCES_EXPR), Value),
    ],
};

/// `SidecarContainer`: the inlined `corev1.Container`, then Kruise's fields.
pub(super) static SIDECAR_CONTAINER: Struct = Struct {
    go_name: "SidecarContainer",
    fields: &[
        f("name", Str, Value),
        f("image", Str, OmitEmpty),
        f("command", StrSlice, OmitEmpty),
        f("args", StrSlice, OmitEmpty),
        f("workingDir", Str, OmitEmpty),
        f("ports", Slice(&st(&CONTAINER_PORT)), OmitEmpty),
        f("envFrom", Slice(&st(&ENV_FROM_SOURCE)), OmitEmpty),
        f("env", Slice(&st(&ENV_VAR)), OmitEmpty),
        f("resources", st(&RESOURCE_REQUIREMENTS), OmitEmpty),
        f(
            "resizePolicy",
            Slice(&st(&CONTAINER_RESIZE_POLICY)),
            OmitEmpty,
        ),
        f("restartPolicy", Str, Ptr),
        f("volumeMounts", Slice(&st(&VOLUME_MOUNT)), OmitEmpty),
        f("volumeDevices", Slice(&st(&VOLUME_DEVICE)), OmitEmpty),
        f("livenessProbe", st(&PROBE), Ptr),
        f("readinessProbe", st(&PROBE), Ptr),
        f("startupProbe", st(&PROBE), Ptr),
        f("lifecycle", st(&LIFECYCLE), Ptr),
        f("terminationMessagePath", Str, OmitEmpty),
        f("terminationMessagePolicy", Str, OmitEmpty),
        f("imagePullPolicy", Str, OmitEmpty),
        f("securityContext", st(&SECURITY_CONTEXT), Ptr),
        f("stdin", Bool, OmitEmpty),
        f("stdinOnce", Bool, OmitEmpty),
        f("tty", Bool, OmitEmpty),
        // Kruise's SidecarContainer fields.
        f("podInjectPolicy", Str, OmitEmpty),
        f("upgradeStrategy", st(&UPGRADE_STRATEGY), OmitEmpty),
        f("shareVolumePolicy", st(&SHARE_VOLUME_POLICY), OmitEmpty),
        f("shareVolumeDevicePolicy", st(&SHARE_VOLUME_POLICY), Ptr),
        f("transferEnv", Slice(&st(&TRANSFER_ENV_VAR)), OmitEmpty),
        f("resourcesPolicy", st(&RESOURCES_POLICY), Ptr),
    ],
};

/// `[]SidecarContainer`: `spec.containers` and `spec.initContainers`.
pub(super) static SIDECAR_CONTAINERS: Ty = Ty::Slice(&Ty::Struct(&SIDECAR_CONTAINER));
