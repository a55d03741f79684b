/**
 * Plain SVG charts for the bench (no dependency): a line chart over categories and a horizontal
 * grouped bar chart, linear or log scale. Text is escaped; colours are a fixed palette that reads
 * on light and dark backgrounds.
 */

const PALETTE = ['#2f6fdf', '#e0741a', '#2a9d55', '#c8366b', '#7a55c4', '#8c6d31', '#17a2b8', '#666666'];
const FONT = 'font-family="system-ui, -apple-system, Segoe UI, sans-serif" font-size="12"';

const xmlText = (text: string) =>
  text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');

/** Round-number ticks from 0 to at least `max`. */
function linearTicks(max: number): number[] {
  const rough = max / 5;
  const step =
    [1, 2, 2.5, 5, 10].map((f) => f * 10 ** Math.floor(Math.log10(rough || 1))).find((s) => s >= rough) ??
    rough;
  const ticks: number[] = [];
  for (let value = 0; value < max + step; value += step) ticks.push(value);
  return ticks;
}

/** Powers of ten around [min, max]. */
function logTicks(min: number, max: number): number[] {
  const ticks: number[] = [];
  for (let exp = Math.floor(Math.log10(min)); exp <= Math.ceil(Math.log10(max)); exp += 1)
    ticks.push(10 ** exp);
  return ticks;
}

const label = (value: number) =>
  value >= 1_000
    ? `${(value / 1_000).toLocaleString('en-US')}k`
    : value.toLocaleString('en-US', { maximumFractionDigits: 2 });

function frame(width: number, height: number, title: string, body: string[]): string {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" ${FONT}>`,
    // The chart's name for screen readers and for tools that show an image's title.
    `<title>${xmlText(title)}</title>`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="${width / 2}" y="20" text-anchor="middle" font-size="14" font-weight="bold">${xmlText(title)}</text>`,
    ...body,
    '</svg>',
    '',
  ].join('\n');
}

function legend(names: readonly string[], x: number, y: number): string[] {
  return names.flatMap((name, i) => [
    `<rect x="${x}" y="${y + i * 18 - 9}" width="12" height="12" fill="${PALETTE[i % PALETTE.length]}"/>`,
    `<text x="${x + 18}" y="${y + i * 18 + 1}">${xmlText(name)}</text>`,
  ]);
}

export interface Series {
  readonly name: string;
  /** One value per category (undefined: not measured). */
  readonly values: readonly (number | undefined)[];
}

/** Lines over categories (e.g. clients): `yLabel` on a linear axis from 0. */
export function lineChart(
  title: string,
  categories: readonly string[],
  xLabel: string,
  yLabel: string,
  series: readonly Series[],
): string {
  const [width, height, left, top, plotW, plotH] = [760, 360, 70, 40, 440, 260];
  const max = Math.max(1, ...series.flatMap((s) => s.values.filter((v): v is number => v !== undefined)));
  const ticks = linearTicks(max);
  const top1 = ticks.at(-1) as number;
  const x = (i: number) =>
    left + (categories.length === 1 ? plotW / 2 : (i * plotW) / (categories.length - 1));
  const y = (v: number) => top + plotH - (v / top1) * plotH;
  const body: string[] = [];
  for (const tick of ticks) {
    body.push(`<line x1="${left}" x2="${left + plotW}" y1="${y(tick)}" y2="${y(tick)}" stroke="#e3e3e3"/>`);
    body.push(`<text x="${left - 6}" y="${y(tick) + 4}" text-anchor="end">${label(tick)}</text>`);
  }
  categories.forEach((category, i) => {
    body.push(`<text x="${x(i)}" y="${top + plotH + 18}" text-anchor="middle">${xmlText(category)}</text>`);
  });
  body.push(
    `<text x="${left + plotW / 2}" y="${top + plotH + 38}" text-anchor="middle">${xmlText(xLabel)}</text>`,
  );
  body.push(
    `<text x="18" y="${top + plotH / 2}" text-anchor="middle" transform="rotate(-90 18 ${top + plotH / 2})">${xmlText(yLabel)}</text>`,
  );
  series.forEach((s, si) => {
    const colour = PALETTE[si % PALETTE.length];
    const points = s.values.flatMap((v, i) =>
      v === undefined ? [] : [`${x(i).toFixed(1)},${y(v).toFixed(1)}`],
    );
    body.push(`<polyline fill="none" stroke="${colour}" stroke-width="2" points="${points.join(' ')}"/>`);
    for (const point of points) {
      const [px, py] = point.split(',');
      body.push(`<circle cx="${px}" cy="${py}" r="3" fill="${colour}"/>`);
    }
  });
  body.push(
    ...legend(
      series.map((s) => s.name),
      left + plotW + 20,
      top + 10,
    ),
  );
  return frame(width, height, title, body);
}

/** Horizontal bars: one group per row, one bar per measure; a log axis when `log`. */
export function barChart(
  title: string,
  rows: readonly { readonly name: string; readonly values: readonly number[] }[],
  measures: readonly string[],
  xLabel: string,
  log: boolean,
): string {
  const bar = 12;
  const group = measures.length * bar + 14;
  const [left, top, plotW] = [230, 40, 420];
  const plotH = rows.length * group;
  const [width, height] = [left + plotW + 140, top + plotH + 50];
  const all = rows.flatMap((r) => r.values).filter((v) => v > 0);
  const min = log ? Math.min(...all) : 0;
  const ticks = log ? logTicks(min, Math.max(...all)) : linearTicks(Math.max(1, ...all));
  const [lo, hi] = [ticks[0] as number, ticks.at(-1) as number];
  const x = (v: number) =>
    left +
    (log ? (Math.log10(Math.max(v, lo)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo)) : v / hi) *
      plotW;
  const body: string[] = [];
  for (const tick of ticks) {
    body.push(`<line x1="${x(tick)}" x2="${x(tick)}" y1="${top}" y2="${top + plotH}" stroke="#e3e3e3"/>`);
    body.push(`<text x="${x(tick)}" y="${top + plotH + 16}" text-anchor="middle">${label(tick)}</text>`);
  }
  body.push(
    `<text x="${left + plotW / 2}" y="${top + plotH + 36}" text-anchor="middle">${xmlText(xLabel)}</text>`,
  );
  rows.forEach((row, ri) => {
    const y0 = top + ri * group + 7;
    body.push(
      `<text x="${left - 8}" y="${y0 + (measures.length * bar) / 2 + 4}" text-anchor="end">${xmlText(row.name)}</text>`,
    );
    row.values.forEach((value, mi) => {
      const y = y0 + mi * bar;
      body.push(
        `<rect x="${left}" y="${y}" width="${Math.max(1, x(value) - left).toFixed(1)}" height="${bar - 2}" fill="${PALETTE[mi % PALETTE.length]}"><title>${xmlText(`${row.name}, ${measures[mi]}: ${label(value)}`)}</title></rect>`,
      );
    });
  });
  body.push(...legend(measures, left + plotW + 20, top + 10));
  return frame(width, height, title, body);
}
