# syntax=docker/dockerfile:1.7
# One image, five entrypoints (engine, operator, router, picker, toolrunner).
#   CPU (default):  docker build -t interlace .
#   CUDA:           docker build --build-arg VARIANT=cuda -t interlace:cuda .
#   Other base:     docker build --build-arg BASE_IMAGE=my-registry/node:20 -t interlace .
# BASE_IMAGE needs node and npm on PATH (the build stage) and a node that
# runs the result (the CPU runtime stage). hack/images.sh builds one without
# any registry (a Debian rootfs plus Node's own binary from the npm registry).
# The CUDA variant adds node-llama-cpp's prebuilt CUDA binary package (same
# version as the CPU one) on an NVIDIA CUDA runtime base; the engine picks it
# with `--gpu cuda` (or `auto`). Nothing else differs: same code, same lockfile.
ARG VARIANT=cpu
ARG NODE_VERSION=20
ARG BASE_IMAGE=node:${NODE_VERSION}-bookworm-slim
ARG CUDA_BASE=nvidia/cuda:12.4.1-runtime-ubuntu22.04

FROM ${BASE_IMAGE} AS build
# Behind a TLS-intercepting proxy: a CA file (mounted into the build) that npm must trust.
ARG NODE_EXTRA_CA_CERTS
WORKDIR /src
COPY package.json package-lock.json .npmrc ./
COPY hack/npm ./hack/npm
# A cache mount keeps downloaded packages between builds (podman and BuildKit);
# node-llama-cpp's prebuilt binary is a dependency, so its postinstall must not
# try to download or compile llama.cpp.
RUN --mount=type=cache,target=/root/.npm NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm ci --no-audit --no-fund --prefer-offline
COPY tsconfig.json tsconfig.build.json ./
COPY common ./common
COPY engine-pod ./engine-pod
COPY operator ./operator
COPY toolrunner ./toolrunner
COPY router ./router
COPY hack ./hack
COPY bench ./bench
RUN npm run build && npm prune --omit=dev

FROM build AS deps-cpu
FROM build AS deps-cuda
# .npmrc omits optional packages; a package named on the command line is installed
# regardless, pinned here to node-llama-cpp's own version.
RUN npm install --no-save --omit=dev "@node-llama-cpp/linux-x64-cuda@$(node -p 'require("./node_modules/node-llama-cpp/package.json").version')"
FROM deps-${VARIANT} AS deps

FROM ${BASE_IMAGE} AS runtime-cpu

FROM ${CUDA_BASE} AS runtime-cuda
COPY --from=node:20-bookworm-slim /usr/local/bin/node /usr/local/bin/node

FROM runtime-${VARIANT} AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /src/node_modules ./node_modules
COPY --from=deps /src/dist ./dist
# The endpoint picker loads Envoy's ext_proc protos at start-up (tsc does not copy them).
COPY --from=deps /src/router/src/picker/proto ./dist/router/src/picker/proto
COPY --from=deps /src/package.json ./package.json
# Non-root; the chart also sets readOnlyRootFilesystem, so models and swap
# files live on mounted volumes (/models, /tmp as emptyDir).
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["node"]
# Pick the component with the command: dist/engine-pod/src/main.js (default),
# dist/operator/src/main.js, dist/router/src/main.js, dist/router/src/picker/main.js,
# dist/toolrunner/src/main.js
CMD ["dist/engine-pod/src/main.js"]
