#!/usr/bin/env node
// `npm run size`: what a user downloads and installs. Packs the package as it would be published
// (it builds dist/ first, as prepack does) without writing the tarball, and reports its packed and unpacked sizes and
// its largest files.
import { execFileSync } from 'node:child_process';

// The build first (its output would mix with the JSON), then the dry run without scripts.
execFileSync('npm', ['run', 'build', '--silent'], { stdio: 'ignore' });
const [report] = JSON.parse(
  execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts', '--loglevel=error'], {
    encoding: 'utf8',
  }),
);
const kB = (bytes) => `${(bytes / 1024).toFixed(1)} kB`;
console.log(
  `${report.filename}: ${kB(report.size)} packed, ${kB(report.unpackedSize)} unpacked, ${report.entryCount} files`,
);
for (const file of [...report.files].sort((a, b) => b.size - a.size).slice(0, 8)) {
  console.log(`  ${kB(file.size).padStart(9)}  ${file.path}`);
}
