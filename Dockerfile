# ipsift in a container: `docker build -t ipsift .` then `docker compose -f deploy/compose.yaml up`.
# Debian 12 (glibc 2.36) under Node 20: the uWebSockets.js binary needs glibc and Node 20's ABI,
# so the image is the same platform the fast server is tested on. No Alpine (musl).
# `npm run check:dockerfile` replays these steps on the host (docker build cannot run there).

FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json ./
COPY src ./src
COPY workers ./workers
# npm ci compiles the TypeScript (prepare); then the dev dependencies go.
RUN npm ci --no-audit --no-fund && npm prune --omit=dev --no-audit --no-fund

FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    DATA_DIR=/data \
    HOST=0.0.0.0 \
    ADMIN_HOST=0.0.0.0 \
    GLIBC_TUNABLES=glibc.malloc.hugetlb=1
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY bin ./bin
COPY config ./config
COPY demo ./demo
RUN mkdir -p /data && chown node:node /data
VOLUME /data
USER node
EXPOSE 8080 8081
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s CMD ["node", "-e", "fetch('http://127.0.0.1:8081/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "dist/src/cli.js"]
CMD ["serve"]
