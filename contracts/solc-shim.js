#!/usr/bin/env node
// Make solc-js (the npm `solc` package, pinned in package.json) behave like the native `solc`
// binary for py-solc-x: `--version` prints the version, `--standard-json` reads the JSON input on
// stdin and prints only the JSON output (the `solcjs` script prints an extra non-JSON line).
const solc = require("solc");
const args = process.argv.slice(2);
if (args.includes("--version")) {
  process.stdout.write("solc, the solidity compiler commandline interface\nVersion: " + solc.version() + "\n");
} else if (args.includes("--standard-json")) {
  const chunks = [];
  process.stdin.on("data", (c) => chunks.push(c));
  process.stdin.on("end", () => process.stdout.write(solc.compile(Buffer.concat(chunks).toString("utf8"))));
} else {
  process.stderr.write("solc-shim: only --version and --standard-json are supported\n");
  process.exit(2);
}
