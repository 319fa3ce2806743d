// GET /admin/v1/settings on the admin port, for an operator token with admin.read: the
// configuration the process runs with, each setting's value and where it came from
// (environment, CONFIG_FILE, default). Credentials are never shown: a URL's password is
// masked, and the cloud credentials the S3 client reads are reported as set or not.

import { CONFIG_REFERENCE } from '../../config-reference.js';
import { CREDENTIAL_VARIABLES, type Config } from '../../config.js';
import { sendJson } from '../../http/reply.js';
import { redactUrl } from '../../log.js';
import type { AdminRoutes } from './admin-routes.js';

/** A URL (REDIS_URL, CONTROL_DB, an S3 endpoint, SOURCES_MIRROR): shown through redactUrl, which masks what may be a secret. */
const URL_LIKE = /^[a-z][a-z0-9+.-]*:\/\//i;

/** The document GET /admin/v1/settings answers. */
export function settingsDocument(given: Config['given']): Record<string, unknown> {
  return {
    config_file: given.configFile,
    settings: given.settings.map((s) => {
      const help = CONFIG_REFERENCE[s.name];
      const value = s.value ?? help.default ?? null;
      const shown = value !== null && URL_LIKE.test(value) ? redactUrl(value) : value;
      const masked = shown !== value;
      return {
        name: s.name,
        group: help.group,
        value: shown,
        origin: s.origin,
        ...(s.value === null && help.default === undefined && help.shown !== undefined ? { default: help.shown.replaceAll('`', '') } : {}),
        ...(masked ? { password: 'set' } : {}),
      };
    }),
    credentials: CREDENTIAL_VARIABLES.map((name) => ({ name, set: given.credentialsSet.includes(name) })),
  };
}

export class SettingsApi {
  constructor(private readonly given: Config['given']) {}

  register(admin: AdminRoutes): void {
    const { edge } = admin;
    // Made once: the settings are those the process started with.
    const doc = settingsDocument(this.given);
    admin.get('/admin/v1/settings', 'admin.read', (res) => {
      sendJson(res, 200, doc, edge.metrics);
    });
  }
}
