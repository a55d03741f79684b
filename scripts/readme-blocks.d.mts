/** Types for readme-blocks.mjs (plain JavaScript, so that typecheck.mjs runs without a loader). */
export interface ReadmeBlock {
  readonly index: number;
  readonly code: string;
  /** Set when the block's first line is `// not run: <reason>`. */
  readonly notRunReason: string | undefined;
  /** The text of each `// → text` comment: some line of the block's output must contain it. */
  readonly prints: readonly string[];
}
export interface ExampleBlock extends ReadmeBlock {
  /** The document, relative to the repository's root: `README.md`, `docs/api.md`. */
  readonly file: string;
  /** A name for the block's module: `README-03`, `docs-api-01`. */
  readonly id: string;
}
export interface ClientVariant {
  readonly suffix: string;
  readonly client: string;
  readonly code: string;
}
export function exampleFiles(root: string): string[];
export function readmeBlocks(text: string): ReadmeBlock[];
export function exampleBlocks(root: string): ExampleBlock[];
export function clientVariants(code: string): ClientVariant[];
export function asModule(code: string, packageName: string, target: string): string;
