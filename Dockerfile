# ipsift in a container: `docker build -t ipsift .` then `docker compose -f deploy/compose.yaml up`.
# Node 24 LTS on Debian 13 (glibc 2.41): the uWebSockets.js 20.57 binary for Node 24 needs
# glibc 2.38 or later, so the image is the platform the fast server is tested on (.ci/run's
# Debian 13 row). No Alpine (musl). `npm run check:dockerfile` replays these steps in that
# Debian 13 root (docker build cannot run there).

FROM node:24-trixie-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json ./
COPY src ./src
COPY workers ./workers
COPY console ./console
COPY scripts/console-assets.ts scripts/build.mjs ./scripts/
# npm ci compiles the TypeScript and the console's assets (prepare); then the dev dependencies go, and every uWS binary
# but the one for this image's system, CPU and Node ABI (about 198 MiB of other systems' and
# runtimes'). better-sqlite3 is optional: Node 24 has node:sqlite.
RUN npm ci --no-audit --no-fund && npm prune --omit=dev --no-audit --no-fund \
    && node -e "const fs = require('fs'), own = 'uws_' + process.platform + '_' + process.arch + '_' + process.versions.modules + '.node'; \
         for (const d of ['node_modules/@btc-vision/uwebsockets.js', 'node_modules/uWebSockets.js/binaries']) \
           for (const f of fs.readdirSync(d)) if (/^uws_.*[.]node$/.test(f) && f !== own) fs.rmSync(d + '/' + f)"

FROM node:24-trixie-slim
ENV NODE_ENV=production \
    DATA_DIR=/data \
    HOST=0.0.0.0 \
    ADMIN_HOST=0.0.0.0 \
    GLIBC_TUNABLES=glibc.malloc.hugetlb=1
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json LICENSE NOTICE ./
COPY bin ./bin
COPY config ./config
COPY demo ./demo
# `ipsift` on PATH, as the compose files and docs run it (docker compose exec … ipsift org create).
RUN mkdir -p /usr/local/bin && ln -sf /app/bin/ipsift.js /usr/local/bin/ipsift \
    && mkdir -p /data && chown node:node /data
VOLUME /data
USER node
EXPOSE 8080 8081
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s CMD ["node", "-e", "fetch('http://127.0.0.1:8081/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "--initial-old-space-size=64", "dist/src/cli.js"]
CMD ["serve"]
