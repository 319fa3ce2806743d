// What every page is given: the API with the signed-in token, whether the token may change
// anything (pages draw no write control without it), and a place for notices.

import type { AdminApi } from './api.js';

export interface Context {
  api: AdminApi;
  canWrite: boolean;
  /** Shows a message above the page (an error by default). */
  say(text: string, kind?: 'error' | 'ok'): void;
  /** Opens a page of the console (a hash route such as '#/orgs/…'). */
  go(route: string): void;
}

/** A page: draws into `root`; may return what stops its timers when another page opens. */
// biome-ignore lint/suspicious/noConfusingVoidType: a page returns nothing, or what to do when it is left
export type Page = (ctx: Context, root: HTMLElement, params: string[]) => void | (() => void);

/** Runs an action, showing its failure (the API's message) instead of throwing. */
export async function attempt(ctx: Context, action: () => Promise<void>): Promise<void> {
  try {
    await action();
  } catch (e) {
    ctx.say(e instanceof Error ? e.message : String(e));
  }
}
