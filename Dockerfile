# The blis image a sweep's pods run (`blis sweep k8s`): one static binary on a
# distroless base. Build from the repository root:
#   docker build --build-arg REVISION=$(git rev-parse HEAD) -t REGISTRY/blis:TAG .
# REVISION stamps the binary, so every result file names the commit that
# computed it (the build context leaves .git out).

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG REVISION=""
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X blis/internal/buildinfo.revision=${REVISION}" \
      -o /out/blis ./cmd/blis

# Static binary, no shell: the catalog is embedded in it. The nonroot user
# (65532) matches the Job's runAsUser and fsGroup.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/blis /usr/local/bin/blis
USER 65532:65532
ENTRYPOINT ["blis"]
