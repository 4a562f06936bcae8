# poolkeeper's image: poolkeeper-webhook, poolkeeper-controller, the
# poolkeeper CLI and poolkeeper-certs (which the chart's certificate Job
# runs), on Debian 12 slim with only the shared libraries they load.
#
#   docker build -t poolkeeper:0.1.0 .
#
# The chart runs each binary by name (`command:`), so the image has no
# entrypoint of its own. scripts/check-image-libs (run by `make test`)
# checks that every library `ldd` lists for the built binaries comes from a
# package the runtime stage installs; it reads the package list from the
# apt-get line between the two "runtime packages" comments below, so keep
# that the only place the list is written.

FROM debian:bookworm AS build
# The build needs of scripts/deps: compiler, CMake, pkg-config and the -dev
# packages CMake looks for (cmocka because configure requires it, gnutls
# because the webhook links it for libmicrohttpd's TLS).
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      cmake make gcc libc6-dev pkg-config \
      libmicrohttpd-dev libjansson-dev libcurl4-openssl-dev libssl-dev \
      libyaml-dev libgnutls28-dev libcmocka-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DPK_WERROR=ON \
 && cmake --build build -j "$(nproc)" \
      --target poolkeeper-webhook poolkeeper-controller poolkeeper poolkeeper-certs

FROM debian:bookworm-slim
# runtime packages: begin
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      ca-certificates libcurl4 libgnutls30 libjansson4 libmicrohttpd12 libssl3 libyaml-0-2 \
 && rm -rf /var/lib/apt/lists/*
# runtime packages: end
COPY --from=build /src/build/bin/poolkeeper-webhook /src/build/bin/poolkeeper-controller \
     /src/build/bin/poolkeeper /src/build/bin/poolkeeper-certs /usr/local/bin/
# 65532: the conventional "nonroot" user of distroless images, which the
# chart's securityContext (runAsNonRoot) expects.
USER 65532:65532
