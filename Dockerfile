# kruise-webhook container image.
#
#   docker build -t registry.example.com/kruise-webhook:0.1.0 .
#
# Then point deploy/ at it with kustomize's `images:` (deploy/README.md).

# ---- build ------------------------------------------------------------------------------------
# Same Debian release (bookworm, glibc 2.36) as the runtime image below.
FROM rust:1.95-bookworm AS builder
WORKDIR /src

# 1. Dependencies only. This layer is rebuilt only when a manifest or Cargo.lock changes, not on
#    every source edit. Cargo refuses a manifest whose declared targets have no file, so each
#    crate gets an empty lib.rs, the binary an empty main, and every [[bench]], [[test]] and
#    [[example]] declared in a manifest an empty main at its default path.
COPY Cargo.toml Cargo.lock ./
COPY webhooks/Cargo.toml webhooks/Cargo.toml
COPY certs/Cargo.toml certs/Cargo.toml
RUN set -eu; \
    mkdir -p src webhooks/src certs/src; \
    echo 'fn main() {}' > src/main.rs; \
    touch src/lib.rs webhooks/src/lib.rs certs/src/lib.rs; \
    for m in Cargo.toml webhooks/Cargo.toml certs/Cargo.toml; do \
      for k in bench:benches test:tests example:examples; do \
        sed -n "/^\[\[${k%%:*}\]\]/,/^name/ s/^name *= *\"\(.*\)\"/\1/p" "$m" | while read -r n; do \
          d="$(dirname "$m")/${k#*:}"; mkdir -p "$d"; echo 'fn main() {}' > "$d/$n.rs"; \
        done; \
      done; \
    done; \
    cargo build --release --locked -p kruise-webhook

# 2. The real sources (.dockerignore keeps target/ and .git/ out). COPY keeps the files' own
#    modification times, which can be older than the stub build above; touch them so cargo
#    rebuilds the workspace crates instead of shipping the empty stub binary.
COPY . .
RUN set -eu; \
    find src webhooks certs -name '*.rs' -exec touch {} +; \
    cargo build --release --locked -p kruise-webhook; \
    cp target/release/kruise-webhook /kruise-webhook

# ---- runtime ----------------------------------------------------------------------------------
# distroless/cc: glibc, libgcc and CA certificates, no shell, no package manager.
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=builder /kruise-webhook /kruise-webhook
# nonroot (65532:65532); the Deployment also sets runAsUser 65532 and a read-only root filesystem.
USER 65532:65532
# 9876 webhook server (TLS), 8080 metrics, 8000 health probes (/healthz, /readyz).
EXPOSE 9876 8080 8000
ENTRYPOINT ["/kruise-webhook"]
CMD ["serve"]
