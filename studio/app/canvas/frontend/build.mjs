// Build the component into ../assets (index.html, main.js, main.css) and record SOURCES.sha256,
// the digest of the sources it was built from (the same algorithm as sources_digest() in ../__init__.py).
import { build } from "esbuild";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, rmSync, mkdirSync, writeFileSync, statSync } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const assets = join(here, "..", "assets");
const SOURCES = ["package.json", "package-lock.json", "build.mjs", "tsconfig.json", "src"];

function files(path) {
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path).flatMap((name) => files(join(path, name)));
}

// sha256 over lines "<sha256 of file> <path relative to frontend/, with />\n", sorted by path.
export function sourcesDigest() {
  const paths = SOURCES.flatMap((source) => files(join(here, source)))
    .map((path) => relative(here, path).split(sep).join("/"))
    .sort();
  const lines = paths.map((path) => `${createHash("sha256").update(readFileSync(join(here, path))).digest("hex")} ${path}\n`);
  return createHash("sha256").update(lines.join("")).digest("hex");
}

const HTML = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>flow canvas</title>
    <link rel="stylesheet" href="./main.css" />
  </head>
  <body>
    <div id="root"></div>
    <script src="./main.js"></script>
  </body>
</html>
`;

rmSync(assets, { recursive: true, force: true });
mkdirSync(assets);
await build({
  entryPoints: [join(here, "src", "index.tsx")],
  outfile: join(assets, "main.js"),
  bundle: true,
  minify: true,
  format: "iife",
  target: ["es2020"],
  jsx: "automatic",
  define: { "process.env.NODE_ENV": '"production"' },
  legalComments: "linked",
  logLevel: "info",
});
writeFileSync(join(assets, "index.html"), HTML);
writeFileSync(join(assets, "SOURCES.sha256"), `${sourcesDigest()}\n`);
