/** Types for readme-blocks.mjs (plain JavaScript, so that check-readme.mjs runs without a loader). */
export interface ReadmeBlock {
  readonly index: number;
  readonly code: string;
  /** Set when the block's first line is `// not run: <reason>`. */
  readonly notRunReason: string | undefined;
}
export function readmeBlocks(readme: string): ReadmeBlock[];
export function asModule(code: string, packageName: string, target: string): string;
