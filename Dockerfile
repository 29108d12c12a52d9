# Frieda's container image (docs/packaging.md, "Container image"):
#   docker build -t frieda .
#   docker run -d --name frieda -p 9092:9092 -v frieda-data:/var/lib/frieda frieda
# Clients on the host then bootstrap from localhost:9092. For clients elsewhere, replace the
# default arguments with the address they reach this container by:
#   docker run -d -p 9092:9092 -v frieda-data:/var/lib/frieda frieda \
#     --override advertised.listeners=PLAINTEXT://broker1.example.com:9092
# Any `--override KEY=VALUE` (Kafka's setting names) works the same way.

# ---- build: the release binary (rust-version 1.89 or later, what the locked dependencies
# need; rust:1 is the newest stable)
ARG RUST_VERSION=1
FROM rust:${RUST_VERSION}-bookworm AS builder
WORKDIR /src
# the whole workspace (.dockerignore leaves out target/ and the test venvs); .git gives
# `frieda --version` and the frieda_build_info metric their revision
COPY . .
RUN cargo build --release --locked -p frieda \
 && objcopy --strip-debug target/release/frieda /usr/local/bin/frieda \
 && /usr/local/bin/frieda --version

# ---- run: Debian's slim image, the binary, the Debian package's server.properties
FROM debian:bookworm-slim
# CA certificates: tiered storage reaches S3 over HTTPS
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/*
RUN groupadd --system --gid 999 frieda \
 && useradd --system --uid 999 --gid frieda --home-dir /var/lib/frieda --no-create-home \
      --shell /usr/sbin/nologin frieda \
 && install -d -o frieda -g frieda -m 0750 /var/lib/frieda
COPY --from=builder /usr/local/bin/frieda /usr/bin/frieda
COPY packaging/debian/server.properties /etc/frieda/server.properties
# numeric, so that runAsNonRoot-style checks can verify it; a bind-mounted data directory
# must belong to 999:999
USER 999:999
WORKDIR /var/lib/frieda
VOLUME ["/var/lib/frieda"]
EXPOSE 9092
# SIGTERM (docker stop): no new connections, in-flight requests finished, logs closed, exit 0
STOPSIGNAL SIGTERM
# The packaged configuration (log.dirs=/var/lib/frieda, one node that is broker and
# controller), with clients served on every interface of the container; the controller
# listener stays on the container's loopback.
ENTRYPOINT ["/usr/bin/frieda", "serve", "--config", "/etc/frieda/server.properties", \
            "--override", "listeners=PLAINTEXT://0.0.0.0:9092,CONTROLLER://127.0.0.1:9093"]
# what Metadata tells clients; replaced by any arguments given to `docker run`
CMD ["--override", "advertised.listeners=PLAINTEXT://localhost:9092"]
