// Two small charts drawn as SVG by hand (a few hundred bytes of code instead of a chart
// library): lines over time with a y axis, and a bar of usage against its limits. Colours
// come from the style sheet through classes; no inline style, which the page's policy forbids.

const SVG = 'http://www.w3.org/2000/svg';

function s<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>, text?: string): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

/** A round number at or above `n` (1, 2 or 5 times a power of ten). */
function ceilNice(n: number): number {
  if (n <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(n));
  for (const m of [1, 2, 5, 10]) if (m * p >= n) return m * p;
  return 10 * p;
}

const short = (n: number): string => (n >= 1e6 ? `${+(n / 1e6).toFixed(1)}M` : n >= 1e3 ? `${+(n / 1e3).toFixed(1)}k` : `${+n.toFixed(2)}`);

export interface Series {
  name: string;
  /** A class of the style sheet: its stroke colour. */
  cls: string;
  values: (number | null)[];
}

const W = 640;
const H = 180;
const LEFT = 48;
const BOTTOM = 22;
const TOP = 24;

/** Lines over the same x positions (`labels`: the times under the first, middle and last). */
export function lineChart(title: string, unit: string, labels: string[], series: Series[]): SVGSVGElement {
  const svg = s('svg', { viewBox: `0 0 ${W} ${H + 20}`, class: 'chart', role: 'img', 'aria-label': title });
  const max = ceilNice(Math.max(0, ...series.flatMap((x) => x.values.filter((v): v is number => v !== null))));
  const n = Math.max(2, labels.length);
  const x = (i: number): number => LEFT + ((W - LEFT - 8) * i) / (n - 1);
  const y = (v: number): number => TOP + (H - BOTTOM - TOP) * (1 - v / max);
  for (const f of [0, 0.5, 1]) {
    svg.append(s('line', { x1: LEFT, x2: W - 8, y1: y(max * f), y2: y(max * f), class: 'grid' }));
    svg.append(s('text', { x: LEFT - 6, y: y(max * f) + 4, class: 'tick', 'text-anchor': 'end' }, short(max * f)));
  }
  svg.append(s('text', { x: 4, y: 12, class: 'tick' }, unit));
  for (const i of labels.length > 1 ? [0, Math.floor((labels.length - 1) / 2), labels.length - 1] : []) {
    svg.append(s('text', { x: x(i), y: H - 4, class: 'tick', 'text-anchor': i === 0 ? 'start' : i === labels.length - 1 ? 'end' : 'middle' }, labels[i]));
  }
  series.forEach((ser, k) => {
    let d = '';
    ser.values.forEach((v, i) => {
      if (v === null) return;
      d += `${d === '' || ser.values[i - 1] === null ? 'M' : 'L'}${x(i).toFixed(1)},${y(v).toFixed(1)}`;
    });
    if (d !== '') svg.append(s('path', { d, class: `line ${ser.cls}` }));
    const lx = LEFT + k * 150;
    svg.append(s('rect', { x: lx, y: H + 8, width: 10, height: 10, class: `swatch ${ser.cls}` }));
    svg.append(s('text', { x: lx + 14, y: H + 17, class: 'tick' }, ser.name));
  });
  if (labels.length < 2) svg.append(s('text', { x: W / 2, y: H / 2, class: 'tick', 'text-anchor': 'middle' }, 'collecting: a point every period'));
  return svg;
}

/** Less use than this is too little to project a month from. */
const MIN_OBSERVED_MS = 6 * 3_600_000;

/**
 * This month's requests as a bar against the quota and the overage limit, with where the
 * month ends at today's pace (`elapsed`: the share of the spendable month gone, 0..1;
 * `observedMs`: how long that is). Under six hours of use, or a hundredth of the month, no
 * pace is drawn: two minutes of requests say nothing of a month.
 */
export function usageBar(requests: number, quota: number, hardLimit: number | null, elapsed: number, observedMs: number): SVGSVGElement {
  const projected = observedMs >= MIN_OBSERVED_MS && elapsed > 0.01;
  const pace = projected ? requests / elapsed : requests;
  const end = Math.max(requests, quota, hardLimit ?? 0, pace) * 1.08;
  const svg = s('svg', { viewBox: `0 0 ${W} 96`, class: 'chart usage', role: 'img', 'aria-label': `${requests} requests of a quota of ${quota}` });
  const x = (v: number): number => 8 + ((W - 16) * v) / end;
  svg.append(s('rect', { x: 8, y: 30, width: W - 16, height: 22, class: 'track' }));
  svg.append(s('rect', { x: 8, y: 30, width: Math.max(1, x(pace) - 8), height: 22, class: 'pace' }));
  svg.append(
    s('rect', { x: 8, y: 30, width: Math.max(1, x(requests) - 8), height: 22, class: requests > quota ? 'used over' : 'used', 'data-requests': requests }),
  );
  const mark = (v: number, label: string, cls: string, above: boolean): void => {
    svg.append(s('line', { x1: x(v), x2: x(v), y1: 24, y2: 58, class: `mark ${cls}` }));
    svg.append(s('text', { x: x(v), y: above ? 18 : 74, class: 'tick', 'text-anchor': x(v) > W - 120 ? 'end' : 'middle' }, label));
  };
  mark(quota, `quota ${short(quota)}`, 'quota', true);
  if (hardLimit !== null) mark(hardLimit, `overage limit ${short(hardLimit)}`, 'limit', false);
  const hours = Math.max(1, Math.round(observedMs / 3_600_000));
  const pacing = projected
    ? `${short(Math.round(pace))} at this pace by the month's end`
    : `too early to project: ${observedMs < 3_600_000 ? `${Math.max(1, Math.round(observedMs / 60_000))} minutes` : `${hours} hours`} of use`;
  svg.append(s('text', { x: 8, y: 92, class: 'tick', 'data-test': 'usage-pace' }, `${short(requests)} used · ${pacing}`));
  return svg;
}
