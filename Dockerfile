# syntax=docker/dockerfile:1
# Multi-stage build: the release binary (.ci/build-static: cgo for SQLite,
# linked statically — the same flags `make static` and `make check-static`
# use), run as a non-root user with the database on /data. `make
# check-static` proves this build and run without a container engine.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    go generate ./... && sh .ci/build-static /out/prism

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/prism /prism
VOLUME /data
# Inside a container the listener must accept the published port; outside
# one, prism binds 127.0.0.1 by default. Off loopback prism refuses to start
# without an owner token, so run the image with one:
#   docker run -e PRISM_OWNER_TOKEN=$(openssl rand -hex 16) -p 127.0.0.1:8080:8080 IMAGE
# Share links alone can be published on a second port with
# -e PRISM_SHARE_ADDR=0.0.0.0:8081 -p 8081:8081.
ENV PRISM_DB=/data/prism.db PRISM_ADDR=0.0.0.0:8080
EXPOSE 8080
USER nonroot:nonroot
ENTRYPOINT ["/prism"]
