# validic-sync worker image. Node 24 runs the TypeScript sources directly (type stripping), so the
# image needs no build step; dev dependencies are left out.
FROM node:24-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund
COPY src ./src
COPY jobs ./jobs
COPY migrations ./migrations
COPY config ./config
USER node
EXPOSE 3000
# V8 heap flags: see src/runtime/heap-flags.ts.
ENTRYPOINT ["node", "--max-semi-space-size=8", "--heap-growing-percent=50", "src/cli/main.ts"]
CMD ["worker"]
