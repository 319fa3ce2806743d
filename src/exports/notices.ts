// What the exports owe their sources: each source's licence and where it came from, written
// beside the files (NOTICE.txt), into their manifest and into each MMDB's description, so the
// terms travel with the data to whoever downloads it.

/** A source an export was built from (or left out of it), with its terms as the source states them. */
export interface SourceNotice {
  name: string;
  licence: string;
  /** Where it was fetched from, credentials masked (null: a file imported by hand). */
  origin: string | null;
}

export const NOTICE_FILE = 'NOTICE.txt';

const entry = (n: SourceNotice): string => `${n.name} (${n.licence}${n.origin ? `, ${n.origin}` : ''})`;

/** The notice file: every source the exports hold, then those left out for their terms. */
export function noticeText(used: readonly SourceNotice[], leftOut: readonly SourceNotice[], built: Date): string {
  let text =
    `The ipsift databases built ${built.toISOString()} hold data from the sources below, each under\n` +
    'its publisher\'s terms as the source states them ("not stated": the publisher names none).\n\n';
  for (const n of used) text += `${entry(n)}\n`;
  if (leftOut.length > 0) {
    text += '\nLeft out of these files because their terms do not allow passing them on:\n\n';
    for (const n of leftOut) text += `${entry(n)}\n`;
  }
  return text;
}

/** One line naming every source and its licence, for an MMDB's description. */
export function noticeLine(used: readonly SourceNotice[]): string {
  return used.length === 0 ? '' : ` Built from ${used.map((n) => `${n.name} (${n.licence})`).join(', ')}; see NOTICE.txt.`;
}
